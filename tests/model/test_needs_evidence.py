"""Every record that must carry evidence refuses to exist without it, through the one NeedsEvidence mixin."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gfxgate.diagnose.model import Conclusion, Fact, Finding, Gpu, Run
from gfxgate.doctor.model import FixStep
from gfxgate.gate.route import RouteOption, RouteStep, SatisfiedStep
from gfxgate.model import Evidence, Location, NeedsEvidence
from gfxgate.serial import to_json

EVIDENCE = (Evidence("rule-a", Location(repo="ollama", ref="v0.17.5", path="CMakeLists.txt", line=127), "text"),)

# Each record with its other required fields, and the refusal it must give without evidence.
RECORDS: list[tuple[type, dict[str, Any], str]] = [
    (Fact, {"name": "OLLAMA_VULKAN", "value": "1"}, "fact 'OLLAMA_VULKAN'"),
    (Gpu, {"name": "GPU-0", "target": "gfx900", "backend": "rocm"}, "gpu 'GPU-0'"),
    (Finding, {"message": "m-1", "family": "f", "title": "t", "layer": "l"}, "finding 'm-1'"),
    (Conclusion, {"kind": "ran-on-cpu", "text": "t"}, "conclusion 'ran-on-cpu'"),
    (Run, {"index": 0, "outcome": "failed", "summary": "SIGSEGV"}, "run '0'"),
    (SatisfiedStep, {"workaround": "copy-rocblas-tensile", "layer": "l"}, "satisfied step copy-rocblas-tensile"),
    (
        RouteStep,
        {"workaround": "copy-rocblas-tensile", "title": "t", "setting": "s", "risk": "r", "covers": ("l",)},
        "route step copy-rocblas-tensile",
    ),
    (RouteOption, {"route": "rocm-release", "backend": "rocm", "label": "ROCm", "phrase": "p"}, "route rocm-release"),
    (FixStep, {"workaround": "access", "what": "w", "commands": ("c",)}, "fix step access"),
]


@pytest.mark.parametrize(("cls", "fields", "what"), RECORDS, ids=[r[0].__name__ for r in RECORDS])
def test_a_record_refuses_empty_evidence_and_keeps_the_declaration_out_of_its_json(cls, fields, what):
    with pytest.raises(ValueError, match=f"^{what} without evidence$"):
        cls(**fields, evidence=())
    record = cls(**fields, evidence=EVIDENCE)
    assert record.evidence == EVIDENCE
    assert "evidence_for" not in {f.name for f in dataclasses.fields(cls)}
    out = to_json(record)
    assert "evidence" in out and "evidence_for" not in out


def test_every_record_that_needs_evidence_is_listed_above():
    def subclasses(cls: type) -> set[type]:
        return {s for direct in cls.__subclasses__() for s in {direct} | subclasses(direct)}

    assert subclasses(NeedsEvidence) == {cls for cls, _, _ in RECORDS}
