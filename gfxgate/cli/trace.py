"""`gfxgate trace PARAM` / `gfxgate trace --env NAME`: follow an option or an environment variable."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option, require_source, source_options, terminal_text


@click.command()
@click.argument("param", required=False)
@click.option("--env", "env_name", metavar="NAME", help="List where each repository reads this environment variable.")
@format_option(("md", "json", "text"))
@click.option("--graph", type=click.Choice(["mermaid", "dot"]), default=None,
              help="Print every hop found as a Mermaid or Graphviz graph instead of the report.")
@output_option()
@source_options
@click.option("--rules", "rules_root", type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Read trace rules from this folder instead of the shipped rules/traces.")
def trace(param, env_name, fmt, graph, output, refs, sources, offline, rules_root) -> None:
    """Follow PARAM (num_gpu, num_ctx, …) from the Python client through Ollama into llama.cpp.

    Every hop is located at the scanned versions (--ref NAME=TAG); a hop that cannot be found is
    reported missing with its reason. The conclusion quotes the sink's own documentation.
    """
    from gfxgate.errors import UsageError
    from gfxgate.sources.resolve import SourceSet, load_pins, parse_assignments
    from gfxgate.trace import load_trace_rules, search_env, trace_option
    from gfxgate.trace.render import render, render_graph

    if bool(param) == bool(env_name):
        raise UsageError("name either an option or --env NAME", hint="e.g. gfxgate trace num_gpu, gfxgate trace --env HSA_OVERRIDE_GFX_VERSION")
    if env_name and graph:
        raise UsageError("--graph draws an option's hops; it does not apply to --env")
    pins = load_pins()
    rules = load_trace_rules(rules_root, known_repos=set(pins.sources) | set(pins.layouts))
    if param and param not in rules.traces:  # a usage error, before any source is opened
        from gfxgate.suggest import did_you_mean, known_names

        known = known_names(rules.traces)
        raise UsageError(f"no trace rule for {param!r}", hint=did_you_mean(param, rules.traces, then=known, otherwise=known))
    sourceset = SourceSet(pins, sources=parse_assignments(sources, "--source"), refs=parse_assignments(refs, "--ref"),
                          offline=offline)
    try:
        # a version or location the user named must exist: fail clearly (exit 4/5) instead of
        # tracing with every hop of that repository missing
        for name in dict.fromkeys([*parse_assignments(refs, "--ref"), *parse_assignments(sources, "--source")]):
            sourceset.get(name)
        # every repository the trace reads must open: without one the hops after it are missing for no reason
        # of the code, and the answer would come from nothing (exit 5 naming the --source to give)
        if env_name:
            if rules.env is None:  # a --rules folder without one (search_env would take the shipped rule instead)
                raise UsageError("no environment-variable search rule (rules/traces/*.yaml with an env: section)")
            needed = rules.env.repos
        else:
            needed = tuple(rules.traces[param].repos) if param in rules.traces else ()
        for name in needed:
            require_source(sourceset, name, "trace")
        if env_name:
            text = render(search_env(sourceset, env_name, rule=rules.env), fmt)
        else:
            result = trace_option(rules.traces[param], sourceset)
            text = render_graph(result, graph) if graph else render(result, fmt)
    finally:
        sourceset.close()
    emit(terminal_text(text, fmt, output), output)
