"""How ggml-vulkan classifies an AMD device, and how many code paths depend on that class.

ggml-vulkan does not look at gfx names: ``get_device_architecture`` classifies a device from Vulkan
properties (wave64-only subgroups → ``AMD_GCN``; 20 wavefronts per SIMD → ``AMD_RDNA1``; float8 →
``AMD_RDNA4``; accelerated mixed-sign int8 dot products → ``AMD_RDNA3``; else ``AMD_RDNA2``). Which
class a processor family falls into is the rule's data (``params.families``); the matcher finds the
``return`` that produces that class (with its condition) and counts the code paths that test it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, hit, params_object, rule_problem
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

MAX_USES = 3
_STRING_OR_COMMENT = re.compile(r'"(\\.|[^"\\])*"|//.*')
_IF = re.compile(r"\s*(\}\s*else\s+)?if\s*\(")


def _function_body(lines: list[str], start: int) -> int:
    """Index of the line that closes the function whose signature is at ``start`` (brace depth)."""
    depth, opened = 0, False
    for i in range(start, len(lines)):
        code = _STRING_OR_COMMENT.sub("", lines[i])
        depth += code.count("{") - code.count("}")
        opened = opened or "{" in code
        if opened and depth <= 0:
            return i
    return len(lines) - 1


def _enclosing_if(lines: list[str], start: int, at: int) -> int | None:
    """Index of the innermost ``if (`` whose block encloses line ``at`` (None: the function body itself).

    Walking back, a line's ``{`` comes before its ``}`` (``} else if (…) {`` opens a block first)."""
    depth = 0
    for j in range(at - 1, start, -1):
        code = _STRING_OR_COMMENT.sub("", lines[j])
        depth -= code.count("{")
        if depth < 0:
            if _IF.match(lines[j]):
                return j
            depth = 0
        depth += code.count("}")
    return None


class VulkanArchitecture:
    name = "vulkan-architecture"
    params_schema = params_object(
        ["function", "enum", "families"],
        {
            "function": {"type": "string"},
            "enum": {"type": "string"},
            "families": {"type": "object", "additionalProperties": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"}},
        },
    )
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        families = rule.params.get("families")
        if not isinstance(families, dict) or not families:
            raise rule_problem(rule, "params.families must map processor families to classes")

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        function, enum = rule.params["function"], rule.params["enum"]
        signature = re.compile(rf"\b{re.escape(enum)}\s+{re.escape(function)}\s*\(")
        returns_re = re.compile(rf"return\s+{re.escape(enum)}::(\w+)\s*;")
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            start = next((i for i, line in enumerate(lines) if signature.search(line)), None)
            if start is None:
                continue
            end = _function_body(lines, start)
            returns = []
            for i in range(start, end + 1):
                found = returns_re.search(lines[i])
                if not found:
                    continue
                cond = _enclosing_if(lines, start, i)
                entry = {**hit(path, i + 1, lines[i]), "class": found.group(1)}
                if cond is not None:
                    entry["condition"] = hit(path, cond + 1, lines[cond])
                returns.append(entry)
            classes = sorted({r["class"] for r in returns})
            uses: dict[str, dict[str, Any]] = {}
            # one pass over the file (ggml-vulkan.cpp: ~16,000 lines) with one regex of all the classes, not a
            # compile-cache lookup, comment strip and search per line and class (0.39 s of a 0.49 s live scan)
            any_class = (
                re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(classes, key=len, reverse=True))) + r")\b")
                if classes
                else None
            )
            for i, line in enumerate(lines):
                if start <= i <= end or any_class is None or any_class.search(line) is None:
                    continue
                named = {m.group(0) for m in any_class.finditer(line.split("//", 1)[0])}
                for cls in classes:
                    if cls in named:
                        entry = uses.setdefault(cls, {"count": 0, "hits": []})
                        entry["count"] += 1
                        if len(entry["hits"]) < MAX_USES:
                            entry["hits"].append(hit(path, i + 1, line))
            return {"function": hit(path, start + 1, lines[start]), "returns": returns, "uses": uses}
        raise NoMatch(f"no {enum} {function}() in {', '.join(paths)}")

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        proc = catalog.processor(target.processor)
        cls = rule.params["families"].get(proc.family)
        fn = Hit.from_json(facts["function"], "classifies AMD devices from Vulkan properties, not gfx names")
        ret = next((r for r in facts["returns"] if r["class"] == cls), None)
        if cls is None or ret is None:
            why = f"no class for family {proc.family}" if cls is None else f"{cls} is not produced at this version"
            return Finding(
                Status.ALLOWED, f"ggml-vulkan: {why}; {target.processor} runs the generic Vulkan paths", (fn,)
            )
        uses = facts["uses"].get(cls, {"count": 0, "hits": []})
        hits = [Hit.from_json(ret, f"{proc.family} → {cls}")]
        if "condition" in ret:
            hits.insert(0, Hit.from_json(ret["condition"], "the condition of that class"))
        hits += [Hit.from_json(h, f"uses {cls}") for h in uses["hits"][:2]]
        summary = (
            f"ggml-vulkan classifies {target.processor} ({proc.family}) as {cls} "
            f"({facts['function']['text'].split('(')[0].split()[-1]}); {uses['count']} line(s) outside the classifier use {cls}"
        )
        return Finding(Status.ALLOWED, summary, tuple(hits))


MATCHER: Matcher = VulkanArchitecture()
