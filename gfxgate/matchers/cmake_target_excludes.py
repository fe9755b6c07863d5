"""Per-target project exclusions declared by a CMake function call (TheRock's ``cmake/therock_amdgpu_targets.cmake``):

    therock_add_amdgpu_target(gfx900 "Vega 10 / MI25" FAMILY dgpu-all gfx900-dgpu
      EXCLUDE_TARGET_PROJECTS
        hipBLASLt # https://github.com/ROCm/TheRock/issues/1062
        composable_kernel # …
    )

One call per target (``function``, its first argument the target); the words after the ``keyword`` up to the next
upper-case keyword or the closing parenthesis are the projects the build leaves out for that target (``#`` comments
dropped). A target is allowed when it is declared and none of the ``needed`` projects is excluded (the summary names
what is excluded), blocked when a needed project is excluded or the target is not declared at all.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_WORD = re.compile(r"[A-Za-z0-9_.+-]+")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_KEYWORD = re.compile(r"^[A-Z][A-Z0-9_]*$")  # the next keyword argument (FAMILY, …) ends the list
MAX_CALL_LINES = 200  # a call longer than this is not one declaration: the file is not what the rule expects


class CmakeTargetExcludes:
    name = "cmake-target-excludes"
    params_schema = params_object(
        ["function", "needed"],
        {
            "function": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "keyword": {"type": "string", "pattern": "^[A-Z][A-Z0-9_]*$"},
            "needed": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "minLength": 1},
            },
        },
    )

    def check_params(self, rule: MatcherRule) -> None:  # no regex params: the schema checks them all
        return None

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        function = rule.params["function"]
        keyword = rule.params.get("keyword", "EXCLUDE_TARGET_PROJECTS")
        start = re.compile(r"^\s*" + re.escape(function) + r"\s*\(\s*([A-Za-z0-9_]+)")
        targets: list[dict[str, Any]] = []
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            index = 0
            while index < len(lines):
                found = start.match(lines[index])
                if not found:
                    index += 1
                    continue
                first, words, end, depth = index, [], index, 0
                for end in range(index, min(len(lines), index + MAX_CALL_LINES)):
                    code = _QUOTED.sub(" ", lines[end]).split("#", 1)[0]  # "Vega (10)" and comments are no syntax
                    depth += code.count("(") - code.count(")")
                    words += _WORD.findall(code.split("(", 1)[1] if end == index else code)
                    if depth <= 0:
                        break
                else:
                    raise NoMatch(f"{path}:{first + 1}: {function}( not closed within {MAX_CALL_LINES} lines")
                excluded: list[str] = []
                if keyword in words:
                    for word in words[words.index(keyword) + 1 :]:
                        if _KEYWORD.match(word):
                            break
                        excluded.append(word)
                targets.append({**hit(path, first + 1, lines[first]), "target": found.group(1), "excluded": excluded})
                index = end + 1
        if not targets:
            raise NoMatch(f"no {function}( call in {', '.join(paths)}")
        return {"targets": targets}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        needed = rule.params["needed"]
        mine = [t for t in facts["targets"] if t["target"] == target.processor]
        if not mine:
            declared = sorted({t["target"] for t in facts["targets"]})
            first = facts["targets"][0]
            return Finding(
                Status.BLOCKED,
                f"{target.processor} is not declared (declared: {', '.join(declared)})",
                (Hit.from_json(first, f"{target.processor} absent"),),
                remedy=fill(rule.remedy, target),
            )
        row = mine[0]
        out = [p for p in needed if p in row["excluded"]]
        if out:
            return Finding(
                Status.BLOCKED,
                f"excludes {', '.join(out)} for {target.processor}",
                (Hit.from_json(row, f"excluded: {', '.join(row['excluded'])}"),),
                remedy=fill(rule.remedy, target),
            )
        also = f"; excludes {', '.join(row['excluded'])}" if row["excluded"] else ""
        return Finding(
            Status.ALLOWED,
            f"builds {', '.join(needed)} for {target.processor}{also}",
            (Hit.from_json(row, f"excluded: {', '.join(row['excluded']) or 'nothing'}"),),
        )


MATCHER: Matcher = CmakeTargetExcludes()
