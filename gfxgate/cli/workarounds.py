"""`gfxgate workarounds`: every documented workaround, checked against the pinned sources."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, os_option, output_option, source_options, terminal


@click.command()
@click.option(
    "-t", "--target", "targets", multiple=True, metavar="TARGET", help="Only workarounds that apply to these targets."
)
@format_option(("md", "json", "text"))
@output_option()
@source_options
@os_option
@click.option(
    "--installed",
    "installed",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    metavar="DIR",
    help="Scanned artifacts: say whether code exists for the target an HSA override selects.",
)
def workarounds(targets, fmt, output, refs, sources, offline, os_name, installed) -> None:
    """The workaround matrix: what each workaround does, what it unblocks, its risk, and live evidence.

    Each entry is checked at the scanned versions: is the variable still read, and where; is the build
    flag still there. An entry whose evidence disappeared is shown as "stale at <tag>".
    """
    from gfxgate.app.workarounds import WorkaroundsRequest
    from gfxgate.app.workarounds import workarounds as run
    from gfxgate.report.workarounds import render
    from gfxgate.sources.resolve import parse_assignments

    result = run(
        WorkaroundsRequest(
            tuple(targets),
            sources=parse_assignments(sources, "--source"),
            refs=parse_assignments(refs, "--ref"),
            offline=offline,
            installed=tuple(installed),
            os=os_name,
        )
    )
    emit(
        render(
            list(result.reports),
            fmt,
            sources=result.sources,
            not_applicable=list(result.not_applicable),
            **(terminal(output) if fmt == "text" else {}),
        ),
        output,
    )
