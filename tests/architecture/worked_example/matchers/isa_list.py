"""A C/C++ array of target-ID rows (``{"gfx900", ...}``): a target is allowed when a row names its processor.

The worked example of ARCHITECTURE.md: a new gate layer with a new matcher. The test puts this folder on
``gfxgate.matchers.__path__``; in the project it would be ``gfxgate/matchers/isa_list.py``.
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

_ROW = re.compile(r'^\s*\{\s*"(gfx[0-9a-f]+)(?::[^"]*)?"')


class IsaList:
    name = "isa-list"
    params_schema = params_object(["array"], {"array": {"type": "string"}})

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        array = rule.params["array"]
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            start = next((i for i, line in enumerate(lines) if re.search(rf"\b{re.escape(array)}\s*\[\]", line)), None)
            if start is None:
                continue
            rows = []
            for number in range(start + 1, len(lines)):
                if lines[number].strip().startswith("};"):
                    break
                m = _ROW.match(lines[number])
                if m:
                    rows.append({**hit(path, number + 1, lines[number]), "processor": m.group(1)})
            return {"array": array, "declared": hit(path, start + 1, lines[start]), "rows": rows}
        raise NoMatch(f"no array {array}[] in {', '.join(paths)}")

    def evaluate(self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog) -> Finding:
        rows = [r for r in facts["rows"] if r["processor"] == target.processor]
        if rows:
            return Finding(Status.ALLOWED, f"{facts['array']} lists {target.processor}", tuple(Hit.from_json(r) for r in rows))
        return Finding(Status.BLOCKED, f"{facts['array']} has no row for {target.processor}",
                       (Hit.from_json(facts["declared"]),), fill(rule.remedy, target))


MATCHER: Matcher = IsaList()
