"""Formatters for histories (Markdown, JSON, text). They render; the CLI does the I/O."""

from __future__ import annotations

from typing import Any, Mapping

from gfxgate.history.walk import History, Step
from gfxgate.prcheck.render import KIND_LABELS, _status, dumps
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import code, md_escape
from gfxgate.report.text import inert_lines


def _change(step: Step) -> tuple[str, str, Mapping[str, Any]]:
    """(kind, previous tag, verdict before) of a change: walk.py gives every step after a row's first all three."""
    if step.kind is None or step.previous is None or step.before is None:
        raise ValueError(f"the history step at {step.tag} is a row's first, not a change")
    return step.kind, step.previous, step.before


def _first_where(verdict: Mapping[str, Any]) -> str:
    if verdict["evidence"]:
        e = verdict["evidence"][0]
        more = f" (+{len(verdict['evidence']) - 1})" if len(verdict["evidence"]) > 1 else ""
        return f"{code(e['where'] or '', cell=True) or '(no location)'}{more}"
    return md_escape(verdict.get("reason") or "—")


def history_markdown(h: History) -> str:
    method = "every tag probed" if h.every_tag else "found by bisection"
    pre = "pre-releases included" if h.prereleases else "pre-releases excluded"
    out = [f"# gfxgate history: {md_escape(h.repo)}, {md_escape(', '.join(h.targets))}", ""]
    out.append(
        f"Release tags {md_escape(h.tags[0])} … {md_escape(h.tags[-1])} in version order: {len(h.tags)} tags, {len(h.probed)} probed ({method}; {pre})."
    )
    out.append("")
    out += [
        "| Layer | Target | At tag | Change | Before (tag) | After | Evidence after |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in h.rows:
        first = row.first.verdict
        out.append(
            f"| {md_escape(row.layer.title)} | {md_escape(row.target)} | {md_escape(row.first.tag)} | first | — | {_status(first['status'])} | {_first_where(first)} |"
        )
        for step in row.changes:
            kind, previous, before = _change(step)
            out.append(
                f"| {md_escape(row.layer.title)} | {md_escape(row.target)} | **{md_escape(step.tag)}** | {KIND_LABELS[kind]} | "
                f"{_status(before['status'])} ({md_escape(previous)}) | {_status(step.verdict['status'])} | {_first_where(step.verdict)} |"
            )
    out.append("")
    for row in h.rows:
        if not row.changes:
            continue
        out += [f"## {md_escape(row.layer.title)} — {md_escape(row.target)}", ""]
        for step in row.changes:
            kind, previous, before = _change(step)
            out.append(
                f"- **{md_escape(step.tag)}** ({kind}, after {md_escape(previous)}): "
                f"{md_escape(before['status'])} → {md_escape(step.verdict['status'])}"
            )
            out.append(f"  - before: {md_escape(before['summary'])} — {_first_where(before)}")
            out.append(f"  - after: {md_escape(step.verdict['summary'])} — {_first_where(step.verdict)}")
        out.append("")
    if h.notes:
        shown = list(h.notes[:20])
        out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in shown]
        if len(h.notes) > len(shown):
            out.append(f"- … and {len(h.notes) - len(shown)} more (see --format json)")
        out.append("")
    return "\n".join(out)


def history_text(h: History) -> str:
    out = [f"gfxgate history: {h.repo} {h.tags[0]}..{h.tags[-1]} ({len(h.tags)} tags, {len(h.probed)} probed)"]
    for row in h.rows:
        out.append(f"{row.layer.id} {row.target}: {row.first.verdict['status']} at {row.first.tag}")
        for step in row.changes:
            where = step.verdict["evidence"][0]["where"] if step.verdict["evidence"] else (step.verdict["reason"] or "")
            kind, _, before = _change(step)
            out.append(f"  {step.tag:<12} {kind:<12} {before['status']} -> {step.verdict['status']}  {where}")
    return inert_lines(out)


FORMATS = (Format.MD, Format.JSON, Format.TEXT)


def render(h: History, fmt: Format | str) -> str:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.JSON:
        return dumps(h.to_json())
    if fmt is Format.TEXT:
        return history_text(h)
    return history_markdown(h)
