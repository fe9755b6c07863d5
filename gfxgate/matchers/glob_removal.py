"""Packaging steps that delete artifacts: ``rm -f …/rocblas/library/*gfx90[06]*`` in a Dockerfile.

Each removal glob is matched (shell ``fnmatch`` rules, last path component) against the file
names the target's GPU libraries would have, built from the rule's ``artifacts`` templates.
"""

from __future__ import annotations

import fnmatch
import shlex
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, RegexParams, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


class GlobRemoval:
    name = "glob-removal"
    regexes = RegexParams(command=r"\brm\b")  # the lines that may remove files
    params_schema = params_object(
        ["artifacts"],
        {
            "artifacts": {"type": "array", "items": {"type": "string", "pattern": "\\{target\\}"}, "minItems": 1},
            **regexes.schema,
        },
    )

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        command = self.regexes.compile(rule)["command"]
        removals = []
        for path in paths:
            for number, line in enumerate((source.read_text(path) or "").splitlines(), 1):
                if not command.search(line):
                    continue
                try:
                    words = shlex.split(line, comments=True)
                except ValueError:
                    words = line.split()
                if "rm" not in words:
                    continue
                globs = [
                    w
                    for w in words[words.index("rm") + 1 :]
                    if not w.startswith("-") and w not in ("&&", ";", "||", "\\")
                ]
                globs = [g for g in globs if any(ch in g for ch in "*?[")]
                if globs:
                    removals.append({**hit(path, number, line), "globs": globs})
        # a scanned file without removal steps is evidence too: nothing is deleted there
        return {"removals": removals, "scanned": list(paths)}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        names = [
            template.replace("{target}", spelled.replace(":", "-"))
            for spelled in catalog.spellings(target)  # the bare name first
            for template in rule.params["artifacts"]
        ]
        removed = []
        for removal in facts["removals"]:
            for glob in removal["globs"]:
                base = glob.rsplit("/", 1)[-1]
                hits = [n for n in names if fnmatch.fnmatchcase(n, base)]
                if hits:
                    removed.append(Hit.from_json(removal, f"`{base}` removes `{hits[0]}`"))
                    break
        if removed:
            return Finding(
                Status.BLOCKED,
                f"the release deletes {target.processor} GPU library files ({removed[0].note})",
                tuple(removed),
                remedy=fill(rule.remedy, target),
            )
        shown = tuple(Hit.from_json(r, "does not match " + target.processor) for r in facts["removals"][:2])
        if not shown:
            shown = tuple(Hit(path, None, "", "no rm of a glob in this file") for path in facts["scanned"])
            return Finding(Status.ALLOWED, "no packaging step removes GPU library files", shown)
        return Finding(Status.ALLOWED, f"no removal step matches {target.processor} files", shown)


MATCHER: Matcher = GlobRemoval()
