"""Formatters of a :class:`FleetReport` (md, json, text): one table, node x GPU x backend x verdict x blocking layers
x fix, the nodes that did not answer among its rows. No I/O: the CLI writes."""

from __future__ import annotations

from gfxgate.fleet.model import FleetReport, Row
from gfxgate.report.formats import Format, Formatter, choose
from gfxgate.report.markdown import md_escape
from gfxgate.report.text import inert_lines
from gfxgate.jsontext import dumps
from gfxgate.serial import document

HEADER = ("node", "GPU", "backend", "verdict", "blocking layer", "fix")


def _cells(row: Row) -> tuple[str, ...]:
    return (row.node, row.gpu, row.backend, row.state, ", ".join(row.blocking) or "-", row.fix)


def _summary(report: FleetReport) -> str:
    answered = sum(1 for n in report.nodes if n.answered)
    words = f"{answered} of {len(report.nodes)} node(s) answered"
    if report.missing:
        words += f"; did not answer: {', '.join(report.missing)}"
    if report.failed:
        words += f"; doctor failed on: {', '.join(report.failed)}"
    if report.jobs:
        words += f" (job {', '.join(report.jobs)})"
    return words


def render_md(report: FleetReport) -> str:
    out = [
        "## gfxgate fleet report",
        "",
        md_escape(_summary(report)),
        "",
        "| " + " | ".join(HEADER) + " |",
        "|" + "---|" * len(HEADER),
    ]
    for row in report.rows:
        out.append("| " + " | ".join(md_escape(c, cell=True) for c in _cells(row)) + " |")
    return "\n".join(out) + "\n"


def render_text(report: FleetReport) -> str:
    rows = [HEADER, *(_cells(r) for r in report.rows)]
    widths = [min(40, max(len(r[i]) for r in rows)) for i in range(len(HEADER) - 1)]
    lines = ["gfxgate fleet report", _summary(report), ""]
    for r in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1])
    return inert_lines(lines)


def render_json(report: FleetReport) -> str:
    body = report.to_json()
    body["missing"] = list(report.missing)
    return dumps(document("fleet-report", body), ensure_ascii=True) + "\n"


FORMATS = (Format.MD, Format.JSON, Format.TEXT)
FORMATTERS: dict[Format, Formatter[FleetReport]] = {
    Format.MD: render_md,
    Format.JSON: render_json,
    Format.TEXT: render_text,
}


def render(report: FleetReport, fmt: Format | str) -> str:
    return FORMATTERS[choose(fmt, FORMATS)](report)
