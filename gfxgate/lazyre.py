"""``re.compile`` on first use, for the patterns a module defines at its top (the speed budget of issue 40).

A module's patterns were compiled when it was imported, whether or not the command used them: ~90 of them on
`diagnose`'s path, most never searched by a given log (a Windows path pattern on a Linux journal). Compiling one is
~0.2–0.5 M instructions of Python (``re._parser``, ``re._compiler``); deferring them all to their first use spares
`diagnose` of the budget's log ~17 M instructions and `scan -t gfx900` ~14 M (benchmarks/README.md).

:func:`lazy_compile` answers an object with the compiled pattern's methods and attributes (``search``, ``match``,
``sub``, ``pattern``, …), compiled by ``re.compile`` the first time one is read and bound from then on. It is not an
``re.Pattern``: pass its methods, not the object, to ``re.sub(pattern, …)``-style functions (none in gfxgate do).
"""

from __future__ import annotations

import re
from typing import Any, cast, overload

_KEPT = ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split", "pattern", "flags", "groups")


class _LazyPattern:
    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self._source = (pattern, flags)

    def __getattr__(self, name: str) -> Any:  # only for names not yet in the instance: the first use
        compiled = re.compile(self._source[0], self._source[1])
        for kept in _KEPT:
            self.__dict__[kept] = getattr(compiled, kept)
        self.__dict__["compiled"] = compiled
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy_compile({self._source[0]!r}, {self._source[1]!r})"


@overload
def lazy_compile(pattern: str, flags: int | re.RegexFlag = 0) -> re.Pattern[str]: ...


@overload
def lazy_compile(pattern: bytes, flags: int | re.RegexFlag = 0) -> re.Pattern[bytes]: ...


def lazy_compile(pattern: str | bytes, flags: int | re.RegexFlag = 0) -> re.Pattern[Any]:
    """``re.compile(pattern, flags)``, done when the pattern is first used."""
    return cast("re.Pattern[Any]", _LazyPattern(pattern, int(flags)))
