"""String literals that document an option (CLI help such as ``/set parameter num_gpu <int> …``).

``pattern`` is a regex searched in the literal's contents; the meaning is the literal with the
matched part removed (the help text that follows the option name).
"""

from __future__ import annotations

import re

from gfxgate.trace.hops import Match, Site, missing_construct
from gfxgate.trace.syntax import STRING_TYPES, string_value
from gfxgate.saferegex import rule_regex


def _needle(pattern: str) -> str:
    """The longest literal run of the regex, for the grep pre-filter."""
    runs = re.split(r"\\[bBdDsSwWAZz]|(?<!\\)[\^$.|?*+()\[\]{}]", pattern)
    runs = [re.sub(r"\\(.)", r"\1", r) for r in runs]
    return max(runs, key=len) if runs else pattern


def run(params: dict, ctx) -> list[Match]:
    rx = rule_regex(params["pattern"])
    needle = _needle(params["pattern"])
    files = ctx.candidates(
        params["repo"], params["paths"], needle, what=f"a string literal matching /{params['pattern']}/"
    )
    matches = []
    for pf in files:
        for node in pf.walk(STRING_TYPES[pf.language]):
            value = string_value(pf, node)
            m = rx.search(value)
            if not m:
                continue
            help_text = (value[: m.start()] + value[m.end() :]).strip()
            help_text = re.sub(r"^<[^>]*>\s*", "", help_text)  # the value placeholder (<int>)
            site = Site(
                pf, pf.line_of(node), f'"{value.strip()}"', help_text or None, "help string" if help_text else None
            )
            matches.append(Match((site,), {"text": value}))
    if not matches:
        raise missing_construct(needle, files, f"a string literal matching /{params['pattern']}/")
    return matches
