"""Default target lists in presets plus a pass-through for a user's own list (ollama >= v0.30).

From v0.30 Ollama builds llama.cpp's ``llama-server`` from ``llama/server/``: a release preset
(``rocm_v7_2_linux``) carries the default ``AMDGPU_TARGETS``, and ``cmake/local.cmake`` switches to a
``*_user_arch`` preset (no list of its own) when the user sets ``AMDGPU_TARGETS`` or
``CMAKE_HIP_ARCHITECTURES`` — there is no filter any more. So a target in the default list is built;
any other target is built when the user names it: override-required, with the configure command the
version documents (``docs/development.md``), the architecture replaced by the target.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex_params, fill, hit, params_object, replaced
from gfxgate.matchers.command_target_list import MATCHER as COMMAND_LISTS
from gfxgate.matchers.json_target_list import MATCHER as JSON_LISTS
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


class PresetPassthrough:
    name = "preset-passthrough"
    # the default list comes from a presets file (presets_file + presets) or a command line (list_pattern)
    params_schema = params_object(
        ["variable", "selector", "user_variables"],
        {
            "presets_file": {"type": "string"},
            "variable": {"type": "string"},
            "presets": {"type": "string"},
            "list_pattern": {"type": "string", "pattern": "\\(\\?P<list>"},
            "list_label": {"type": "string"},
            "selector": {"type": "string"},
            "selector_note": {"type": "string"},
            "user_variables": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "command": {"type": "string", "pattern": "\\(\\?P<arch>"},
            "configure": {"type": "string", "pattern": "\\{target\\}"},
            "build": {"type": "string"},
        },
        oneOf=[{"required": ["presets_file", "presets"]}, {"required": ["list_pattern"]}],
    )
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        check_regex_params(rule, "presets", "list_pattern", "selector", "command")

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        presets_file = rule.params.get("presets_file")
        if presets_file is not None:
            if presets_file not in paths:
                raise NoMatch(f"{presets_file} not found")
            lists_rule = replaced(rule, params={"variable": rule.params["variable"], "presets": rule.params["presets"]})
            lists = JSON_LISTS.extract(lists_rule, source, [presets_file])
        else:
            lists_rule = replaced(
                rule,
                params={
                    "variable": rule.params["variable"],
                    "pattern": rule.params["list_pattern"],
                    **({"label": rule.params["list_label"]} if "list_label" in rule.params else {}),
                },
            )
            lists = COMMAND_LISTS.extract(lists_rule, source, paths)
        selector = rule_regex(rule.params["selector"])
        user_vars = rule.params["user_variables"]
        command = rule_regex(rule.params["command"]) if "command" in rule.params else None
        facts: dict[str, Any] = {**lists, "selector": None, "user_checks": [], "command": None}
        for path in paths:
            if path == presets_file:
                continue
            for number, line in enumerate((source.read_text(path) or "").splitlines(), start=1):
                if facts["selector"] is None and selector.search(line):
                    facts["selector"] = hit(path, number, line)
                if any(re.search(rf"\b{re.escape(v)}\b", line) for v in user_vars) and "is_set" in line:
                    facts["user_checks"].append(hit(path, number, line))
                if command and facts["command"] is None:
                    found = command.search(line)
                    if found:
                        facts["command"] = {
                            **hit(path, number, line),
                            "command": found.group(0).strip(),
                            "arch": found.group("arch"),
                        }
        if facts["selector"] is None:
            raise NoMatch(
                f"no line matching /{rule.params['selector']}/ (the user-arch preset switch) in "
                + ", ".join(p for p in paths if p != presets_file)
            )
        return facts

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        lists_rule = replaced(rule, remedy=None)
        default = JSON_LISTS.evaluate(
            lists_rule, {"variable": facts["variable"], "lists": facts["lists"]}, target, catalog
        )
        presets = ", ".join(entry["preset"] for entry in facts["lists"])
        note = rule.params.get("selector_note") or "a user list selects the *_user_arch preset, which passes it through"
        switch = Hit.from_json(facts["selector"], note)
        if default.status == Status.ALLOWED:
            return Finding(
                Status.ALLOWED,
                f"in the default list of {presets}; a user list passes through",
                default.hits + (switch,),
            )
        backend = re.sub(r"_(linux|windows)$", "", facts["lists"][0]["preset"])
        if facts["command"]:
            cmd = facts["command"]
            configure = re.sub(re.escape(cmd["arch"]) + r"\b", str(target.processor), cmd["command"], count=1)
            where = Hit.from_json(cmd, "the configure command this version documents")
        elif "configure" in rule.params:  # this version documents no command: the rule's, e.g. the release's own
            configure = fill(rule.params["configure"], target)
            where = None
        else:
            configure = f"cmake -B build . -DOLLAMA_LLAMA_BACKENDS={backend} -DAMDGPU_TARGETS={target.processor}"
            where = None
        hits = default.hits[:1] + (switch,) + ((where,) if where else ())
        summary = (
            f"not in the default list of {presets}; building from source with your own list passes it "
            f"through (no filter): {configure}"
        )
        return Finding(
            Status.OVERRIDE_REQUIRED, summary, hits, remedy=f"{configure} && {_build_command(rule, configure)}"
        )


def _build_command(rule: MatcherRule, configure: str) -> str:
    """The build step after ``configure``: the rule's ``build`` (e.g. the release's own), else the ``-B`` folder."""
    if "build" in rule.params:
        return rule.params["build"]
    folder = re.search(r"-B\s*(\S+)", configure)
    return f"cmake --build {folder.group(1) if folder else 'build'}"


MATCHER: Matcher = PresetPassthrough()
