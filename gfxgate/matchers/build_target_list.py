"""A default GPU target list in a build script or Makefile, and whether a user can replace it.

Before CMake presets (ollama < v0.5.8) the ROCm targets of a build were a shell array
(``GPU_LIST=( "gfx900" … )`` in ``llm/generate/gen_linux.sh``) or make variables (``HIP_ARCHS_COMMON :=
gfx900 …`` in ``Makefile.rocm``). ``lists`` says where a list starts (``start``) and, for a list over several
lines, where it ends (``end``); the first file of the rule's paths that has a list is the one the build uses.
``override`` is the construct that lets a user build their own list (``AMDGPU_TARGETS`` in ``amdGPUs()``,
``HIP_ARCHS?=``): a target that is not listed is then *override-required* with the rule's remedy; without one
(or without the param) it is *blocked*, and its remedy is ``fixed_list_remedy`` when the rule has one (edit the list
itself: the rule's remedy names a user list this release does not read). A list entry such as ``gfx906:xnack-`` covers xnack-off devices only
(*partial*; *override-required* where a user list can name the other modes). No list in any file: the rule's ``absent`` decides (no ROCm build at that release), else no match — and no
match either when a file of ``defer_to`` (another build system, e.g. ``CMakeLists.txt``, which other rules read) is
there: its absence of a list says nothing then.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.errors import TargetError
from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, fill, hit, params_object, rule_problem
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_ENTRY = re.compile(r"\bgfx[0-9a-f]{3,4}(?::[a-z]+[+-])*")
MAX_LIST_LINES = 200  # a list that never ends is not a list


class BuildTargetList:
    name = "build-target-list"
    params_schema = params_object(
        ["lists", "what"],
        {
            "lists": {
                "type": "array",
                "minItems": 1,
                "items": {
                    "type": "object",
                    "required": ["start"],
                    "additionalProperties": False,
                    "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
                },
            },
            "what": {"type": "string"},
            "override": {"type": "string"},
            "defer_to": {"type": "array", "items": {"type": "string"}},
            "fixed_list_remedy": {"type": "string"},
            # only the first list found, trying ``lists`` in order: a file that keeps one list per version
            # (rocBLAS's TARGET_LIST_ROCM_5.6 … _6.3) builds the one its version selects, not all of them
            "first_list": {"type": "boolean"},
        },
    )
    reads_substitution = True  # a coupled source read at another release decides nothing (evaluate)
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        patterns = [
            (f"lists[{i}].{key}", spec[key])
            for i, spec in enumerate(rule.params.get("lists") or ())
            for key in ("start", "end")
            if key in spec
        ]
        if "override" in rule.params:
            patterns.append(("override", rule.params["override"]))
        stray = [p for p in rule.params.get("defer_to") or () if p not in rule.paths]
        if stray:
            raise rule_problem(rule, f"params.defer_to: {', '.join(stray)} must be in the rule's paths")
        for key, pattern in patterns:
            check_regex(rule, f"params.{key}", pattern)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        override = rule_regex(rule.params["override"]) if "override" in rule.params else None
        defer = [p for p in paths if p in (rule.params.get("defer_to") or ())]
        for path in (p for p in paths if p not in defer):
            lines = (source.read_text(path) or "").splitlines()
            entries = []
            for spec in rule.params["lists"]:
                start = rule_regex(spec["start"])
                end = rule_regex(spec["end"]) if "end" in spec else None
                for i, line in enumerate(lines):
                    if not start.search(line):
                        continue
                    span = range(i, min(len(lines), i + MAX_LIST_LINES)) if end else range(i, i + 1)
                    for j in span:
                        text = lines[j].split("#", 1)[0]
                        entries += [{**hit(path, j + 1, lines[j]), "target": m.group(0)} for m in _ENTRY.finditer(text)]
                        if end and j > i and end.search(lines[j]):
                            break
                    if rule.params.get("first_list") and entries:
                        break
                if rule.params.get("first_list") and entries:
                    break
            if not entries:
                continue
            found = next(
                (hit(path, n + 1, line) for n, line in enumerate(lines) if override and override.search(line)), None
            )
            return {"path": path, "entries": entries, "override": found}
        if defer:  # another build system is there: its own rules decide, this one does not say "no ROCm build"
            raise NoMatch(f"no GPU target list in a build script; {', '.join(defer)} builds this release")
        if rule.absent is not None:
            return {"absent": list(paths)}
        raise NoMatch(f"no GPU target list in {', '.join(paths)}")

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        what = rule.params["what"]
        proc = catalog.processor(target.processor)
        modes = [catalog.parse(s) for s in catalog.spellings(target) if s.count(":") == len(proc.features)]
        covering: list[dict[str, Any]] = []
        covered = set()
        for entry in facts["entries"]:
            try:
                code = catalog.parse(entry["target"])
            except TargetError:  # an entry gfxgate does not know cannot be this target
                continue
            runs = {str(m) for m in modes if catalog.compatibility(code, m).runs}
            if runs:
                covering.append(entry)
                covered |= runs
        listed = ", ".join(dict.fromkeys(e["target"] for e in covering))
        if facts.get("read_instead"):  # another release's list says nothing about this one's
            where = f"as {listed}" if covered else f"not {target.processor}"
            return Finding(
                Status.UNKNOWN,
                f"{what} of another release lists {where} ({facts['read_instead']})",
                tuple(Hit.from_json(e) for e in (covering or facts["entries"][:1])),
            )
        if covered and len(covered) == len(modes):
            return Finding(Status.ALLOWED, f"in {what} ({listed})", tuple(Hit.from_json(e) for e in covering))
        remedy = fill(rule.remedy, target)
        if not facts.get("override") and "fixed_list_remedy" in rule.params:  # this release reads no user list
            remedy = fill(rule.params["fixed_list_remedy"], target)
        if covered:
            only = ", ".join(sorted(covered))
            hits = tuple(Hit.from_json(e) for e in covering)
            if facts.get("override"):  # the other modes need your own list, as an unlisted target does
                return Finding(
                    Status.OVERRIDE_REQUIRED,
                    f"in {what} as {listed} (only {only} devices); other modes only with your own list",
                    hits + (Hit.from_json(facts["override"], "a user list replaces the default"),),
                    remedy=remedy,
                )
            return Finding(Status.PARTIAL, f"in {what} as {listed}: only {only} devices", hits, remedy=remedy)
        first = facts["entries"][0]
        first_hit = Hit.from_json(first, f"the first entry of {what}; {target.processor} is not in it")
        if facts.get("override"):
            return Finding(
                Status.OVERRIDE_REQUIRED,
                f"not in {what}; built only with your own list",
                (first_hit, Hit.from_json(facts["override"], "a user list replaces the default")),
                remedy=remedy,
            )
        return Finding(
            Status.BLOCKED,
            f"not in {what}" + (" (and no way to give your own list)" if "override" in rule.params else ""),
            (first_hit,),
            remedy=remedy,
        )


MATCHER: Matcher = BuildTargetList()
