"""A compute capability compared with bounds found in the source (NVIDIA targets): the first check that holds for the
target decides, else ``otherwise``.

Each check is one of:

* ``pattern`` with named groups ``major`` (and ``minor``) and ``when: below`` (the target's capability is lower) or
  ``when: equal``; with ``all: true`` every match of the pattern is a row, and ``when: unlisted`` holds when the
  target's capability is none of them (a documentation table's rows);
* ``families`` (``[Maxwell, Pascal, Volta]``) with ``cite``: a fact no repository states — the vendor's notice
  named by ``cite`` — that holds for targets of those families (its evidence is the first ``values`` line); ``jetson:
  false`` leaves out the Jetson GPUs of a family (their driver is L4T's, not a desktop branch).

``values`` name numbers read from the files (a regex with group ``v``: ``minLegacyComputeJITNVIDIADriverMajor = 570``);
summaries and remedies use them as ``{name}``, and ``{cc}`` (6.1), ``{number}`` (61), ``{bound}`` (the check's
capability).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, fill, hit, params_object, rule_problem
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_OUTCOME = {"status": {"$ref": "#/$defs/status"}, "summary": {"type": "string"}, "remedy": {"type": "string"}}


class CcCompare:
    name = "cc-compare"
    params_schema = params_object(
        ["checks", "otherwise"],
        {
            "values": {"type": "object", "additionalProperties": {"type": "string"}},
            "checks": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["status", "summary"],
                    "additionalProperties": False,
                    "properties": {
                        "pattern": {"type": "string"},
                        "when": {"enum": ["below", "equal", "unlisted"]},
                        "all": {"type": "boolean"},
                        "families": {"type": "array", "items": {"type": "string"}},
                        "jetson": {
                            "type": "boolean",
                            "description": "families: only Jetson GPUs (true) or none (false)",
                        },
                        "cite": {"type": "string"},
                        **_OUTCOME,
                    },
                },
            },
            "otherwise": {
                "type": "object",
                "required": ["status", "summary"],
                "additionalProperties": False,
                "properties": _OUTCOME,
            },
        },
    )
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        for name, pattern in (rule.params.get("values") or {}).items():
            check_regex(rule, f"params.values.{name}", pattern)
        for i, check in enumerate(rule.params["checks"]):
            if ("pattern" in check) == ("families" in check):
                raise rule_problem(rule, f"params.checks[{i}]: give either pattern (with when) or families (with cite)")
            if "pattern" in check:
                check_regex(rule, f"params.checks[{i}].pattern", check["pattern"])

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        texts = [(path, (source.read_text(path) or "").splitlines()) for path in paths]

        def matches(pattern: str, every: bool) -> list[tuple[Any, dict[str, Any]]]:
            regex, out = rule_regex(pattern), []
            for path, lines in texts:
                for number, line in enumerate(lines, 1):
                    for found in regex.finditer(line):
                        out.append((found, hit(path, number, line)))
                        if not every:
                            return out
            return out

        values: dict[str, Any] = {}
        for name, pattern in (rule.params.get("values") or {}).items():
            found = matches(pattern, False)
            if not found:
                raise NoMatch(f"value {name} ({pattern}) is not in {', '.join(paths)}")
            values[name] = {"v": found[0][0].group("v"), **found[0][1]}
        checks: list[Any] = []
        for check in rule.params["checks"]:
            if "pattern" not in check:
                checks.append(None)
                continue
            rows = [
                {"major": int(m.group("major")), "minor": int(m.groupdict().get("minor") or 0), **h}
                for m, h in matches(check["pattern"], bool(check.get("all")))
            ]
            checks.append(rows)
        if all(not rows for rows in checks if rows is not None) and any(rows is not None for rows in checks):
            raise NoMatch(f"no bound of {len(checks)} checks is in {', '.join(paths)}")
        return {"values": values, "checks": checks}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        arch = catalog.nvidia[target.processor]
        cc = tuple(int(x) for x in arch.capability.split("."))
        extra = {name: v["v"] for name, v in facts["values"].items()}
        extra["cc"] = arch.capability
        extra["number"] = arch.digits  # 61: CMAKE_CUDA_ARCHITECTURES' spelling
        value_hits = tuple(Hit.from_json(v) for v in facts["values"].values())
        for check, rows in zip(rule.params["checks"], facts["checks"]):
            if rows is None:  # a vendor's notice: the families it names
                if arch.family in check["families"] and check.get("jetson", arch.jetson) == arch.jetson:
                    note = f"source: {check['cite']}"
                    first = value_hits[:1] or ()
                    return self._finding(check, target, extra, tuple(h._replace(note=note) for h in first) or (), note)
                continue
            if not rows:
                continue
            when = check.get("when", "below")
            bounds = [(r["major"], r["minor"]) for r in rows]
            if when == "unlisted":
                if cc not in bounds:
                    extra["bound"] = ", ".join(f"{a}.{b}" for a, b in sorted(set(bounds)))
                    return self._finding(check, target, extra, tuple(Hit.from_json(r) for r in rows[:3]) + value_hits)
                continue
            for row, bound in zip(rows, bounds):
                if (when == "below" and cc < bound) or (when == "equal" and cc == bound):
                    extra["bound"] = f"{bound[0]}.{bound[1]}"
                    return self._finding(check, target, extra, (Hit.from_json(row), *value_hits))
        # the target's own row where a check lists rows (a docs table), else each check's bound
        evidence = (
            tuple(
                Hit.from_json(next((r for r in rows if (r["major"], r["minor"]) == cc), rows[0]))
                for rows in facts["checks"]
                if rows
            )
            + value_hits
        )
        return self._finding(rule.params["otherwise"], target, extra, evidence)

    @staticmethod
    def _finding(
        outcome: dict[str, Any], target: TargetId, extra: dict[str, str], hits: tuple[Hit, ...], note: str = ""
    ) -> Finding:
        summary = fill(outcome["summary"], target, **extra)
        if note:
            summary += f" ({note})"
        return Finding(Status(outcome["status"]), summary, hits, remedy=fill(outcome.get("remedy"), target, **extra))


MATCHER: Matcher = CcCompare()
