"""`gfxgate diff OLD.json NEW.json`: what flipped between two gate matrices.

Exit codes: 0 no regression of a target named in --fail-on-target (whatever else changed); 1 a target
named in --fail-on-target regressed (allowed → blocked, partial → override-required …); 2 usage error
(bad option, a --fail-on-target target in neither report); 6 an input file is unreadable or not a gate matrix.
"""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, fail_on_option, format_option, os_option, output_option, report_exit, terminal_text

DIFF_FORMATS = ("md", "json", "sarif", "text")


@click.command()
@click.argument("old", type=click.Path(path_type=Path))  # read by load_matrix: a folder, FIFO or device is exit 6
@click.argument("new", type=click.Path(path_type=Path))
@format_option(DIFF_FORMATS)
@output_option()
@fail_on_option("target", "TARGET", "Exit 1 when one of these targets regressed (repeatable or comma-separated).")
@click.option(
    "--pins",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Pins file the SARIF locations point at (default: rules/pins.toml of this repository).",
)
@os_option(default=None, help="Refuse matrices that do not answer for this OS (default: any, the same on both sides).")
def diff(old, new, fmt, output, fail_on, pins, os_name) -> None:
    """Compare two `gfxgate scan --format json` reports: regressions, drift, improvements, with both evidences.

    Exit 0 unless a target named in --fail-on-target regressed (1); 2 usage error; 6 unreadable input.
    """
    from gfxgate.app.diff import DiffRequest
    from gfxgate.app.diff import diff as run
    from gfxgate.prcheck.render import render

    result = run(DiffRequest(old, new, tuple(fail_on), pins, locate_pins=fmt == "sarif", output=output, os=os_name))
    emit(
        terminal_text(
            render(result.diff, fmt, failing=result.failing, pins_uri=result.pins_uri, pins_lines=result.pins_lines),
            fmt,
            output,
        ),
        output,
    )
    report_exit(result.diff, result.failing)
