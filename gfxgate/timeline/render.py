"""Timeline formatters: Markdown and JSON return text, SVG text, PNG bytes; the CLI writes them."""

from __future__ import annotations

from typing import Literal, overload

from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import code, link, md_escape as _md_cell
from gfxgate.timeline.model import Ev, Timeline
from gfxgate.timeline.sentence import answer, timeline_json
from gfxgate.timeline import figure
from gfxgate.report.terminal import markdown_text

FORMATS = (Format.MD, Format.JSON, Format.TEXT, Format.SVG, Format.PNG)


def render_md(timeline: Timeline, *, verbose: bool = False) -> str:
    tags = timeline.tags
    columns = timeline.columns()
    if timeline.method == "every-tag":
        how = "every release probed"
    elif timeline.origin == "snapshot":
        how = f"the snapshot probed {timeline.probed} releases of its range and bisected the rest"
    else:
        how = f"{timeline.probed} probed, the rest bisected"
    origin = (
        "from the embedded timeline snapshot (`--live` recomputes)"
        if timeline.origin == "snapshot"
        else "computed from the release tags"
    )
    out = [
        f"# Support timeline: {_md_cell(timeline.repo)} {_md_cell(tags[0])} … {_md_cell(tags[-1])}"
        + (f" ({_md_cell(timeline.os.capitalize())} release)" if timeline.os != "linux" else ""),
        "",
        f"{len(tags)} releases ({how}), {origin}. Each cell is the shortest route (`rules/routes.yaml`) over the releases"
        ' of its column; "(?)" marks an answer that a shorter, undecided route could change.',
        "",
        "| Target | " + " | ".join(_md_cell(a if a == b else f"{a} – {b}") for a, b in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in timeline.rows:
        cells = []
        for a, _ in columns:
            c = timeline.cell_at(row.target, a)
            cells.append(_md_cell(c.label + ("" if c.certain or c.route == "undecided" else " (?)")))
        out.append(f"| {_md_cell(row.target)} | " + " | ".join(cells) + " |")
    out += ["", "## The answer, per target", ""]
    for row in timeline.rows:
        ans = answer(timeline, row.target)
        out.append(f"### {_md_cell(row.target)}")
        out.append("")
        out.append(_md_cell(ans.sentence))
        out.append("")
        for clause in ans.clauses:
            first: dict[str, Ev] = {}  # one link per line
            for e in clause.evidence:
                first.setdefault(e.where, e)
            shown = list(first.values())[:4]
            wheres = (
                ", ".join(link(code(e.where), e.url) if e.url else code(e.where) for e in shown) or "no evidence line"
            )
            out.append(f"- {_md_cell(clause.text)} — {wheres}")
        out.append("")
        out.append("| Releases | Route | Flips that start it |")
        out.append("|---|---|---|")
        for c in row.cells:
            span = _md_cell(c.first if c.first == c.last else f"{c.first} – {c.last}")
            flips = (
                "; ".join(
                    _md_cell(f.change)
                    + (f" ({_md_cell(_short(f.reason))})" if f.reason else f" ({code(f.evidence[0].where, cell=True)})")
                    for f in c.start
                )
                or "—"
            )
            label = c.label + ("" if c.certain or c.route == "undecided" else " (?)")
            if c.route == "undecided" and c.reason:  # an honest unknown says which layer it could not read, and why
                label += f": {_short(c.reason)}"
            out.append(f"| {span} ({c.tags}) | {_md_cell(label, cell=True)} | {flips} |")
        out.append("")
        docs = [note for c in row.cells for note in c.docs]
        if docs:  # Ollama's docs against the release (each note names the release it was read at)
            out += (
                ["Where Ollama's docs and the release disagree:", ""] + [f"- {_md_cell(note)}" for note in docs] + [""]
            )
    missing = timeline.missing_sources()
    if missing:
        out += [
            "## Sources that could not be read",
            "",
            "Rules that read them are *unknown* at those releases (never guessed); `--verbose` lists every rule and"
            " release, the JSON has them under `unreadable`.",
            "",
        ]
        out += [f"- {_md_cell(m.line)}" for m in missing] + [""]
        if verbose:
            out += [f"  - {_md_cell(u.tag)} {_md_cell(u.rule)}: {_md_cell(u.reason)}" for u in timeline.unreadable] + [
                ""
            ]
    if timeline.notes:
        out += ["## Notes", ""] + [f"- {_md_cell(n)}" for n in timeline.notes] + [""]
    return "\n".join(out)


def _short(reason: str, limit: int = 240) -> str:
    """The first reason of a "; "-joined list, cut to ``limit`` characters (the JSON has all of it)."""
    first = reason.split("; ")[0]
    return first if len(first) <= limit else first[: limit - 1] + "…"


def render_json(timeline: Timeline) -> str:
    return dumps(timeline_json(timeline)) + "\n"


@overload
def render(
    timeline: Timeline, fmt: Literal["png"], *, verbose: bool = False, width: int = 100, color: bool = False
) -> bytes: ...


@overload
def render(
    timeline: Timeline,
    fmt: Literal["md", "text", "json", "svg"],
    *,
    verbose: bool = False,
    width: int = 100,
    color: bool = False,
) -> str: ...


@overload
def render(
    timeline: Timeline, fmt: str, *, verbose: bool = False, width: int = 100, color: bool = False
) -> str | bytes: ...


def render(
    timeline: Timeline, fmt: Format | str, *, verbose: bool = False, width: int = 100, color: bool = False
) -> str | bytes:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.MD:
        return render_md(timeline, verbose=verbose)
    if fmt is Format.TEXT:
        return markdown_text(render_md(timeline, verbose=verbose), width=width, color=color)
    if fmt is Format.JSON:
        return render_json(timeline)

    if fmt is Format.SVG:
        return figure.render_svg(timeline)
    return figure.render_png(timeline)
