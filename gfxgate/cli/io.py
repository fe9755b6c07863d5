"""Writing a command's result: the helpers every command shares."""

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
