"""``list(FILTER <var> INCLUDE|EXCLUDE REGEX "…")`` in CMake files, evaluated for a target.

The guard around each filter matters: inside ``if(NOT AMDGPU_TARGETS)`` the filter only trims
the *default* list, so a target it drops is "blocked by default; allowed with
``-DAMDGPU_TARGETS=…``"; inside ``if(WIN32 …)`` it does not apply on Linux.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, fill, hit, params_object, rule_problem
from gfxgate.model import Status
from gfxgate.saferegex import RuleRegexError, rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_COMMAND_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def parse_commands(text: str) -> list[tuple[str, list[str], int, str]]:
    """CMake commands as (name, args, line, first line text); comments stripped, quotes honoured."""
    commands = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = _COMMAND_RE.match(lines[i])
        if not match:
            i += 1
            continue
        start = i
        buf = lines[i][match.end() :]
        depth, quoted, j = 1, False, 0
        args: list[str | None] = []
        current: str | None = ""  # None: just after a closing quote (an argument "" is kept, none starts)
        while True:
            while j < len(buf):
                ch = buf[j]
                if quoted:
                    if ch == "\\" and j + 1 < len(buf):
                        current = (current or "") + buf[j : j + 2]
                        j += 2
                        continue
                    if ch == '"':
                        quoted = False
                        args.append(current)
                        current = None
                    else:
                        current = (current or "") + ch
                elif ch == '"':
                    quoted, current = True, ""
                elif ch == "#":
                    j = len(buf)
                    continue
                elif ch == "(":
                    depth += 1
                    current = (current or "") + ch
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        break
                    current = (current or "") + ch
                elif ch.isspace():
                    if current:
                        args.append(current)
                    current = ""
                else:
                    current = (current or "") + ch
                j += 1
            if depth == 0 or i + 1 >= len(lines):
                break
            if current and not quoted:
                args.append(current)
                current = ""
            elif quoted:
                current = (current or "") + "\n"
            i += 1
            buf, j = lines[i], 0
        if current:
            args.append(current)
        commands.append((match.group(1).lower(), [a for a in args if a is not None], start + 1, lines[start]))
        i += 1
    return commands


def _expand(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{([A-Za-z0-9_]+)\}", lambda m: variables.get(m.group(1), m.group(0)), value)


def cmake_regex(pattern: str) -> Any:  # a compiled RE2 (untyped)
    """CMake's regex dialect (read from upstream files) is a subset of RE2's for the constructs used in
    target filters; compiled with RE2 like rule regexes, so an upstream file cannot make a scan hang."""
    try:
        return rule_regex(pattern)
    except RuleRegexError as exc:
        raise NoMatch(f"regex {pattern!r} is not understood: {exc.message}") from None


class CMakeListFilter:
    name = "cmake-list-filter"
    params_schema = params_object(
        ["variable"],
        {
            "variable": {"type": "string"},
            "platform": {"enum": ["linux", "windows"]},
        },
    )

    def check_params(self, rule: MatcherRule) -> None:
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", rule.params.get("variable", "")):
            raise rule_problem(rule, "params.variable must be a CMake variable name")

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        variable = rule.params["variable"]
        filters = []
        for path in paths:
            text = source.read_text(path) or ""
            variables: dict[str, str] = {}
            guards: list[str] = []
            for name, args, line, first in parse_commands(text):
                if name == "set" and len(args) >= 2:
                    variables[args[0]] = args[1]
                elif name == "if":
                    guards.append(" ".join(args))
                elif name in ("elseif", "else") and guards:
                    guards[-1] = f"NOT ({guards[-1]})" + (f" AND {' '.join(args)}" if args else "")
                elif name == "endif" and guards:
                    guards.pop()
                elif name == "list" and len(args) >= 5 and args[0].upper() == "FILTER" and args[1] == variable:
                    mode, kind, regex = args[2].upper(), args[3].upper(), _expand(args[4], variables)
                    if kind != "REGEX" or mode not in ("INCLUDE", "EXCLUDE"):
                        continue
                    filters.append({**hit(path, line, first), "mode": mode, "regex": regex, "guards": list(guards)})
        if not filters:
            raise NoMatch(f"no list(FILTER {variable} …) in {', '.join(paths)}")
        return {"variable": variable, "filters": filters}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        variable = facts["variable"]
        platform = rule.params.get("platform", "linux")
        spellings = catalog.spellings(target)
        default_only_drop, hard_drop, kept, skipped, conditional = [], [], [], [], []
        for flt in facts["filters"]:
            guards = " AND ".join(flt["guards"])
            if platform == "linux" and re.search(r"(?<!NOT )\bWIN32\b", guards):
                skipped.append(Hit.from_json(flt, "Windows only; does not apply on Linux"))
                continue
            rx = cmake_regex(flt["regex"])
            matching = [s for s in spellings if rx.search(s)]
            include = flt["mode"] == "INCLUDE"
            default_only = re.search(rf"\bNOT\s+{re.escape(variable)}\b", guards) is not None
            if bool(rx.search(spellings[0])) == include:
                kept.append(Hit.from_json(flt, f"{flt['mode']} {flt['regex']} keeps {target}"))
            elif include and matching:
                conditional.append(Hit.from_json(flt, f"keeps only {', '.join(matching)}"))
            elif default_only:
                default_only_drop.append(
                    Hit.from_json(flt, f"{flt['mode']} {flt['regex']} drops {target} from the default list")
                )
            else:
                hard_drop.append(Hit.from_json(flt, f"{flt['mode']} {flt['regex']} drops {target}"))
        remedy = fill(rule.remedy, target) or f"configure with -D{variable}={target}"
        if hard_drop:
            return Finding(
                Status.BLOCKED,
                f"dropped by the {variable} filter even when set explicitly",
                tuple(hard_drop + skipped),
                remedy=None,
            )
        if default_only_drop:
            return Finding(
                Status.OVERRIDE_REQUIRED,
                f"blocked by default; allowed with `-D{variable}={target}`",
                tuple(default_only_drop + skipped),
                remedy=remedy,
            )
        if conditional:
            return Finding(
                Status.PARTIAL,
                "kept only with a feature setting: " + conditional[0].note,
                tuple(conditional + skipped),
                remedy=remedy,
            )
        if kept:
            return Finding(Status.ALLOWED, f"kept by the {variable} filter", tuple(kept + skipped))
        return Finding(Status.ALLOWED, f"no {variable} filter applies on {platform}", tuple(skipped))


MATCHER: Matcher = CMakeListFilter()
