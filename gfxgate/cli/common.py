"""Options and helpers shared by several sub-commands (output format, -o, targets, sources, --fail-on)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import click

from gfxgate.cli.io import echo, emit, parse_targets  # noqa: F401 - re-exported: every command's helpers


def format_option(choices: tuple[str, ...] = ("md", "json", "text"), default: str = "md") -> Callable:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        envvar="GFXGATE_FORMAT",
        help="Output format.",
    )


def output_option() -> Callable:
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the report to this file instead of stdout (a regular file is replaced whole, atomically; "
             "a device or FIFO is written in place; a symbolic link is followed).",
    )


def source_options(func: Callable | None = None, *, refs: bool = True, online: bool = False, note: str = "") -> Callable:
    """--ref NAME=TAG (unless ``refs=False``), --source NAME=URL_OR_PATH and --offline: every command reading upstream code.

    Use as ``@source_options`` or ``@source_options(refs=False)`` (commands that choose the tags themselves).
    ``note``: what a --source does besides, in its help (``"implies --live"``); ``online=True``: a command that stays
    off the network unless asked (`diagnose`) takes --online instead of --offline.
    """
    if func is None:
        return lambda f: source_options(f, refs=refs, online=online, note=note)
    if online:
        func = click.option("--online", is_flag=True,
                            help="Allow cloning and fetching upstream sources (default: only cached clones and local paths).")(func)
    else:
        func = click.option("--offline", is_flag=True, envvar="GFXGATE_OFFLINE",
                            help="Never touch the network: only cached clones and local paths.")(func)
    func = click.option("--source", "sources", multiple=True, metavar="NAME=URL_OR_PATH",
                        help=f"Read NAME from another URL or a local clone/folder ({note + '; ' if note else ''}"
                             "env: GFXGATE_SOURCE_<NAME>).")(func)
    if refs:
        func = click.option("--ref", "refs", multiple=True, metavar="NAME=TAG",
                            help="Scan another version of NAME (e.g. ollama=v0.12.3); NAME=latest is its newest release tag.")(func)
    return func


def fail_on_targets(values: tuple[str, ...], available: tuple[str, ...]) -> tuple[str, ...]:
    """Canonical names of the --fail-on targets; each must be in the compared reports."""
    from gfxgate.errors import UsageError

    names = tuple(str(t) for t in parse_targets(values))
    missing = [n for n in names if n not in available]
    if missing:
        raise UsageError(f"--fail-on names {', '.join(missing)}, which is not in both reports",
                         hint="compared targets: " + (", ".join(available) or "none"))
    return names


def report_exit(diff, failing: tuple[str, ...]) -> None:
    """One summary line on stderr; exit 1 when a --fail-on target regressed."""
    import sys

    counts = diff.counts()
    echo("gfxgate: " + ", ".join(f"{k}: {v}" for k, v in counts.items()), err=True)
    bad = diff.regressions(failing) if failing else []
    if bad:
        for c in bad:
            echo(f"gfxgate: {c.target} regressed: {c.layer} {c.old_status} -> {c.new_status}", err=True)
        sys.exit(1)
