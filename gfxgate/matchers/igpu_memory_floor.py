"""A VRAM floor under which Ollama's ROCm discovery takes a device for an iGPU and skips it (``IGPUMemLimit``).

From v0.1.29 to v0.12.3 ``discover/amd_linux.go`` (``gpu/amd_linux.go`` before v0.5) skips every AMD device that
reports less than ``IGPUMemLimit`` (1 GiB) of VRAM ("unsupported Radeon iGPU detected skipping"), before any gfx check
and whatever ``HSA_OVERRIDE_GFX_VERSION`` says. An APU reports its firmware carve-out (the UMA frame buffer, 512 MiB
by default on many boards) as VRAM, so it is skipped unless the carve-out is raised. Whether a processor is an APU is
catalog data (``integrated: true`` in rules/targets.yaml); a discrete card always has more than the floor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


def _value(expr: str) -> str:
    """``1 * format.GibiByte`` / ``1024 * 1024 * 1024`` as "1 GiB"; anything else as written."""
    units = {"format.GibiByte": 1 << 30, "format.MebiByte": 1 << 20, "format.KibiByte": 1 << 10}
    total = 1
    for part in expr.split("//", 1)[0].split("*"):
        part = part.strip()
        if part.isdecimal() and len(part) < 12:
            total *= int(part)
        elif part in units:
            total *= units[part]
        else:
            return expr.strip()
    if total >= 1 << 30 and total % (1 << 30) == 0:
        return f"{total >> 30} GiB"
    if total >= 1 << 20 and total % (1 << 20) == 0:
        return f"{total >> 20} MiB"
    return f"{total} bytes"


class IgpuMemoryFloor:
    name = "igpu-memory-floor"
    regexes = RegexParams(const=None, check=None)
    params_schema = params_object(["const", "check"], regexes.schema)
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        rx = self.regexes.compile(rule)
        facts: dict[str, Any] = {"const": None, "check": None}
        for path in paths:
            lines = (source.read_text(path) or "").splitlines()
            for number, line in enumerate(lines, 1):
                if facts["check"] is None and rx["check"].search(line):
                    facts["check"] = hit(path, number, line)
                found = rx["const"].search(line)
                if facts["const"] is None and found:
                    facts["const"] = {**hit(path, number, line), "value": _value(line[found.end() :])}
        if facts["check"] is None or facts["const"] is None:
            raise NoMatch(
                f"no /{rule.params['check']}/ check with its /{rule.params['const']}/ constant in {len(paths)} file(s)"
            )
        return facts

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        value = facts["const"]["value"]
        check = Hit.from_json(facts["check"], "the device is skipped as an iGPU below the floor")
        const = Hit.from_json(facts["const"], f"the floor: {value}")
        if not catalog.processor(target.processor).integrated:
            return Finding(
                Status.ALLOWED,
                f"discrete GPU: only a device reporting under {value} of VRAM is skipped as an iGPU",
                (check,),
            )
        return Finding(
            Status.OVERRIDE_REQUIRED,
            f"an integrated GPU is skipped unless it reports at least {value} of VRAM (IGPUMemLimit): at "
            "a 512 MiB firmware carve-out it is skipped whatever HSA_OVERRIDE_GFX_VERSION says",
            (check, const),
            remedy=rule.remedy,
        )


MATCHER: Matcher = IgpuMemoryFloor()
