"""`gfxgate diff OLD.json NEW.json`: what flipped between two gate matrices.

Exit codes: 0 no regression of a target named in --fail-on (whatever else changed); 1 a target
named in --fail-on regressed (allowed → blocked, partial → override-required …); 2 usage error
(bad option, a --fail-on target in neither report); 6 an input file is unreadable or not a gate matrix.
"""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option

DIFF_FORMATS = ("md", "json", "sarif", "text")


def fail_on_targets(values: tuple[str, ...], available: tuple[str, ...]) -> tuple[str, ...]:
    """Canonical names of the --fail-on targets; each must be in the compared reports."""
    from gfxgate.cli.common import parse_targets
    from gfxgate.errors import UsageError

    names = tuple(str(t) for t in parse_targets(values))
    missing = [n for n in names if n not in available]
    if missing:
        raise UsageError(f"--fail-on names {', '.join(missing)}, which is not in both reports",
                         hint="compared targets: " + (", ".join(available) or "none"))
    return names


def pins_location(pins: Path | None) -> tuple[str, dict[str, int]]:
    """(pins file URI relative to its repository, source name → line of its ref) for SARIF locations."""
    from gfxgate.errors import GfxgateError
    from gfxgate.prcheck.check import default_pins_path, inside_repo, toplevel
    from gfxgate.prcheck.pins import ref_lines

    path = (pins or default_pins_path()).resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return "rules/pins.toml", {}
    try:
        uri = inside_repo(path, toplevel(path)) or "rules/pins.toml"
    except GfxgateError:  # not in a git repository: the name the shipped layout gives it
        uri = "rules/pins.toml"
    return uri, ref_lines(text)


def report_exit(diff, failing: tuple[str, ...]) -> None:
    """One summary line on stderr; exit 1 when a --fail-on target regressed."""
    import sys

    counts = diff.counts()
    click.echo("gfxgate: " + ", ".join(f"{k}: {v}" for k, v in counts.items()), err=True)
    bad = diff.regressions(failing) if failing else []
    if bad:
        for c in bad:
            click.echo(f"gfxgate: {c.target} regressed: {c.layer} {c.old_status} -> {c.new_status}", err=True)
        sys.exit(1)


@click.command()
@click.argument("old", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("new", type=click.Path(dir_okay=False, path_type=Path))
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
    from gfxgate.prcheck.diff import diff_matrices, load_matrix
    from gfxgate.prcheck.render import render_diff

    result = diff_matrices(load_matrix(old), load_matrix(new))
    failing = fail_on_targets(fail_on, result.targets)
    pins_uri, lines = pins_location(pins) if fmt == "sarif" else ("rules/pins.toml", {})
    emit(render_diff(result, fmt, failing=failing, pins_uri=pins_uri, pins_lines=lines), output)
    report_exit(result, failing)
