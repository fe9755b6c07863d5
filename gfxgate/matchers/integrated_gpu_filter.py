"""Integrated-GPU admission in Ollama's discovery (``filterIntegratedGPUs``, ollama >= v0.30).

Ollama drops integrated GPUs (APUs) unless ``OLLAMA_IGPU_ENABLE=1``; a Go map can name ROCm targets
kept by default (``defaultIntegratedROCmGFXTargets``: gfx1151 at v0.31+). Whether a processor is an
APU is catalog data (``integrated: true`` in rules/targets.yaml), not guessed from its name.

The log line of a dropped device named the variable only from v0.30.0-rc32 ("dropping integrated GPU; to
enable, set OLLAMA_IGPU_ENABLE=1"); from rc28 to rc31 it said "dropping integrated GPU". ``switch`` (a regex)
finds the line that reads the variable (``EnableIntegratedGPU = BoolWithDefault("OLLAMA_IGPU_ENABLE")`` in
envconfig/config.go), so the evidence names the switch whatever the message says.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.matchers.go_source import find_go
from gfxgate.saferegex import rule_regex
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


class IntegratedGpuFilter:
    name = "integrated-gpu-filter"
    regexes = RegexParams(function=None, message=None, switch=None)
    params_schema = params_object(["function", "message"], {**regexes.schema, "default_allowed": {"type": "string"}})
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        rx = self.regexes.compile(rule)
        function, message, switch = rx["function"], rx["message"], rx["switch"]
        allowed_var = rule.params.get("default_allowed")
        facts: dict[str, Any] = {
            "function": None,
            "message": None,
            "allowed": None,
            "allowed_targets": [],
            "switch": None,
        }
        for path in paths:
            raw = source.read(path) or b""
            text = raw.decode("utf-8", "replace")
            lines = text.splitlines()
            if facts["function"] is None and rule_regex(function.pattern.strip("^$")).search(text):
                found = find_go(raw, "function", function)
                if found:
                    line, name, _ = found[0]
                    facts["function"] = {**hit(path, line, lines[line - 1]), "name": name}
            if facts["message"] is None:
                found = find_go(raw, "string", message) if message.search(text) else []
                if found:
                    line, literal, func = found[0]
                    facts["message"] = {**hit(path, line, lines[line - 1]), "literal": literal, "in": func}
            if switch and facts["switch"] is None and switch.search(text):
                line = next(i for i, text_line in enumerate(lines, 1) if switch.search(text_line))
                facts["switch"] = hit(path, line, lines[line - 1])
            if allowed_var and facts["allowed"] is None:
                start = next(
                    (i for i, line in enumerate(lines) if re.match(rf"^\s*var\s+{re.escape(allowed_var)}\s*=", line)),
                    None,
                )
                if start is not None:
                    targets = []
                    for var_line in lines[start:]:
                        targets += re.findall(r'"(gfx[0-9a-f]+)"\s*:', var_line)
                        if var_line.startswith("}"):
                            break
                    facts["allowed"] = hit(path, start + 1, lines[start])
                    facts["allowed_targets"] = targets
        if facts["function"] is None or facts["message"] is None:
            raise NoMatch(
                f"no Go function /{rule.params['function']}/ with the message /{rule.params['message']}/ "
                f"in {len(paths)} file(s)"
            )
        if switch and facts["switch"] is None:
            raise NoMatch(
                f"no line matching /{rule.params['switch']}/ (the variable that admits integrated GPUs) "
                f"in {len(paths)} file(s)"
            )
        return facts

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        proc = catalog.processor(target.processor)
        name = facts["function"]["name"]
        fn = Hit.from_json(facts["function"], f"in {facts['message']['in']}()" if facts["message"]["in"] else "")
        msg = Hit.from_json(facts["message"], "the log line of a dropped device")
        if not proc.integrated:
            return Finding(Status.ALLOWED, f"discrete GPU: {name} drops only integrated GPUs", (fn,))
        if target.processor in facts["allowed_targets"]:
            kept = Hit.from_json(facts["allowed"], f"lists {target.processor}")
            return Finding(
                Status.ALLOWED, f"integrated GPU kept by default ({name}: {target.processor} is listed)", (kept, fn)
            )
        remedy = fill(rule.remedy, target) or "OLLAMA_IGPU_ENABLE=1"
        switch = (
            (Hit.from_json(facts["switch"], "the variable that admits integrated GPUs"),) if facts.get("switch") else ()
        )
        return Finding(
            Status.OVERRIDE_REQUIRED,
            f"integrated GPU ({proc.codename or proc.name}): dropped by {name} unless OLLAMA_IGPU_ENABLE=1",
            (msg, fn) + switch,
            remedy=remedy,
        )


MATCHER: Matcher = IntegratedGpuFilter()
