"""Markdown gate matrix: a summary table, then every cell's evidence, the answer and the notes."""

from __future__ import annotations

from gfxgate.gate.matrix import GateMatrix
from gfxgate.model import Status

LABELS = {
    Status.BLOCKED: "**blocked**",
    Status.OVERRIDE_REQUIRED: "**override-required**",
    Status.PARTIAL: "partial",
    Status.ALLOWED: "allowed",
    Status.UNKNOWN: "unknown",
    Status.NOT_SCANNED: "not scanned",
    Status.NOT_MEASURED: "not measured",
}


def md_escape(text: str) -> str:
    """Make text safe inside a Markdown table cell (backslashes, pipes, newlines): the one escaper."""
    return (text or "").replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def code(text: str, *, cell: bool = False) -> str:
    """``text`` as one inline code span (a longer fence when it holds a backtick); ``cell``: inside a table row."""
    text = (text or "").replace("\n", " ")
    if cell:
        text = text.replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}" if text else ""


def checked_table(title: str, sources, header: tuple[str, ...]) -> list[str]:
    """The head of a checked-against-the-sources report (workarounds, messages): its title, the refs it was
    checked at, and the header of its table."""
    lines = [f"# {title}", ""]
    if sources:
        lines += ["Checked at " + ", ".join(f"`{s.name}@{s.ref}`" for s in sources) + ".", ""]
    return lines + ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]


def answer_cell(route) -> str:
    """The route in a few words for the summary table; "?" marks an answer a shorter undecided route could change."""
    if route is None:
        return ""
    text = f"**{route.label}**" if route.best else "undecided"
    if route.best and not route.certain:
        text += " (?)"
    others = [b.option.label for b in route.backends if b.option and b.option is not route.best and b.backend != "cpu"]
    if others and route.best is not None:
        text += "; or " + "; or ".join(others)
    if route.runtime:
        text += f", run {route.runtime.outcome}"
    return md_escape(text)


_STATUSES = """Statuses: *allowed* — this layer lets the target through; *blocked* — it stops the target; *override-required* —
only with an explicit override (build flag, environment variable); *partial* — only in some configurations;
*unknown* — the evidence could not decide (the reason is given); *not scanned* / *not measured* — no input for
this layer was given.
"""

_ANSWER = """## The answer

Can the target run at this version, on which backend, and by which shortest route? Routes come from `rules/routes.yaml`
over the layers above; every step is a workaround from `rules/workarounds.yaml` with the evidence of the cells it covers.
"""

_NO_REASON = (Status.UNKNOWN, Status.NOT_SCANNED, Status.NOT_MEASURED)


def render(matrix: GateMatrix) -> str:
    """The summary table (one row per layer, then the answer), every cell's evidence, the routes, the notes."""
    m, out = matrix, []
    w = out.append
    w(f"# gfxgate gate matrix: {', '.join(map(str, m.targets))}\n\n")
    if m.sources:
        w("Sources: " + ", ".join(f"`{s.name}@{s.ref}`" + (f" ({s.commit[:12]})" if s.commit else "")
                                  for s in m.sources) + ".\n")
    w("\n| Layer | " + "".join(f"{t} | " for t in m.targets) + "\n")
    w("|---|" + "---|" * len(m.targets) + "\n")
    for layer in m.layers:
        w(f"| {md_escape(layer.title)} | "
          + "".join(f"{LABELS[v.status]}: {md_escape(v.summary)} | " for v in m.row(layer.id)) + "\n")
    if m.routes:
        w("| **The answer** | " + "".join(f"{answer_cell(m.route(t))} | " for t in m.targets) + "\n")
    w("\n" + _STATUSES + "\n")
    for layer in m.layers:
        w(f"## {layer.title}\n\n{layer.question}\n\n")
        for v in m.row(layer.id):
            w(f"### {v.target}: {LABELS[v.status]}\n\n{v.summary}\n\n")
            for e in v.evidence:
                w("- " + (f"`{e.location}`" if e.location else "(no location)")
                  + (f" — {code(e.text)}" if e.text else "") + (f" ({e.note})" if e.note else "") + f" [{e.source}]\n")
            if v.remedy:
                w(f"\nRemedy: {v.remedy}\n")
            if v.reason:
                w(f"\n{'Why: ' if v.status in _NO_REASON else 'Also checked: '}{v.reason}\n")
            if v.workarounds:
                w(f"\nWorkarounds: {', '.join(map(str, v.workarounds))}\n")
            w("\n")
    if m.routes:
        w(_ANSWER + "\n")
        for r in m.routes:
            w(f"### {r.target}: {r.label}" + (" (uncertain)" if not r.certain and r.best else "") + "\n\n")
            w(f"{r.sentence}\n\n")
            for b in r.backends:
                if b.option:
                    o = b.option
                    w(f"- **{o.label}**" + (f" (runs as {o.override_target})" if o.override_target else "") + "\n")
                    for s in o.steps:
                        w(f"  - step `{s.setting}` ({s.workaround}), covers {', '.join(map(str, s.covers))}: "
                          + ", ".join(f"`{e.location}`" if e.location else "" for e in s.evidence)
                          + (f"; {'' if s.check.state == 'not checked' else 'checked: '}{s.check.state} — {s.check.summary}" if s.check else "") + "\n")
                    for done in o.satisfied:
                        w(f"  - already done: {done.workaround} — the installed tree's {done.layer} row is allowed: "
                          + ", ".join(f"`{e.location}`" if e.location else e.source for e in done.evidence[:3]) + "\n")
                    w("  - evidence: " + ", ".join(f"`{e.location}`" if e.location else f"{e.source}"
                                                   for e in o.evidence) + "\n")
                elif b.state == "undecided":
                    w(f"- **{b.title}**: undecided — {'; '.join(map(str, b.undecided))}\n")
                else:
                    w(f"- **{b.title}**: no route — {'; '.join(map(str, b.refused))}\n")
            if r.runtime:
                w(f"- **Runtime**: {r.runtime.outcome} — {r.runtime.summary}"
                  + "".join(f" [{e.source}]" for e in r.runtime.evidence) + "\n")
            w("\n")
    if m.notes:
        w("## Notes\n\n" + "".join(f"- {n}\n" for n in m.notes))
    return "".join(out)
