"""The output formats, once: the one enum every formatter module and command names its formats with, and the one
shape of a formatter (``format(result) -> str``, no I/O)."""

from __future__ import annotations

import enum
from typing import Iterable, Protocol, TypeVar


class Format(str, enum.Enum):
    """Every output format gfxgate writes; a result offers some of them (its module's ``FORMATS``)."""

    MD = "md"
    JSON = "json"
    TEXT = "text"
    SARIF = "sarif"  # the gate matrix and its diff, for code scanning
    NFD = "nfd"  # doctor: Kubernetes node-feature-discovery labels
    PROMETHEUS = "prometheus"  # doctor: a textfile collector's metrics
    SVG = "svg"  # timeline figure
    PNG = "png"  # timeline figure (bytes)

    def __str__(self) -> str:
        return self.value


# what every command that prints a result offers (tests/test_formats_everywhere.py, tests/report/test_formatters.py)
RESULT_FORMATS = (Format.MD, Format.JSON, Format.TEXT)

R_contra = TypeVar("R_contra", contravariant=True)


class Formatter(Protocol[R_contra]):
    """One format of one result: the result in, the text out; nothing written, nothing read."""

    def __call__(self, result: R_contra, /) -> str: ...


def choose(fmt: Format | str, offered: Iterable[Format]) -> Format:
    """``fmt`` as one of the formats a result offers. A name that is no format, or a format this result does not
    offer, is a ValueError naming the ones it does (a command's --format choices refuse them first: reaching here
    is a caller's bug, never a silent fall back to another format)."""
    name = fmt.value if isinstance(fmt, Format) else fmt
    offered = tuple(offered)
    for candidate in offered:
        if candidate.value == name:
            return candidate
    raise ValueError(f"unknown format {name!r} (this result offers {', '.join(f.value for f in offered)})")
