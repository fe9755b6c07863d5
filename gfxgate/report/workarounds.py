"""Render the workaround matrix (a list of WorkaroundReport) as Markdown or JSON; no I/O."""

from __future__ import annotations


from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import checked_table, code, md_escape
from gfxgate.serial import document
from gfxgate.report.terminal import markdown_text

SCHEMA_VERSION = 1


def render_json(reports, *, sources, not_applicable=()) -> str:
    data = document(
        "workarounds",
        {
            "sources": [s.to_json() for s in sources],
            "workarounds": [r.to_json() for r in reports],
            "not_applicable": [{"id": w.id, "exists_in": w.exists_in.describe()} for w in not_applicable],
        },
        version=SCHEMA_VERSION,
    )
    return dumps(data) + "\n"


def render_md(reports, *, sources, not_applicable=()) -> str:
    lines = checked_table("gfxgate workaround matrix", sources, ("Workaround", "Unblocks", "State", "Evidence"))
    for r in reports:
        w = r.workaround
        lines.append(
            f"| {code(w.setting, cell=True)} | {md_escape(', '.join(w.unblocks) or '—')} | **{md_escape(r.state)}** | {md_escape(r.summary)} |"
        )
    if not_applicable:
        lines += [
            "",
            "Not applicable at these versions (not checked): "
            + "; ".join(f"{code(w.id)} exists in {md_escape(w.exists_in.describe())} only" for w in not_applicable)
            + ".",
        ]
    for r in reports:
        w = r.workaround
        lines += [
            "",
            f"## {md_escape(w.title)}",
            "",
            f"- setting: {code(w.setting)}" + (f" (for {md_escape(str(w.era))})" if w.era else ""),
            f"- what: {md_escape(w.what)}",
            f"- addresses: {md_escape(w.addresses)}",
            f"- unblocks: {md_escape(', '.join(w.unblocks)) or '—'}",
            f"- risk: {md_escape(w.risk)}",
        ]
        if w.applies_to:
            lines.append(f"- applies to: {md_escape(', '.join(w.applies_to))}")
        if r.override_target:
            lines.append(
                f"- selects: {md_escape(r.override_target)}"
                + (f" — {md_escape(r.override_code)}" if r.override_code else "")
            )
        lines.append(f"- state: **{md_escape(r.state)}** — {md_escape(r.summary)}")
        for res in r.results:
            if res.reason:
                lines.append(f"  - {md_escape(res.check.describe())}: {md_escape(res.reason)}")
            elif not res.evidence:
                lines.append(f"  - {md_escape(res.check.describe())}: not found at {md_escape(res.where)}")
            for e in res.evidence:
                lines.append(
                    f"  - {code(str(e.location))} — {code(e.text)}" + (f" ({md_escape(e.note)})" if e.note else "")
                )
    return "\n".join(lines) + "\n"


FORMATS = (Format.MD, Format.JSON, Format.TEXT)


def render(reports, fmt: Format | str, *, sources, not_applicable=(), width: int = 100, color: bool = False) -> str:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.TEXT:
        return markdown_text(
            render_md(reports, sources=sources, not_applicable=not_applicable), width=width, color=color
        )
    return (render_json if fmt is Format.JSON else render_md)(reports, sources=sources, not_applicable=not_applicable)
