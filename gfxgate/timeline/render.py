"""Timeline formatters: Markdown and JSON return text, SVG text, PNG bytes; the CLI writes them."""

from __future__ import annotations

from gfxgate.jsontext import dumps
from gfxgate.report.markdown import md_escape as _md_cell
from gfxgate.timeline.model import Timeline

FORMATS = ("md", "json", "svg", "png")


def render_md(timeline: Timeline) -> str:
    from gfxgate.timeline.sentence import answer

    tags = timeline.tags
    columns = timeline.columns()
    if timeline.method == "every-tag":
        how = "every release probed"
    elif timeline.origin == "snapshot":
        how = f"the snapshot probed {timeline.probed} releases of its range and bisected the rest"
    else:
        how = f"{timeline.probed} probed, the rest bisected"
    origin = ("from the embedded timeline snapshot (`--live` recomputes)" if timeline.origin == "snapshot"
              else "computed from the release tags")
    out = [
        f"# Support timeline: {timeline.repo} {tags[0]} … {tags[-1]}",
        "",
        f"{len(tags)} releases ({how}), {origin}. Each cell is the shortest route (`rules/routes.yaml`) over the releases"
        " of its column; \"(?)\" marks an answer that a shorter, undecided route could change.",
        "",
        "| Target | " + " | ".join(a if a == b else f"{a} – {b}" for a, b in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row in timeline.rows:
        cells = []
        for a, _ in columns:
            c = timeline.cell_at(row.target, a)
            cells.append(_md_cell(c.label + ("" if c.certain or c.route == "undecided" else " (?)")))
        out.append(f"| {row.target} | " + " | ".join(cells) + " |")
    out += ["", "## The answer, per target", ""]
    for row in timeline.rows:
        ans = answer(timeline, row.target)
        out.append(f"### {row.target}")
        out.append("")
        out.append(ans.sentence)
        out.append("")
        for clause in ans.clauses:
            wheres = ", ".join(f"[`{e.where}`]({e.url})" if e.url else f"`{e.where}`" for e in clause.evidence[:4]) or "no evidence line"
            out.append(f"- {_md_cell(clause.text)} — {wheres}")
        out.append("")
        out.append("| Releases | Route | Flips that start it |")
        out.append("|---|---|---|")
        for c in row.cells:
            span = c.first if c.first == c.last else f"{c.first} – {c.last}"
            flips = "; ".join(
                f"{f.layer} {f.old} → {f.new}" + (f" (`{f.evidence[0].where}`)" if f.evidence else f" ({f.reason})")
                for f in c.start) or "—"
            label = c.label + ("" if c.certain or c.route == "undecided" else " (?)")
            out.append(f"| {span} ({c.tags}) | {_md_cell(label)} | {_md_cell(flips)} |")
        out.append("")
    if timeline.notes:
        out += ["## Notes", ""] + [f"- {_md_cell(n)}" for n in timeline.notes] + [""]
    return "\n".join(out)


def render_json(timeline: Timeline) -> str:
    return dumps(timeline.to_json()) + "\n"


def render(timeline: Timeline, fmt: str) -> str | bytes:
    if fmt == "md":
        return render_md(timeline)
    if fmt == "json":
        return render_json(timeline)
    from gfxgate.timeline import figure

    if fmt == "svg":
        return figure.render_svg(timeline)
    if fmt == "png":
        return figure.render_png(timeline)
    raise ValueError(f"unknown format {fmt!r}")
