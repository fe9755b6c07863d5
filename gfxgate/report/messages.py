"""Render the message catalogue check (``gfxgate messages``: each diagnose message checked against the sources)
as Markdown or JSON; no I/O."""

from __future__ import annotations

from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import checked_table, code, md_escape
from gfxgate.serial import document
from gfxgate.report.terminal import markdown_text

SCHEMA_VERSION = 1  # the message-check document's own version (as report/workarounds.py's), not diagnose's


def render_md(checks, *, sources) -> str:
    lines = checked_table("gfxgate message catalogue check", sources, ("Message", "Layer", "State", "Where / why"))
    for c in checks:
        m = c.message
        lines.append(
            f"| {code(m.id, cell=True)} | {md_escape(m.layer or 'fact')} | **{md_escape(c.state)}** | {md_escape(c.summary)} |"
        )
    return "\n".join(lines) + "\n"


def render_json(checks, *, sources) -> str:
    data = document(
        "message-check",
        {
            "sources": [s.to_json() for s in sources],
            "messages": [
                {
                    "id": c.message.id,
                    "family": c.message.family,
                    "kind": c.message.kind,
                    "layer": c.message.layer,
                    "state": c.state,
                    "summary": c.summary,
                    "searched": [
                        {
                            "spec": r.spec.describe(),
                            "where": r.where,
                            "reason": r.reason,
                            "locations": [str(loc) for loc in r.locations],
                        }
                        for r in c.results
                    ],
                }
                for c in checks
            ],
        },
        version=SCHEMA_VERSION,
    )
    return dumps(data) + "\n"


FORMATS = (Format.MD, Format.JSON, Format.TEXT)


def render(checks, fmt: Format | str, *, sources, width: int = 100, color: bool = False) -> str:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.TEXT:
        return markdown_text(render_md(checks, sources=sources), width=width, color=color)
    return (render_json if fmt is Format.JSON else render_md)(checks, sources=sources)
