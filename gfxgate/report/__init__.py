"""Formatters: render a result object to text. They never write files; the CLI owns I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, Formatter, choose

if TYPE_CHECKING:
    from gfxgate.gate.matrix import GateMatrix

FORMATS = (Format.MD, Format.JSON, Format.TEXT, Format.SARIF)


def render_json(matrix: GateMatrix) -> str:
    return dumps(matrix.to_json()) + "\n"


def _markdown(matrix: GateMatrix) -> str:
    from gfxgate.report.markdown import render

    return render(matrix)


def _text(matrix: GateMatrix, *, width: int = 100, color: bool = False, verbose: bool = False) -> str:
    from gfxgate.report.terminal import render

    return render(matrix, width=width, color=color, verbose=verbose)


def _sarif(matrix: GateMatrix) -> str:
    from gfxgate.report.sarif import render_scan

    return render_scan(matrix)


FORMATTERS: dict[Format, Formatter[GateMatrix]] = {
    Format.MD: _markdown,
    Format.JSON: render_json,
    Format.TEXT: _text,
    Format.SARIF: _sarif,
}


def render(
    matrix: GateMatrix, fmt: Format | str, *, width: int = 100, color: bool = False, verbose: bool = False
) -> str:
    """``width``, ``color`` and ``verbose`` lay out the text format; the other formats have one form."""
    fmt = choose(fmt, FORMATS)
    if fmt is Format.TEXT:
        return _text(matrix, width=width, color=color, verbose=verbose)
    return FORMATTERS[fmt](matrix)
