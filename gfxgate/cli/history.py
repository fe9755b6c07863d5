"""`gfxgate history --target T…`: the release tags at which each layer's status changed."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, os_option, output_option, source_options, terminal_text


@click.command()
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    required=True,
    help="GPU target; repeatable or comma-separated.",
)
@click.option(
    "--repo", default="ollama", show_default=True, help="The pinned repository whose release tags are walked."
)
@click.option("--from", "first", metavar="TAG", help="First release tag (default: the oldest).")
@click.option("--to", "last", metavar="TAG", help="Last release tag (default: the newest).")
@click.option("--layer", "layers", multiple=True, metavar="LAYER", help="Only these layers (repeatable).")
@click.option("--prereleases", is_flag=True, help="Include pre-release tags (-rc1 …) in the walk.")
@click.option(
    "--every-tag", is_flag=True, help="Probe every tag instead of bisecting (slower; sees changes that revert)."
)
@source_options(refs=False)
@os_option
@format_option(("md", "json", "text"))
@output_option()
def history(targets, repo, first, last, layers, prereleases, every_tag, sources, offline, os_name, fmt, output) -> None:
    """Walk REPO's release tags in version order and report where each layer flipped, with evidence.

    Files are read at each probed tag from the git object database (no checkout); tags are
    bisected, and facts are cached per (rule, commit, tag) so later runs re-parse nothing.
    """
    from gfxgate.app.history import HistoryRequest
    from gfxgate.app.history import history as run
    from gfxgate.cli.common import probe_progress
    from gfxgate.history.render import render
    from gfxgate.sources.resolve import parse_assignments

    with probe_progress(f"history of {repo}") as on_probe:
        done = run(
            HistoryRequest(
                tuple(targets),
                repo,
                first,
                last,
                tuple(layers),
                prereleases,
                every_tag,
                parse_assignments(sources, "--source"),
                offline,
                on_probe,
                os_name,
            )
        )
    result = done.result
    emit(terminal_text(render(result, fmt), fmt, output), output)
    if done.cache_warning:
        click.echo(f"gfxgate: warning: {done.cache_warning}", err=True)
    flips = sum(len(row.changes) for row in result.rows)
    click.echo(f"gfxgate: {len(result.tags)} tags, {len(result.probed)} probed, {flips} change(s)", err=True)
