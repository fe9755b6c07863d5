"""Formatters: render a result object to text. They never write files; the CLI owns I/O."""

from __future__ import annotations

import enum
from typing import Callable

from gfxgate.gate.matrix import GateMatrix
from gfxgate.jsontext import dumps


class OutputFormat(str, enum.Enum):
    MARKDOWN = "md"
    JSON = "json"
    TEXT = "text"
    SARIF = "sarif"


def render_json(matrix: GateMatrix) -> str:
    return dumps(matrix.to_json()) + "\n"


def _markdown(matrix: GateMatrix) -> str:
    from gfxgate.report.markdown import render

    return render(matrix)


def _text(matrix: GateMatrix, **options) -> str:
    from gfxgate.report.terminal import render

    return render(matrix, **options)


def _sarif(matrix: GateMatrix) -> str:
    from gfxgate.report.sarif import render_scan

    return render_scan(matrix)


FORMATTERS: dict[OutputFormat, Callable[..., str]] = {
    OutputFormat.MARKDOWN: _markdown,
    OutputFormat.JSON: render_json,
    OutputFormat.TEXT: _text,
    OutputFormat.SARIF: _sarif,
}


def render(matrix: GateMatrix, fmt: str | OutputFormat, *, width: int = 100, color: bool = False,
           verbose: bool = False) -> str:
    """``width``, ``color`` and ``verbose`` lay out the text format; the other formats have one form."""
    fmt = OutputFormat(fmt)
    if fmt is OutputFormat.TEXT:
        return FORMATTERS[fmt](matrix, width=width, color=color, verbose=verbose)
    return FORMATTERS[fmt](matrix)
