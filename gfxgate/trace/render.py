"""Formatters for trace results: Markdown, JSON, text, and Mermaid / Graphviz graphs.

Each takes a result object and returns a string; none of them does I/O (the CLI writes).
"""

from __future__ import annotations

import re
from enum import Enum

from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, choose
from gfxgate.report.markdown import code, md_escape
from gfxgate.report.text import inert, inert_lines
from gfxgate.trace.model import FOUND, MISSING, EnvSearch, TraceHop, TraceResult


FORMATS = (Format.MD, Format.JSON, Format.TEXT)


class Graph(str, Enum):
    MERMAID = "mermaid"
    DOT = "dot"


def render(result: TraceResult | EnvSearch, fmt: Format | str) -> str:
    fmt = choose(fmt, FORMATS)
    if fmt is Format.JSON:
        return dumps(result.to_json(), sort_keys=False) + "\n"
    if isinstance(result, EnvSearch):
        return env_markdown(result) if fmt is Format.MD else env_text(result)
    return trace_markdown(result) if fmt is Format.MD else trace_text(result)


def render_graph(result: TraceResult | EnvSearch, kind: str) -> str:
    if isinstance(result, EnvSearch):  # the use case refuses --graph with --env first
        raise TypeError("a graph draws an option's hops, not an environment-variable search")
    return mermaid(result) if Graph(kind) is Graph.MERMAID else dot(result)


# -- Markdown ----------------------------------------------------------------------------------------


def _cell(text: str | None) -> str:
    return md_escape(text) if text else "—"


def _code(text: str | None) -> str:
    return code(text, cell=True) if text else "—"


def _sources_line(result) -> str:
    return (
        ", ".join(f"{s.name}@{s.ref}" + (f" ({s.commit[:12]})" if s.commit else "") for s in result.sources)
        or "none readable"
    )


def _sources_md(result) -> str:
    return (
        ", ".join(
            code(f"{s.name}@{s.ref}") + (f" ({md_escape(s.commit[:12])})" if s.commit else "") for s in result.sources
        )
        or "none readable"
    )


def trace_markdown(result: TraceResult) -> str:
    out = [f"# {md_escape(result.title)}", "", f"Sources: {_sources_md(result)}", ""]
    if result.conclusion:
        lead = f"**{md_escape(result.question)}** " if result.question else "**Conclusion:** "
        out += [lead + md_escape(result.conclusion), ""]
    elif result.conclusion_reason:  # one of the two, always (TraceResult refuses neither)
        out += [f"**No conclusion:** {md_escape(result.conclusion_reason)}", ""]
    if result.caution:
        out += [f"> **Caution:** {md_escape(result.caution)}", ""]
    out += ["## Summary", "", "| stage | where | code | meaning |", "|---|---|---|---|"]
    for stage in result.stages:
        if not stage.spec.summary:
            continue
        anchor, documented = stage.anchor, stage.meaning
        if anchor is None:
            out.append(f"| {_cell(stage.spec.title)} | **missing**: {_cell(stage.reason)} | — | — |")
            continue
        status = "" if stage.status == FOUND else " (partial)"
        out.append(
            f"| {_cell(stage.spec.title)}{status} | {_code(str(anchor.location))} | {_code(anchor.code)} | "
            f"{_cell(documented.meaning if documented else None)} |"
        )
    out += [
        "",
        "## All hops",
        "",
        "| # | stage | hop | kind | where | found | meaning |",
        "|---|---|---|---|---|---|---|",
    ]
    for number, hop in enumerate(result.hops, 1):
        if hop.status == MISSING:
            out.append(
                f"| {number} | {_cell(hop.stage)} | {_cell(hop.id)} | {_cell(hop.kind)} | **missing** | "
                f"{_cell(hop.reason)} | — |"
            )
            continue
        found = _code(hop.symbol)
        if hop.via:
            found += f" (via {_cell(hop.via)})"
        if hop.also:
            found += f"; also {len(hop.also)} more: " + ", ".join(_code(str(loc)) for loc in hop.also)
        meaning = f"{_cell(hop.meaning)} ({_cell(hop.meaning_source)})" if hop.meaning else "—"
        if hop.note:
            meaning += f"; link: {_cell(hop.note)}"
        out.append(
            f"| {number} | {_cell(hop.stage)} | {_cell(hop.id)} | {_cell(hop.kind)} | {_code(str(hop.location))} | "
            f"{found} | {meaning} |"
        )
    if result.notes:
        out += ["", "Notes:", *[f"- {md_escape(note)}" for note in result.notes]]
    return "\n".join(out) + "\n"


