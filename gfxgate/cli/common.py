"""Options and helpers shared by several sub-commands (output format, -o, sources, a diff's exit)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import click

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

from gfxgate.cli.io import echo, emit  # noqa: F401 - re-exported: every command's helpers


def stdout_is_terminal() -> bool:
    """Whether stdout is a terminal (``click.get_text_stream("stdout").isatty()``, deprecated in click 8.2: the same
    stream, sys.stdout, as a command under click's test runner sees it)."""
    return sys.stdout.isatty()


def format_option(choices: tuple[str, ...] = ("md", "json", "text"), default: str = "md") -> Callable:
    """--format. Unless given (or GFXGATE_FORMAT), a command that offers ``text`` prints text on a terminal (stdout
    a TTY and no -o) and ``default`` otherwise, so a pipe, a file, a script and every golden keep ``default``."""

    def resolve(ctx: click.Context, param: click.Parameter, value: str | None) -> str:
        if value is not None:
            return value
        # click processes the options given on the command line first, so a given -o is already in ctx.params
        to_terminal = ctx.params.get("output") is None and stdout_is_terminal()
        return "text" if to_terminal and "text" in choices else default

    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=None,
        callback=resolve,
        envvar="GFXGATE_FORMAT",
        help=f"Output format [default: {'text on a terminal, else ' if 'text' in choices else ''}{default}].",
    )


def terminal(output: Path | None = None) -> dict:
    """How text is laid out where it goes: ``width`` (the terminal's, else $COLUMNS, else 100) and ``color`` (a
    terminal without NO_COLOR and not TERM=dumb)."""
    import os
    import shutil

    to_terminal = output is None and stdout_is_terminal()
    if to_terminal:
        width = shutil.get_terminal_size((100, 24)).columns
    else:
        try:
            width = int(os.environ.get("COLUMNS", "100"))
        except ValueError:
            width = 100
    color = to_terminal and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
    return {"width": max(40, min(width, 400)), "color": color}


def output_option() -> Callable:
    return click.option(
        "-o",
        "--output",
        type=click.Path(dir_okay=False, path_type=Path),
        default=None,
        help="Write the report to this file instead of stdout (a regular file is replaced whole, atomically; "
        "a device or FIFO is written in place; a symbolic link is followed).",
    )


def source_options(
    func: Callable | None = None, *, refs: bool = True, online: bool = False, note: str = ""
) -> Callable:
    """--ref NAME=TAG (unless ``refs=False``), --source NAME=URL_OR_PATH and --offline: every command reading upstream code.

    Use as ``@source_options`` or ``@source_options(refs=False)`` (commands that choose the tags themselves).
    ``note``: what a --source does besides, in its help (``"implies --live"``); ``online=True``: a command that stays
    off the network unless asked (`diagnose`) takes --online instead of --offline.
    """
    if func is None:
        return lambda f: source_options(f, refs=refs, online=online, note=note)
    if online:
        func = click.option(
            "--online",
            is_flag=True,
            help="Allow cloning and fetching upstream sources (default: only cached clones and local paths).",
        )(func)
    else:
        func = click.option(
            "--offline",
            is_flag=True,
            envvar="GFXGATE_OFFLINE",
            help="Never touch the network: only cached clones and local paths.",
        )(func)
    func = click.option(
        "--source",
        "sources",
        multiple=True,
        metavar="NAME=URL_OR_PATH",
        help=f"Read NAME from another URL or a local clone/folder ({note + '; ' if note else ''}"
        "env: GFXGATE_SOURCE_<NAME>).",
    )(func)
    if refs:
        func = click.option(
            "--ref",
            "refs",
            multiple=True,
            metavar="NAME=TAG",
            help="Scan another version of NAME (e.g. ollama=v0.12.3); NAME=latest is its newest release tag.",
        )(func)
    return func


