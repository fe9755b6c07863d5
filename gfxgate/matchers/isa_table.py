"""The HIP runtime's table of the ISAs it supports: clr's ``rocclr/device/device.cpp`` ``supportedIsas_[]``.

Each row is ``{"gfx1030", "gfx1030", true, true, 10, 3, 0, …}``: the target ID, the HSAIL name, then whether the ROCm
runtime (``ROC``) and the PAL runtime support it. A code object for an ISA that has no row with ROC ``true`` is one
the ROCm of that version cannot load, so a build for it against that ROCm cannot run (gfx1200 has no row before
rocm-6.2.0). ``support_column`` is the 0-based column of the ROC flag. A row's features (``gfx90a:xnack-``) do not
matter here: a processor with any ROCm row is one this ROCm runs.

Read at another ROCm than the release's (the coupling could not read the release's tag: clr tags end at rocm-6.2.2),
a missing row is no evidence against the target (a newer runtime may have it): the cell is then unknown, and says
which ROCm was read instead (``read_instead``, filled by the engine from the coupling's note).
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

_ROW = re.compile(r'^\s*\{\s*"(?P<id>gfx[0-9a-f]+)(?::[^"]*)?"\s*,(?P<rest>[^}]*)\}')


def _table(text: str, declaration: re.Pattern[str]) -> tuple[tuple[int, str], list[tuple[int, str]]] | None:
    """The declaration line of the array (number, text) and its body's numbered lines up to ``};``, or None."""
    numbered = list(enumerate(text.splitlines(), start=1))
    start = next((i for i, (_, line) in enumerate(numbered) if declaration.search(line)), None)
    if start is None:
        return None
    body = []
    for number, line in numbered[start + 1 :]:
        if line.strip().startswith("};"):
            break
        body.append((number, line))
    return numbered[start], body


class IsaTable:
    name = "isa-table"
    params_schema = params_object(
        ["array", "support_column"], {"array": {"type": "string"}, "support_column": {"type": "integer", "minimum": 1}}
    )
    reads_substitution = True  # evaluate() sees facts["read_instead"] when the coupling read another ref

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        array, column = rule.params["array"], rule.params["support_column"]
        declaration = re.compile(rf"\b{re.escape(array)}\s*\[\s*\]\s*=")
        for path in paths:
            table = _table(source.read_text(path) or "", declaration)
            if table is None:
                continue
            (number, text), body = table
            rows = [
                self._row(path, row_number, line, m, column, array)
                for row_number, line in body
                if (m := _ROW.match(line))
            ]
            if not rows:
                raise NoMatch(f"{path}: {array}[] has no target rows")
            return {"array": array, "ref": source.ref, "declared": hit(path, number, text), "rows": rows}
        raise NoMatch(f"no array {array}[] in {', '.join(paths)}")

    @staticmethod
    def _row(path: str, number: int, line: str, m: re.Match[str], column: int, array: str) -> dict[str, Any]:
        cells = [c.strip() for c in m.group("rest").split(",")]
        if len(cells) < column:
            raise NoMatch(f"{path}:{number}: a {array} row with no column {column}")
        return {**hit(path, number, line), "processor": m.group("id"), "rocm": cells[column - 1] == "true"}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        rows = [r for r in facts["rows"] if r["processor"] == target.processor]
        runs = [r for r in rows if r["rocm"]]
        ref = facts.get("ref") or "this ROCm"
        if runs:
            return Finding(
                Status.ALLOWED,
                f"the HIP runtime of {ref} supports {target.processor} ({facts['array']})",
                tuple(Hit.from_json(r, "ROCm runtime: supported") for r in runs[:3]),
            )
        if rows:
            why, hits = (
                f"{target.processor} is in {facts['array']} but not for the ROCm runtime",
                tuple(Hit.from_json(r, "ROCm runtime: not supported") for r in rows[:3]),
            )
        else:
            why, hits = (
                f"{facts['array']} has no row for {target.processor}",
                (Hit.from_json(facts["declared"], f"no {target.processor} row"),),
            )
        if facts.get("read_instead"):
            return Finding(
                Status.UNKNOWN,
                f"{why} at {ref}, read because the release's own ROCm cannot be "
                f"({facts['read_instead']}): a newer runtime may support it",
                hits,
            )
        return Finding(
            Status.BLOCKED,
            f"{why}: ROCm {ref.removeprefix('rocm-')} cannot run code built for it",
            hits,
            fill(rule.remedy, target),
        )


MATCHER: Matcher = IsaTable()
