"""Writing a command's result, and parsing its --target values: the helpers every command shares."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    """click.echo: a newline, a flush, ANSI styling removed when the stream is not a terminal."""
    import click

    if err:  # a message line (error, warning, note) quotes paths and upstream text: no control reaches the terminal
        from gfxgate.report.text import inert

        text = "\n".join(map(inert, text.split("\n")))

    click.echo(text, err=err, nl=nl)


def refuse_output_over_inputs(output: Path | None, inputs) -> None:
    """``-o`` naming a file the command reads (``diagnose x.log -o x.log``) would replace that input with the
    report: a usage error (exit 2) before anything is read. Only regular files count (a report to
    ``/dev/stdout`` while reading a terminal on ``/dev/stdin`` is fine); links are followed (``os.path.samefile``)."""
    import os
    import stat

    from gfxgate.errors import UsageError

    if output is None:
        return
    for name in inputs:
        if str(name) == "-":
            continue
        try:
            if stat.S_ISREG(os.stat(name).st_mode) and os.path.samefile(name, output):
                raise UsageError(f"-o {output} is the input {name}: the report would replace it",
                                 hint="write the report to another file")
        except OSError:
            continue  # a missing output or input: nothing to protect here (the read reports a missing input)


def emit(text: str | bytes, output: Path | None) -> None:
    """Write a rendered report (text, or bytes such as a PNG) to stdout or, atomically, to a file."""
    if output is None:
        if isinstance(text, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
            sys.stdout.buffer.flush()
            return
        echo(text, nl=not text.endswith("\n"))
        return
    from gfxgate.fsio import write_bytes_atomic, write_text_atomic

    if isinstance(text, bytes):
        write_bytes_atomic(output, text)
    else:
        write_text_atomic(output, text)
    echo(f"gfxgate: wrote {output}", err=True)


def parse_targets(values: tuple[str, ...]) -> list:
    """Parse --target values (repeatable, comma-separated allowed) into TargetIds, keeping order."""
    if not values:
        return []  # without targets the catalog is not even loaded
    from gfxgate.targets import catalog

    out = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                target = catalog().parse(part)
                if target not in out:
                    out.append(target)
    return out
