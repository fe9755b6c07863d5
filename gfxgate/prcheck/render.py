"""Formatters for gate-matrix diffs (Markdown, JSON, text, SARIF). They render; the CLI does the I/O."""

from __future__ import annotations

from typing import Any, Mapping

from gfxgate import jsontext
from gfxgate.prcheck.diff import DRIFT, EVIDENCE, IMPROVEMENT, KINDS, REGRESSION, RESOLVED, MatrixDiff
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import code, md_escape
from gfxgate.report.text import inert_lines
from gfxgate.report.sarif import diff_sarif

KIND_LABELS = {
    REGRESSION: "**regression**",
    DRIFT: "**drift**",
    IMPROVEMENT: "improvement",
    RESOLVED: "resolved",
    EVIDENCE: "evidence moved",
}


def dumps(data: Any) -> str:
    return jsontext.dumps(data) + "\n"


def _sources(sources) -> str:
    parts = [
        code(f"{s['name']}@{s['ref']}") + (f" ({md_escape(s['commit'][:12])})" if s.get("commit") else "")
        for s in sources
    ]
    return ", ".join(parts) or "(none)"


def _status(status: str) -> str:
    return f"**{status}**" if status in ("blocked", "override-required") else md_escape(status)


def _evidence_cell(verdict: Mapping[str, Any]) -> str:
    lines = []
    for e in verdict["evidence"]:
        where = code(e["where"], cell=True) if e.get("where") else "(no location)"
        lines.append(where + (f" {code(e['text'], cell=True)}" if e.get("text") else ""))
    if not lines and verdict.get("reason"):
        lines.append("why: " + md_escape(verdict["reason"]))
    return "<br>".join(lines) or "—"


def _counts_line(counts: Mapping[str, int]) -> str:
    names = {
        REGRESSION: "regression",
        DRIFT: "drift",
        IMPROVEMENT: "improvement",
        RESOLVED: "resolved",
        EVIDENCE: "evidence moved",
    }
    parts = []
    for kind in KINDS:
        n = counts.get(kind, 0)
        label = f"{n} {names[kind]}" + ("s" if n != 1 and kind in (REGRESSION, IMPROVEMENT) else "")
        parts.append(f"**{label}**" if kind in (REGRESSION, DRIFT) and n else label)
    return ", ".join(parts)


# -- diff -----------------------------------------------------------------------------------------------
def diff_markdown(diff: MatrixDiff, *, title: str = "gfxgate diff", failing: tuple[str, ...] = ()) -> str:
    out = [f"# {md_escape(title)}: {md_escape(', '.join(diff.targets)) or '(no common target)'}", ""]
    out.append(f"Old: {_sources(diff.old_sources)}  ")
    out.append(f"New: {_sources(diff.new_sources)}")
    out.append("")
    out.append(_counts_line(diff.counts()) + ".")
    out.append("")
    if failing:
        bad = sorted({c.target for c in diff.regressions(failing)})
        if bad:
            out.append(f"**Failing**: {md_escape(', '.join(bad))} regressed (named in `--fail-on-target`).")
        else:
            out.append(f"No regression for {md_escape(', '.join(failing))} (named in `--fail-on-target`).")
        out.append("")
    flips = [c for c in diff.changes if c.kind != EVIDENCE]
    if flips:
        out += ["| Target | Layer | Change | Old | New |", "|---|---|---|---|---|"]
        for c in flips:
            out.append(
                f"| {md_escape(c.target)} | {md_escape(c.layer_title)} | {KIND_LABELS[c.kind]} | {_status(c.old_status)} | {_status(c.new_status)} |"
            )
        out.append("")
        for c in flips:
            out.append(
                f"## {md_escape(c.target)} — {md_escape(c.layer_title)}: {md_escape(c.old_status)} → {md_escape(c.new_status)} ({c.kind})"
            )
            out.append("")
            old, new = c.to_json()["old"], c.to_json()["new"]
            out += ["| | Old | New |", "|---|---|---|"]
            out.append(f"| status | {_status(old['status'])} | {_status(new['status'])} |")
            out.append(f"| summary | {md_escape(old['summary'], cell=True)} | {md_escape(new['summary'], cell=True)} |")
            out.append(f"| evidence | {_evidence_cell(old)} | {_evidence_cell(new)} |")
            if old["remedy"] or new["remedy"]:
                out.append(f"| remedy | {md_escape(old['remedy'] or '—')} | {md_escape(new['remedy'] or '—')} |")
            if (old["reason"] or new["reason"]) and (old["evidence"] or new["evidence"]):
                out.append(f"| reason | {md_escape(old['reason'] or '—')} | {md_escape(new['reason'] or '—')} |")
            out.append("")
    else:
        out += ["No cell changed status.", ""]
    moved = diff.of_kind(EVIDENCE)
    if moved:
        out += ["## Evidence moved (same status)", ""]
        for c in moved:
            before = ", ".join(code(e["where"]) for e in c.to_json()["old"]["evidence"]) or "—"
            after = ", ".join(code(e["where"]) for e in c.to_json()["new"]["evidence"]) or "—"
            out.append(
                f"- {md_escape(c.target)} / {md_escape(c.layer_title)} ({md_escape(c.new_status)}): {before} → {after}"
            )
        out.append("")
    if diff.notes:
        out += ["## Notes", ""] + [f"- {md_escape(n)}" for n in diff.notes] + [""]
    return "\n".join(out)


def diff_text(diff: MatrixDiff, *, failing: tuple[str, ...] = ()) -> str:
    out = ["gfxgate diff: " + _counts_line(diff.counts()).replace("**", "")]
    for c in diff.changes:
        if c.kind == EVIDENCE:
            continue
        out.append(f"  {c.kind:<12} {c.target:<10} {c.layer:<20} {c.old_status} -> {c.new_status}")
        for side, verdict in (("old", c.to_json()["old"]), ("new", c.to_json()["new"])):
            where = verdict["evidence"][0]["where"] if verdict["evidence"] else (verdict["reason"] or "")
            out.append(f"  {'':<12} {side}: {verdict['summary']} [{where}]")
    if failing and diff.regressions(failing):
        out.append("failing: " + ", ".join(sorted({c.target for c in diff.regressions(failing)})))
    return inert_lines(out)


FORMATS = (Format.MD, Format.JSON, Format.TEXT, Format.SARIF)


def render(
    diff: MatrixDiff,
    fmt: Format | str,
    *,
    failing: tuple[str, ...] = (),
    pins_lines: Mapping[str, int] | None = None,
    pins_uri: str = "rules/pins.toml",
    title: str = "gfxgate diff",
) -> str:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.JSON:
        return dumps(
            {
                **diff.to_json(),
                "fail_on": list(failing),
                "failing": sorted({c.target for c in diff.regressions(failing)}) if failing else [],
            }
        )
    if fmt is Format.SARIF:
        return dumps(diff_sarif(diff, pins_uri=pins_uri, pins_lines=pins_lines or {}))
    if fmt is Format.TEXT:
        return diff_text(diff, failing=failing)
    return diff_markdown(diff, failing=failing, title=title)
