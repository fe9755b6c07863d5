"""`gfxgate check --base-ref REF`: the gate-matrix diff a pull request makes (what CI runs).

The pins file (and the rules folder, when it is in the same repository) is read at REF with git;
both matrices are computed live; the diff is printed, optionally appended to a Markdown summary
(``$GITHUB_STEP_SUMMARY``) and written as SARIF. Exit codes as `gfxgate diff`: 1 only when a
target named in --fail-on-target regressed.
"""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import (
    emit,
    fail_on_option,
    format_option,
    os_option,
    output_option,
    source_options,
    terminal_text,
)


@click.command()
@click.option(
    "--base-ref",
    required=True,
    metavar="REF",
    envvar="GFXGATE_BASE_REF",
    help="Git ref or commit of this repository to compare against (env: GFXGATE_BASE_REF).",
)
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    required=True,
    help="GPU targets to compare; repeatable or comma-separated.",
)
@fail_on_option("target", "TARGET", "Exit 1 when one of these targets regressed (repeatable or comma-separated).")
@click.option(
    "--pins",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The pins file (default: rules/pins.toml of the repository around the current folder).",
)
@click.option(
    "--rules",
    "rules_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Gate rules folder (default: the shipped rules; read at the base ref too when inside the repository).",
)
@source_options(refs=False)
@os_option
@format_option(("md", "json", "sarif", "text"))
@output_option()
@click.option(
    "--sarif-output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the diff as SARIF 2.1.0 to this file.",
)
@click.option(
    "--summary",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help='Also append the Markdown diff to this file (e.g. "$GITHUB_STEP_SUMMARY").',
)
def check(
    base_ref, targets, fail_on, pins, rules_root, sources, offline, os_name, fmt, output, sarif_output, summary
) -> None:
    """Diff the gate matrix at the pins of --base-ref against the working tree's pins.

    Exit 0 unless a target named in --fail-on-target regressed (1); 2 usage error; 3 invalid pins or
    rules; 4 unknown ref or tag; 5 network.
    """
    from gfxgate.app.check import CheckRequest
    from gfxgate.app.check import check as run
    from gfxgate.cli.common import report_exit
    from gfxgate.prcheck.render import render
    from gfxgate.sources.resolve import parse_assignments

    result = run(
        CheckRequest(
            base_ref,
            tuple(targets),
            tuple(fail_on),
            pins,
            rules_root,
            parse_assignments(sources, "--source"),
            offline,
            os_name,
        )
    )
    failing, pins_uri, lines = result.failing, result.pins_uri, result.pins_lines
    title = f"gfxgate check against {base_ref}"
    if summary is not None:
        with summary.open("a", encoding="utf-8") as handle:
            handle.write(render(result.diff, "md", failing=failing, title=title))
    if sarif_output is not None:
        emit(render(result.diff, "sarif", pins_uri=pins_uri, pins_lines=lines), sarif_output)
    emit(
        terminal_text(
            render(result.diff, fmt, failing=failing, pins_uri=pins_uri, pins_lines=lines, title=title), fmt, output
        ),
        output,
    )
    report_exit(result.diff, failing)
