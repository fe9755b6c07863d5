"""Line patterns that decide a status: the first check whose pattern matches any line decides.

Used where a layer is decided by *which* of several known constructs a version has — e.g. whether
Ollama enables the Vulkan backend by default (``EnableVulkan(true)``), only on request (the
"experimental Vulkan support disabled … set OLLAMA_VULKAN=1" log line), or not at all. Checks are
tried in order; within a check, files in the rule's path order. When no check matches, the rule's
``absent`` entry (if any) decides with the files searched as evidence, otherwise the rule does not match.
A check may say ``unknown``: what it found (a link to another repository's list) is the layer's reason, with its line
as evidence, when no other rule of the layer decides.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, fill, hit, params_object
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


class PatternStatus:
    name = "pattern-status"
    params_schema = params_object(
        ["checks"],
        {
            "checks": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["pattern", "status", "summary"],
                    "additionalProperties": False,
                    "properties": {
                        "pattern": {"type": "string"},
                        # unknown: the construct found says the answer is not in this repository (rocm-docs-gpu-list-elsewhere)
                        "status": {"anyOf": [{"$ref": "#/$defs/status"}, {"const": "unknown"}]},
                        "summary": {"type": "string"},
                        "remedy": {"type": "string"},
                    },
                },
            },
        },
    )
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        for i, check in enumerate(rule.params.get("checks") or ()):
            check_regex(rule, f"params.checks[{i}].pattern", check["pattern"])

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        texts = {path: (source.read_text(path) or "").splitlines() for path in paths}
        for index, check in enumerate(rule.params["checks"]):
            pattern = rule_regex(check["pattern"])
            for path in paths:
                for number, line in enumerate(texts[path], start=1):
                    found = pattern.search(line)
                    if found:
                        return {"check": index, **hit(path, number, line), "match": found.group(0)}
        if rule.absent is not None:
            return {"absent": list(paths)}
        raise NoMatch(f"none of {len(rule.params['checks'])} patterns matches a line of {', '.join(paths)}")

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        check = rule.params["checks"][facts["check"]]
        summary = fill(check["summary"], target, match=facts["match"], path=facts["path"])
        remedy = fill(
            check.get("remedy") or (rule.remedy if Status(check["status"]) != Status.ALLOWED else None), target
        )
        return Finding(Status(check["status"]), summary, (Hit.from_json(facts),), remedy=remedy)


MATCHER: Matcher = PatternStatus()
