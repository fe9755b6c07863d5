"""`gfxgate diff OLD.json NEW.json`: what flipped between two gate matrices.

Exit codes: 0 no regression of a target named in --fail-on (whatever else changed); 1 a target
named in --fail-on regressed (allowed → blocked, partial → override-required …); 2 usage error
(bad option, a --fail-on target in neither report); 6 an input file is unreadable or not a gate matrix.
"""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, fail_on_targets, format_option, output_option, report_exit, terminal_text

DIFF_FORMATS = ("md", "json", "sarif", "text")


@click.command()
@click.argument("old", type=click.Path(path_type=Path))  # read by load_matrix: a folder, FIFO or device is exit 6
@click.argument("new", type=click.Path(path_type=Path))
@format_option(DIFF_FORMATS)
@output_option()
@click.option("--fail-on", "fail_on", multiple=True, metavar="TARGET",
              help="Exit 1 when one of these targets regressed (repeatable or comma-separated).")
@click.option("--pins", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Pins file the SARIF locations point at (default: rules/pins.toml of this repository).")
def diff(old, new, fmt, output, fail_on, pins) -> None:
    """Compare two `gfxgate scan --format json` reports: regressions, drift, improvements, with both evidences.

    Exit 0 unless a target named in --fail-on regressed (1); 2 usage error; 6 unreadable input.
    """
    from gfxgate.prcheck.diff import diff_matrices, fail_closed, load_matrix
    from gfxgate.prcheck.pins import pins_location
    from gfxgate.prcheck.render import render

    from gfxgate.cli.io import refuse_output_over_inputs

    refuse_output_over_inputs(output, (old, new))
    old_matrix, new_matrix = load_matrix(old), load_matrix(new)
    fail_closed(old_matrix, new_matrix, command="diff")
    result = diff_matrices(old_matrix, new_matrix)
    failing = fail_on_targets(fail_on, result.targets)
    pins_uri, lines = pins_location(pins) if fmt == "sarif" else ("rules/pins.toml", {})
    emit(terminal_text(render(result, fmt, failing=failing, pins_uri=pins_uri, pins_lines=lines), fmt, output), output)
    report_exit(result, failing)