def os_option(func: Callable | None = None, *, help: str | None = None, default: str | None = "linux") -> Callable:
    """--os linux|windows: which release of Ollama the answer is for (its presets, packaging, discovery, overrides).
    ``default=None``: the option is optional (`diff`: the matrices say their OS)."""
    if func is None:
        return lambda f: os_option(f, help=help, default=default)
    from gfxgate.model import OSES

    return click.option(
        "--os",
        "os_name",
        type=click.Choice(OSES),
        default=default,
        show_default=default is not None,
        help=help or "Answer for Ollama's release on this OS: its rules, routes and workarounds (docs/windows.md).",
    )(func)


def fail_on_option(kind: str, metavar: str, help: str) -> Callable:
    """``--fail-on-KIND`` (``layer``, ``backend``, ``target``): one meaning per option name (issue 40). The old
    ``--fail-on`` still works, hidden from --help, with a deprecation note on stderr; both add to ``fail_on``."""
    new = f"--fail-on-{kind}"

    def old_given(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> None:
        if not value:
            return
        echo(f"gfxgate: --fail-on is deprecated here: use {new} (the same {kind}s)", err=True)
        ctx.meta["fail_on_old"] = value
        if "fail_on" in ctx.params:  # the new option was processed first
            ctx.params["fail_on"] += value

    def merged(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(ctx.meta.get("fail_on_old", ())) + tuple(value)

    def decorate(func: Callable) -> Callable:
        func = click.option(
            "--fail-on",
            "fail_on_old",
            multiple=True,
            metavar=metavar,
            hidden=True,
            expose_value=False,
            callback=old_given,
            help=f"Deprecated spelling of {new}.",
        )(func)
        return click.option(new, "fail_on", multiple=True, metavar=metavar, callback=merged, help=help)(func)

    return decorate


def report_exit(diff, failing: tuple[str, ...]) -> None:
    """One summary line on stderr; exit 1 when a --fail-on-target target regressed."""
    import sys

    counts = diff.counts()
    echo("gfxgate: " + ", ".join(f"{k}: {v}" for k, v in counts.items()), err=True)
    bad = diff.regressions(failing) if failing else []
    if bad:
        for c in bad:
            echo(f"gfxgate: {c.target} regressed: {c.layer} {c.old_status} -> {c.new_status}", err=True)
        sys.exit(1)


class probe_progress:  # noqa: N801 - used as a context manager, like open()
    """A progress line on stderr while tags are probed (history, timeline --live): a rich spinner with the count
    and the tag being read, only when stderr is a terminal and GFXGATE_NO_PROGRESS is unset; otherwise nothing.
    Use: ``with probe_progress("probing ollama tags") as on_probe: TagProber(..., on_probe=on_probe)``."""

    def __init__(self, label: str) -> None:
        import os
        import sys

        self.label, self.count = label, 0
        self.progress: Progress | None = None
        self.task: TaskID | None = None
        self.enabled = sys.stderr.isatty() and os.environ.get("GFXGATE_NO_PROGRESS", "") in ("", "0")

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.progress = progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=Console(stderr=True, highlight=False, markup=False),
            transient=True,
        )
        progress.start()
        self.task = progress.add_task(self.label, total=None)
        return self._step

    def _step(self, tag: str) -> None:
        from gfxgate.report.text import inert

        self.count += 1
        if self.progress is None or self.task is None:  # only __enter__ hands this out, after setting both
            return
        self.progress.update(self.task, description=f"{self.label}: {self.count} probed, reading {inert(tag)[:40]}")
        self.progress.refresh()

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()


def terminal_text(text: str, fmt: str, output: Path | None) -> str:
    """A line-oriented text report: control characters made inert wherever it goes; on a terminal also wrapped to
    its width (a pipe or file keeps one line per item, for scripts). Every other format unchanged."""
    if fmt != "text":
        return text
    from gfxgate.report.terminal import wrap_lines
    from gfxgate.report.text import inert_text

    if output is None and stdout_is_terminal():
        return wrap_lines(text, width=terminal(output)["width"])
    return inert_text(text)
