"""`gfxgate timeline`: every target × every release — the route at each, as a table, JSON, SVG or PNG."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, os_option, output_option, source_options, terminal
from gfxgate.cli.io import echo  # message lines: their controls made visible


@click.command()
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="GPU target; repeatable or comma-separated (default: every target a rule names).",
)
@click.option("--from", "first", metavar="TAG", help="First release (default: the oldest).")
@click.option("--to", "last", metavar="TAG", help="Last release (default: the newest).")
@format_option(("md", "json", "text", "svg", "png"))
@output_option()
@click.option("--live", is_flag=True, help="Recompute from the release tags instead of the embedded timeline snapshot.")
@source_options(refs=False, note="implies --live")
@os_option
@click.option("--prereleases", is_flag=True, help="Include pre-release tags (implies --live).")
@click.option("--every-tag", is_flag=True, help="Probe every release instead of bisecting (implies --live).")
@click.option(
    "-v",
    "--verbose",
    is_flag=True,
    help="List every rule and release whose source could not be read (Markdown and stderr; JSON always has them).",
)
def timeline(
    targets, first, last, fmt, output, live, sources, offline, os_name, prereleases, every_tag, verbose
) -> None:
    """The support timeline: per target and release, the shortest route (ROCm out of the box, override, build +
    rocBLAS files, Vulkan, CPU), the flips between with their evidence, and each target's answer sentence.

    Without --live the default targets and releases come from the embedded timeline snapshot (offline);
    --live walks the ollama release tags with the same rules and facts cache as `gfxgate history`.
    """
    import contextlib

    from gfxgate.app.timeline import TimelineRequest
    from gfxgate.app.timeline import timeline as run
    from gfxgate.cli.common import probe_progress, stdout_is_terminal
    from gfxgate.errors import UsageError
    from gfxgate.sources.resolve import parse_assignments
    from gfxgate.timeline.render import render

    if fmt == "png" and output is None and stdout_is_terminal():
        raise UsageError("a PNG is binary: write it with -o FILE (or redirect stdout)")
    live = live or bool(sources) or prereleases or every_tag
    with probe_progress("timeline of ollama") if live else contextlib.nullcontext() as on_probe:
        done = run(
            TimelineRequest(
                tuple(targets),
                first,
                last,
                live,
                parse_assignments(sources, "--source"),
                offline,
                prereleases,
                every_tag,
                on_probe,
                os_name,
            )
        )
    if done.cache_warning:
        click.echo(f"gfxgate: warning: {done.cache_warning}", err=True)
    result = done.result
    emit(render(result, fmt, verbose=verbose, **(terminal(output) if fmt == "text" else {})), output)
    cells = sum(len(r.cells) for r in result.rows)
    echo(
        f"gfxgate: {len(result.targets)} targets, {len(result.tags)} releases, {result.probed} probed, {cells} cells"
        f" ({result.origin})",
        err=True,
    )
    report_unreadable(result, verbose)


def report_unreadable(result, verbose: bool) -> None:
    """One stderr line per source that could not be read (count, releases, rules, how to supply it); every
    rule and release with --verbose."""
    for missing in result.missing_sources():
        echo(f"gfxgate: note: {missing.line}", err=True)
    if verbose:
        for u in result.unreadable:
            echo(f"gfxgate: note: {u.tag} {u.rule}: {u.reason}", err=True)
