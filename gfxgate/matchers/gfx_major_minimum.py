"""A minimum gfx major version in GPU discovery: devices of an older generation are rejected.

Ollama v0.1.25 … v0.12.3 drops a ROCm device whose gfx major version is below a minimum before any other check
("amdgpu too old gfx803"): ``if v.Major < 9`` at first, then ``const RocmComputeMin = 9``, then ``var
RocmComputeMajorMin = "9"`` (a string a build can change with ``-ldflags -X``). ``minimum`` lists regexes with a
``major`` group, tried in order over the rule's files; the first match is the minimum and its line the evidence.
A target whose major version (gfx803 → 8, gfx90a → 9, gfx1030 → 10) is below it gets ``below`` (status,
summary, remedy); the others are allowed. ``{minimum}`` and ``{major}`` are filled in the texts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, fill, hit, params_object, rule_problem
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_MAJOR = re.compile(r"^gfx(?P<major>[0-9]+)[0-9a-f]{2}$")


class GfxMajorMinimum:
    name = "gfx-major-minimum"
    params_schema = params_object(
        ["minimum", "below"],
        {
            "minimum": {"type": "array", "minItems": 1, "items": {"type": "string"}},
            "below": {
                "type": "object",
                "required": ["status", "summary"],
                "additionalProperties": False,
                "properties": {
                    "status": {"$ref": "#/$defs/status"},
                    "summary": {"type": "string"},
                    "remedy": {"type": "string"},
                },
            },
        },
    )
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        for i, pattern in enumerate(rule.params.get("minimum") or ()):
            if "major" not in check_regex(rule, f"params.minimum[{i}]", pattern).groupindex:
                raise rule_problem(rule, f"params.minimum[{i}]: needs a (?P<major>…) group")

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        texts = {path: (source.read_text(path) or "").splitlines() for path in paths}
        for pattern in rule.params["minimum"]:
            regex = rule_regex(pattern)
            for path in paths:
                for number, line in enumerate(texts[path], start=1):
                    found = regex.search(line)
                    if found:
                        return {**hit(path, number, line), "minimum": int(found.group("major"))}
        raise NoMatch(f"no minimum gfx major version in {', '.join(paths)}")

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        minimum = facts["minimum"]
        match = _MAJOR.match(target.processor)
        if match is None:  # a generic target (gfx9-generic …): its generation is in its name
            match = re.match(r"^gfx(?P<major>[0-9]+)", target.processor)
        major = int(match.group("major")) if match else minimum
        evidence = (Hit.from_json(facts, f"minimum gfx major version {minimum}"),)
        if major >= minimum:
            return Finding(Status.ALLOWED, f"not rejected as too old (gfx{major} ≥ the minimum gfx{minimum})", evidence)
        below = rule.params["below"]
        extra = {"minimum": str(minimum), "major": str(major)}
        return Finding(
            Status(below["status"]),
            fill(below["summary"], target, **extra),
            evidence,
            remedy=fill(below.get("remedy"), target, **extra),
        )


MATCHER: Matcher = GfxMajorMinimum()
