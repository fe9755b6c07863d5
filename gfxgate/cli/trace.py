"""`gfxgate trace PARAM` / `gfxgate trace --env NAME`: follow an option or an environment variable."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option, source_options, terminal_text


@click.command()
@click.argument("param", required=False)
@click.option("--env", "env_name", metavar="NAME", help="List where each repository reads this environment variable.")
@format_option(("md", "json", "text"))
@click.option(
    "--graph",
    type=click.Choice(["mermaid", "dot"]),
    default=None,
    help="Print every hop found as a Mermaid or Graphviz graph instead of the report.",
)
@output_option()
@source_options
@click.option(
    "--rules",
    "rules_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Read trace rules from this folder instead of the shipped rules/traces.",
)
def trace(param, env_name, fmt, graph, output, refs, sources, offline, rules_root) -> None:
    """Follow PARAM (num_gpu, num_ctx, …) from the Python client through Ollama into llama.cpp.

    Every hop is located at the scanned versions (--ref NAME=TAG); a hop that cannot be found is
    reported missing with its reason. The conclusion quotes the sink's own documentation.
    """
    from gfxgate.app.trace import TraceRequest
    from gfxgate.app.trace import trace as run
    from gfxgate.sources.resolve import parse_assignments
    from gfxgate.trace.render import render, render_graph

    result = run(
        TraceRequest(
            param,
            env_name,
            graph,
            sources=parse_assignments(sources, "--source"),
            refs=parse_assignments(refs, "--ref"),
            offline=offline,
            rules_root=rules_root,
        )
    )
    text = render_graph(result, graph) if graph else render(result, fmt)
    emit(terminal_text(text, fmt, output), output)
