"""GPU support tables in Markdown documentation (ROCm 5.6–6.0: ``| Name | Architecture | LLVM Target | Support |``).

Every table whose header has a cell matching ``column`` is read; a row's support cell matches ``supported``
(✅, "Supported") or ``unsupported`` (❌, "Unsupported").
A target is allowed when some row lists it as supported, blocked when rows list it only as unsupported
or no row lists it at all. ``listed_means_supported``: a table with no support column whose rows are the supported
targets (Ollama's docs: "the known supported GPU types on linux are the following LLVM Targets"). ``unmarked``
(``{status, summary}``): what a row listing the target with neither mark decides (TheRock's SUPPORTED_GPUS.md: an
empty *Sanity Tested* cell is "built, not tested"), instead of unknown.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _name(cell: str) -> str:
    """A target cell without Markdown emphasis (TheRock bolds its current focus: ``**gfx1201**``)."""
    return cell.strip("*_ ")


class MarkdownTable:
    name = "markdown-table"
    regexes = RegexParams(column=None, support_column=r"^Support$", supported="✅", unsupported="❌")
    params_schema = params_object(
        ["column"],
        {
            **regexes.schema,
            "listed_means_supported": {"type": "boolean"},
            "unmarked": {
                "type": "object",
                "required": ["status", "summary"],
                "additionalProperties": False,
                "properties": {"status": {"$ref": "#/$defs/status"}, "summary": {"type": "string", "minLength": 1}},
            },
        },
    )

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        rx = self.regexes.compile(rule)
        column, support, yes, no = rx["column"], rx["support_column"], rx["supported"], rx["unsupported"]
        listed = bool(rule.params.get("listed_means_supported"))
        rows, headers = [], []
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            index = 0
            while index < len(lines):
                line = lines[index]
                cells = _cells(line) if line.lstrip().startswith("|") else []
                target_col = next((i for i, c in enumerate(cells) if column.search(c)), None)
                if target_col is None:
                    index += 1
                    continue
                support_col = next((i for i, c in enumerate(cells) if support.search(c)), None)
                headers.append(hit(path, index + 1, line))
                index += 2  # the header and its |:---| separator
                while index < len(lines) and lines[index].lstrip().startswith("|"):
                    row = _cells(lines[index])
                    if len(row) > target_col and row[target_col]:
                        mark = row[support_col] if support_col is not None and len(row) > support_col else ""
                        state = "yes" if listed or yes.search(mark) else "no" if no.search(mark) else "unknown"
                        rows.append(
                            {**hit(path, index + 1, lines[index]), "target": row[target_col], "supported": state}
                        )
                    index += 1
        if not rows:
            raise NoMatch(f"no Markdown table with a /{rule.params['column']}/ column in {', '.join(paths)}")
        return {"headers": headers, "rows": rows}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        mine = [r for r in facts["rows"] if _name(r["target"]).split(":")[0] == target.processor]
        supported = [r for r in mine if r["supported"] == "yes"]
        if supported:
            return Finding(
                Status.ALLOWED,
                f"listed as supported ({len(supported)} product row(s))",
                tuple(Hit.from_json(r, "supported") for r in supported[:3]),
            )
        unsupported = [r for r in mine if r["supported"] == "no"]
        if unsupported:
            return Finding(
                Status.BLOCKED,
                f"listed as not supported ({len(unsupported)} product row(s))",
                tuple(Hit.from_json(r, "not supported") for r in unsupported[:3]),
                remedy=fill(rule.remedy, target),
            )
        unmarked = rule.params.get("unmarked")
        if mine and unmarked:
            status = Status(unmarked["status"])
            return Finding(
                status,
                fill(unmarked["summary"], target),
                tuple(Hit.from_json(r, "no mark") for r in mine[:3]),
                remedy=fill(rule.remedy, target) if status != Status.ALLOWED else None,
            )
        if mine:
            return Finding(Status.UNKNOWN, "listed without a support mark", tuple(Hit.from_json(r) for r in mine[:3]))
        listed = sorted({_name(r["target"]) for r in facts["rows"] if r["supported"] == "yes"})
        return Finding(
            Status.BLOCKED,
            f"not listed (supported: {', '.join(listed)})",
            tuple(Hit.from_json(h, f"{target.processor} absent from this table") for h in facts["headers"][:3]),
            remedy=fill(rule.remedy, target),
        )


MATCHER: Matcher = MarkdownTable()
