"""The one regex dialect for log messages: RE2 (linear-time matching, no backtracking).

Log lines are hostile input: a pattern must never take more than linear time in the line, whatever the
line holds. RE2 guarantees that (it has no backreferences or look-around, so such patterns fail to
compile instead of running slowly). Every line is also cut to :data:`MAX_LINE` characters before it is
matched, so a single pathological line costs a bounded amount of work.
"""

from __future__ import annotations

from typing import Iterator, Protocol

import re2

MAX_LINE = 4096  # characters of one log line that are matched; the rest is dropped (and said so)


class Pattern(Protocol):  # the subset of the compiled-pattern API the matcher uses
    def search(self, text: str | bytes): ...

    def finditer(self, text: str | bytes) -> Iterator: ...


class PatternError(ValueError):
    """A pattern RE2 cannot compile (for example a backreference)."""


def _options():
    options = re2.Options()
    options.log_errors = False  # errors become PatternError, not lines on stderr
    options.max_mem = 8 << 20
    return options


def compile_pattern(pattern: str) -> Pattern:
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(detail) from None


def compile_set(patterns: list[str]):
    """An RE2 set of ``patterns`` (unanchored search); ``Match(text)`` returns the indices that match, or None."""
    options = _options()
    options.max_mem = 64 << 20  # one DFA for every message pattern
    regex_set = re2.Set.SearchSet(options)
    for pattern in patterns:
        try:
            regex_set.Add(pattern)
        except re2.error as exc:
            raise PatternError(str(exc)) from None
    try:
        regex_set.Compile()
    except re2.error:
        raise PatternError("the patterns do not compile as one RE2 set (out of memory)") from None
    return regex_set
