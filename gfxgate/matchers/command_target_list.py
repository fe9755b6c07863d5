"""Target lists given on a command line: a Dockerfile's ``cmake -S llama/server --preset rocm -DAMDGPU_TARGETS="…"``.

From ollama v0.30.0-rc0 to -rc15 the llama-server ``rocm`` preset had no ``AMDGPU_TARGETS`` of its own: the release
build passed the list on the configure command line in the Dockerfile. A shell command continued with ``\\`` is one
logical line here, so the preset name and the list may sit on different physical lines; the evidence is the line
that holds the list. The rule's ``pattern`` names the list with ``(?P<list>…)`` and, optionally, the preset the
command configures with ``(?P<name>…)``, which ``label`` may wrap (``{name} + Dockerfile -DAMDGPU_TARGETS``: the
list is not the preset's own); targets are decided as in ``json-target-list`` (xnack/sramecc modes).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, NoMatch, check_regex_params, hit, params_object
from gfxgate.matchers.json_target_list import MATCHER as JSON_LISTS
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


def logical_lines(text: str) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """Shell/Dockerfile logical lines: (joined text, [(offset in joined text, line number, physical line)])."""
    out: list[tuple[str, list[tuple[int, int, str]]]] = []
    joined, parts = "", []
    for number, line in enumerate(text.splitlines(), start=1):
        parts.append((len(joined), number, line))
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            joined += stripped[:-1] + " "
            continue
        out.append((joined + line, parts))
        joined, parts = "", []
    if parts:
        out.append((joined, parts))
    return out


class CommandTargetList:
    name = "command-target-list"
    params_schema = params_object(
        ["variable", "pattern"],
        {
            "variable": {"type": "string"},
            "pattern": {"type": "string", "pattern": "\\(\\?P<list>"},
            "label": {"type": "string"},
        },
    )
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        check_regex_params(rule, "pattern")

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        pattern = rule_regex(rule.params["pattern"])
        lists = []
        for path in paths:
            for joined, parts in logical_lines(source.read_text(path) or ""):
                found = pattern.search(joined)
                if not found:
                    continue
                start = found.start(pattern.groupindex["list"])  # RE2 takes group numbers only
                _, number, line = next(p for p in reversed(parts) if p[0] <= start)
                groups = found.groupdict()
                name = (rule.params.get("label") or "{name}").replace("{name}", groups.get("name") or path)
                lists.append(
                    {**hit(path, number, line), "preset": name, "targets": [t for t in groups["list"].split(";") if t]}
                )
        if not lists:
            raise NoMatch(f"no command line matching /{rule.params['pattern']}/ in {', '.join(paths)}")
        return {"variable": rule.params["variable"], "lists": lists}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        return JSON_LISTS.evaluate(rule, facts, target, catalog)


MATCHER: Matcher = CommandTargetList()
