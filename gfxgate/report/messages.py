"""Render the message catalogue check (``gfxgate messages``: each diagnose message checked against the sources)
as Markdown or JSON; no I/O."""

from __future__ import annotations

from gfxgate.diagnose.model import JSON_SCHEMA_VERSION
from gfxgate.jsontext import dumps
from gfxgate.report.markdown import checked_table, code, md_escape


def render_md(checks, *, sources) -> str:
    lines = checked_table("gfxgate message catalogue check", sources, ("Message", "Layer", "State", "Where / why"))
    for c in checks:
        m = c.message
        lines.append(f"| {code(m.id, cell=True)} | {md_escape(m.layer or 'fact')} | **{md_escape(c.state)}** | {md_escape(c.summary)} |")
    return "\n".join(lines) + "\n"


def render_json(checks, *, sources) -> str:
    data = {
        "schema_version": JSON_SCHEMA_VERSION,
        "kind": "message-check",
        "sources": [s.to_json() for s in sources],
        "messages": [
            {"id": c.message.id, "family": c.message.family, "kind": c.message.kind, "layer": c.message.layer,
             "state": c.state, "summary": c.summary,
             "searched": [{"spec": r.spec.describe(), "where": r.where, "reason": r.reason,
                           "locations": [str(loc) for loc in r.locations]} for r in c.results]}
            for c in checks
        ],
    }
    return dumps(data) + "\n"


def render(checks, fmt: str, *, sources) -> str:
    return (render_json if fmt == "json" else render_md)(checks, sources=sources)
