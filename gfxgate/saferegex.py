"""The one regex dialect of rule files: RE2 (``google-re2``), linear time whatever the pattern or input.

Rule files are data a pull request can change (`gfxgate check` evaluates them), so a rule regex must not
be able to hang a scan: with Python's backtracking ``re``, ``^(\\w+\\s?)*$`` over one long line never ends.
RE2 has no backtracking, hence no backreferences and no lookaround; a pattern RE2 cannot compile (or one
larger than its memory limit) is a :class:`~gfxgate.errors.RuleError` when the rules are loaded, never a
hang when they run. Every source (folders, unpacked trees, git tags) greps with this same dialect.

Internal regexes written in gfxgate's own code stay Python ``re``; this module is for patterns from data.
"""

from __future__ import annotations

import functools

import re2

from gfxgate.errors import RuleError

MAX_PATTERN = 4096  # characters of one rule regex
MAX_PROGRAM = 8 << 20  # bytes RE2 may use to compile one pattern (its default): a{1000}{1000} is refused

DIALECT = "RE2 syntax: no backreferences, no lookahead/lookbehind"


class RuleRegexError(RuleError):
    """A rule regex RE2 cannot compile."""


@functools.lru_cache(maxsize=4096)
def rule_regex(pattern: str, *, ignore_case: bool = False):
    """Compile a regex from a rule file with RE2 (cached); the result has ``search``, ``match``,
    ``fullmatch``, ``finditer`` and ``sub`` like a ``re.Pattern``."""
    if not isinstance(pattern, str):
        raise RuleRegexError(f"regex must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN:
        raise RuleRegexError(f"regex of {len(pattern)} characters (at most {MAX_PATTERN})")
    options = re2.Options()
    options.log_errors = False  # RE2 would print its own line on stderr
    options.max_mem = MAX_PROGRAM
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options=options)
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise RuleRegexError(f"bad regex {pattern!r}: {detail} ({DIALECT})") from None


def check_rule_regex(pattern: str, where: str) -> None:
    """Raise RuleError naming ``where`` (file, rule, key) when ``pattern`` is not a valid rule regex."""
    try:
        rule_regex(pattern)
    except RuleRegexError as exc:
        raise RuleRegexError(f"{where}: {exc.message}") from None


def escape(text: str) -> str:
    return re2.escape(text)
