"""Writing a command's result, and its --target values, without click: the command-line helpers a command that
runs before click is imported (``gfxgate.cli.fast``) shares with every other command.

:func:`echo` writes text as ``click.echo`` does (a newline, a flush; a text with an escape character goes through
``click.echo`` itself, which strips ANSI sequences when the stream is not a terminal, by its own version's
pattern), so a result reads the same whether click parsed the command line or not.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # not imported at run time: `gfxgate --help` needs no pathlib
    from pathlib import Path
    from typing import TextIO


def echo(text: str, *, err: bool = False, nl: bool = True) -> None:
    if err:  # a message line (error, warning, note) quotes paths and upstream text: no control reaches the terminal
        from gfxgate.report.text import inert

        text = "\n".join(map(inert, text.split("\n")))
    if "\033" in text:
        import click

        click.echo(text, err=err, nl=nl)
        return
    stream: TextIO = sys.stderr if err else sys.stdout
    stream.write(text + "\n" if nl else text)
    stream.flush()


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