def trace_text(result: TraceResult) -> str:
    out = [result.title, f"sources: {_sources_line(result)}"]
    out.append(
        f"conclusion: {result.conclusion}" if result.conclusion else f"no conclusion: {result.conclusion_reason}"
    )
    if result.caution:
        out.append(f"caution: {result.caution}")
    for stage in result.stages:
        out.append(f"[{stage.status}] {stage.spec.title}" + (f" (via {stage.via})" if stage.via else ""))
        for hop in stage.hops:
            if hop.status == MISSING:
                out.append(f"    {hop.id}: MISSING: {hop.reason}")
            else:
                out.append(f"    {hop.id}: {hop.location}  {hop.symbol}")
                if hop.meaning:
                    out.append(f"        meaning ({hop.meaning_source}): {hop.meaning}")
    for note in result.notes:
        out.append(f"note: {note}")
    return inert_lines(out)


# -- environment variables ------------------------------------------------------------------------------


def env_markdown(search: EnvSearch) -> str:
    out = [f"# Where {code(search.name)} is read", "", f"Sources: {_sources_md(search)}", ""]
    if not search.reads:
        out += [f"No repository reads {code(search.name)} at these versions.", ""]
    else:
        out += ["| kind | where | function | code | meaning |", "|---|---|---|---|---|"]
        for read in search.reads:
            out.append(
                f"| {_cell(read.kind)} | {_code(str(read.location))} | {_cell(read.function)} | {_code(read.text)} | "
                f"{_cell(read.meaning)} |"
            )
        out.append("")
    used = {r.kind for r in search.reads}
    out += ["Kinds:", *[f"- **{md_escape(k)}**: {md_escape(d)}" for k, d in search.kinds if k in used]] if used else []
    if search.unavailable:
        out += ["", "Not searched:", *[f"- {md_escape(repo)}: {md_escape(why)}" for repo, why in search.unavailable]]
    return "\n".join(out) + "\n"


def env_text(search: EnvSearch) -> str:
    out = [f"{search.name}: {len(search.reads)} read(s); sources: {_sources_line(search)}"]
    for read in search.reads:
        out.append(f"{read.kind:12} {read.location}  {read.text}")
    for repo, why in search.unavailable:
        out.append(f"not searched: {repo}: {why}")
    return inert_lines(out)


# -- graphs ---------------------------------------------------------------------------------------------------


def _node_id(index: int) -> str:
    return f"h{index}"


def _label(hop: TraceHop) -> str:
    """A graph node's two lines, each :func:`inert` (a graph is printed on a terminal too)."""
    if hop.status == MISSING:
        return f"{inert(f'{hop.stage}: {hop.id}')}\n{inert(f'missing: {hop.reason}')}"
    return f"{inert(f'{hop.stage}: {hop.symbol}')}\n{inert(str(hop.location))}"


def _graph_items(result: TraceResult):
    """(node id, label, missing?) per hop plus extra sites, and edges (from, to, dotted?)."""
    nodes, edges = [], []
    previous = None
    for index, hop in enumerate(result.hops):
        node = _node_id(index)
        nodes.append((node, _label(hop), hop.status == MISSING))
        if previous is not None:
            edges.append((previous, node, hop.status == MISSING))
        previous = node
        for extra, loc in enumerate(hop.also):
            other = f"{node}_{extra}"
            nodes.append((other, f"{inert(hop.stage)}: also\n{inert(str(loc))}", False))
            edges.append((node, other, True))
    return nodes, edges


def mermaid(result: TraceResult) -> str:
    def esc(text: str) -> str:
        return re.sub(r'["<>]', "'", text).replace("\n", "<br/>")

    nodes, edges = _graph_items(result)
    out = ["flowchart TD"]
    for node, label, missing in nodes:
        out.append(f'    {node}["{esc(label)}"]' + (":::missing" if missing else ""))
    for a, b, dotted in edges:
        out.append(f"    {a} {'-.->' if dotted else '-->'} {b}")
    out.append("    classDef missing stroke-dasharray: 5 5")
    return "\n".join(out) + "\n"


def dot(result: TraceResult) -> str:
    def esc(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

    nodes, edges = _graph_items(result)
    out = [f'digraph "{esc(inert(result.option))}" {{', "    rankdir=TB;", "    node [shape=box, fontname=monospace];"]
    for node, label, missing in nodes:
        out.append(f'    {node} [label="{esc(label)}"' + (", style=dashed" if missing else "") + "];")
    for a, b, dotted in edges:
        out.append(f"    {a} -> {b}" + (" [style=dotted]" if dotted else "") + ";")
    out.append("}")
    return "\n".join(out) + "\n"
