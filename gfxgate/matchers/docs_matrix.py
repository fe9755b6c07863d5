"""The ROCm compatibility matrix: ``docs/compatibility/compatibility-matrix.rst``.

The matrix is a reStructuredText ``csv-table``; its header names one column per ROCm version and
the rows under "GPU / LLVM target" list the supported targets. The column of the scanned tag's
version decides (rocm-6.3.3 → "6.3.3"); footnote markers (``gfx942 [#mi300_620]_``) are ignored.
"""

from __future__ import annotations

import csv
import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


def _cells(line: str) -> list[str]:
    return next(csv.reader([line.strip()], skipinitialspace=True))


def _clean(cell: str) -> str:
    return re.sub(r"\s*\[#[^\]]*\]_", "", cell).strip()


class DocsMatrix:
    name = "docs-matrix"
    # ``row``: a regex over the label cell; ``version_from_ref``: the column's version in the scanned ref
    regexes = RegexParams(row=None, version_from_ref=r"(\d+\.\d+(?:\.\d+)?)")
    params_schema = params_object(["row"], regexes.schema)

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        row_label = rule.params["row"]
        rx = self.regexes.compile(rule)
        row_rx = rx["row"]
        match = rx["version_from_ref"].search(source.ref)
        version = match.group(1) if match else None
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            header_line, versions = None, []
            for number, line in enumerate(lines, 1):
                stripped = line.strip()
                if stripped.startswith(":header:"):
                    header_line, versions = number, [_clean(c) for c in _cells(stripped[len(":header:") :])][1:]
                    continue
                if header_line is None or not stripped or not row_rx.search(_cells(stripped)[0]):
                    continue  # the row is found by its label, the table's first cell
                if version in versions:
                    column, chosen = versions.index(version), version
                else:
                    column, chosen = 0, versions[0] if versions else None
                listed = []
                for offset, row in enumerate(lines[number - 1 :]):
                    cells = _cells(row) if row.strip() else []
                    if offset and (
                        not cells
                        or cells[0].strip()
                        or not any(c.strip() for c in cells[1:])
                        or cells[1].startswith("..")
                    ):
                        break
                    value = _clean(cells[column + 1]) if len(cells) > column + 1 else ""
                    if value:
                        listed.append({**hit(path, number + offset, row), "target": value})
                return {
                    "version": chosen,
                    "version_wanted": version,
                    "versions": versions,
                    "header": hit(path, header_line, lines[header_line - 1]),
                    "row": hit(path, number, line),
                    "listed": listed,
                }
        raise NoMatch(f"no csv-table row {row_label!r} in {', '.join(paths)}")

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        version = facts["version"]
        note = (
            ""
            if facts["version"] == facts["version_wanted"]
            else f" (tag names {facts['version_wanted']}; newest column used)"
        )
        names = [entry["target"] for entry in facts["listed"]]
        for entry in facts["listed"]:
            if entry["target"].split(":")[0] == target.processor:
                return Finding(
                    Status.ALLOWED,
                    f"listed for ROCm {version}{note}",
                    (Hit.from_json(facts["row"]), Hit.from_json(entry, f"column ROCm {version}")),
                )
        return Finding(
            Status.BLOCKED,
            f"not listed for ROCm {version}{note} (listed: {', '.join(names)})",
            (
                Hit.from_json(facts["header"], "ROCm versions"),
                Hit.from_json(facts["row"], f"{target.processor} absent from this column"),
            ),
            remedy=fill(rule.remedy, target),
        )


MATCHER: Matcher = DocsMatrix()
