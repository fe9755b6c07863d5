"""The vendor seam (issue 25 item 4): a target knows its vendor, and an NVIDIA ``sm_XX`` target is parsed, listed and
carried through the sweep report and diagnose without one AMD function being called."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gfxgate import targets as tm
from gfxgate.targets import AMD, NVIDIA, catalog

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "tests" / "sweep" / "fixtures" / "h200"
H200_WORKLOG = ROOT / "samples" / "h200" / "sweep.jsonl.zst"

# every function of the AMD target model: its parser, card names, PCI ids, HSA overrides, macros, compatibility
AMD_METHODS = [
    (tm.TargetCatalog, name)
    for name in (
        "parse",
        "by_card",
        "processor",
        "generics_of",
        "card_sources",
        "from_hsa_override",
        "predefined_macros",
        "spellings",
        "compatibility",
    )
]
AMD_METHODS += [(tm.AmdVendor, name) for name in ("parse", "knows", "names", "describe")]
AMD_FUNCTIONS = ("pci_id", "marketing_names", "card_words", "read_amdgpu_ids")


class AmdCalled(AssertionError):
    pass


@pytest.fixture
def no_amd(monkeypatch):
    """Every AMD function of the target model raises: a test that passes under it never took an AMD path."""
    called: list[str] = []

    def poisoned(name):
        def refuse(*args, **kwargs):
            called.append(name)
            raise AmdCalled(f"the AMD target model was asked: {name}{args[1:] if args else ''}")

        return refuse

    # the rules are loaded and cross-checked before: the loader builds AMD's processors from rules/targets.yaml and
    # checks each workaround's HSA override against them once per process (data validation, not a target's path)
    from gfxgate.diagnose.catalogue import default_catalogue

    catalog()
    default_catalogue()
    for owner, name in AMD_METHODS:
        monkeypatch.setattr(owner, name, poisoned(f"{owner.__name__}.{name}"))
    for name in AMD_FUNCTIONS:
        monkeypatch.setattr(tm, name, poisoned(name))
    for prop in ("hsa_override", "macros"):
        monkeypatch.setattr(tm.Processor, prop, property(poisoned(f"Processor.{prop}")))
    yield called
    assert not called, called


def test_a_target_knows_its_vendor():
    cat = catalog()
    assert cat.parse_target("gfx906:xnack-").vendor == AMD
    assert cat.parse_target("gfx906:xnack-") == cat.parse("gfx906:xnack-")  # the AMD parser's own answer
    assert cat.parse_target("RX Vega 56") == tm.TargetId("gfx900")
    for text in ("sm_90", "sm90", "compute_90", "9.0", "compute capability 9.0", "H200"):
        assert cat.parse_target(text) == tm.TargetId("sm_90", (), NVIDIA), text
    assert cat.vendor_of("sm_90").name == NVIDIA and cat.vendor_of("gfx1030").name == AMD
    assert cat.vendor_of("gfx906:xnack-").name == AMD and cat.vendor_of("my-gpu") is None
    assert sorted(cat.vendors) == [AMD, NVIDIA] and "sm_90" in cat.vendors[NVIDIA].names()


def test_an_unknown_name_of_either_vendor_is_refused_by_that_vendor():
    from gfxgate.errors import TargetError

    with pytest.raises(TargetError, match="unknown NVIDIA target 'sm_99'"):
        catalog().parse_target("sm_99")
    with pytest.raises(TargetError, match="unknown GPU target 'gfx9999'"):
        catalog().parse_target("gfx9999")


def test_sm_90_is_parsed_and_described_without_amd(no_amd):
    cat = catalog()
    assert cat.parse_gpu("sm_90") == "sm_90" and cat.parse_gpu("compute capability 9.0") == "sm_90"
    assert cat.describe_gpu("sm_90") == "sm_90 (NVIDIA Hopper, compute capability 9.0)"


def test_gfxgate_targets_lists_and_explains_sm_90_without_amd(no_amd, capsys):
    from gfxgate.app.targets import TargetsRequest, describe_nvidia, targets
    from gfxgate.cli.targets import render_one

    answer = targets(TargetsRequest("sm_90"))
    assert answer.rows == (describe_nvidia("sm_90"),) and answer.rows[0]["vendor"] == NVIDIA
    assert "compute_capability" in render_one(answer.rows[0], "text")


def test_the_sweep_report_carries_sm_90_without_amd(no_amd):
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render
    from gfxgate.sweep.worklog import read_worklog

    report = build_report(read_worklog(H200_WORKLOG))
    assert report.gpu_targets == ("sm_90 (NVIDIA Hopper, compute capability 9.0)",)
    for fmt in ("md", "json", "text"):
        assert "sm_90" in render(report, fmt)
    assert json.loads(render(report, "json"))["gpu_targets"] == ["sm_90 (NVIDIA Hopper, compute capability 9.0)"]


def test_diagnose_reads_an_h200_log_without_amd(no_amd):
    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.diagnose.render import render

    diagnoses = diagnose_inputs(
        [str(H200 / "cuda-g16.log")], units=[], since=None, sources={}, offline=True, locate=False
    )
    data = json.loads(render(diagnoses, "json"))
    assert "sm_90" in json.dumps(data)
    for fmt in ("md", "text"):
        assert "sm_90" in render(diagnoses, fmt)


def test_a_sweep_asks_the_gpu_tools_of_its_targets_vendor():
    from gfxgate.host.probes import PROBES
    from gfxgate.sweep.evidence import _probes_for

    def names(target):
        return [p.name for p in _probes_for(PROBES, target)]

    assert names("sm_90") == ["nvidia-smi", "vulkaninfo"]
    assert names("gfx906:xnack-") == ["rocm-smi", "amd-smi", "vulkaninfo"]
    assert names(None) == names("a GPU no vendor knows") == [p.name for p in PROBES]
    claimed = {n for v in catalog().vendors.values() for n in v.probes}
    assert claimed <= {p.name for p in PROBES}, "rules/targets.yaml vendors: names a probe host/probes.py lacks"


def test_the_amd_target_grammar_is_the_target_models_alone():
    """bundle.py and artifacts/scan.py match gfx names with the target model's patterns, not their own."""
    import re

    for module in ("gfxgate/artifacts/bundle.py", "gfxgate/artifacts/scan.py", "gfxgate/sweep/evidence.py"):
        source = (ROOT / module).read_text(encoding="utf-8")
        assert not re.search(r"re\.compile\(r?b?[\"'][^\"']*gfx", source), module
    assert tm.AMD_BUNDLE_TARGET.search("hipv4-amdgcn-amd-amdhsa--gfx906:xnack-")[1] == "gfx906:xnack-"
    assert tm.AMD_BUNDLE_TARGET.search("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic")[1] == "gfx10-3-generic"
    assert [m[0] for m in tm.AMD_TARGET_BYTES.finditer(b"x gfx1030 gfx9-generic gfx90a gfx12345")] == [
        b"gfx1030",
        b"gfx9-generic",
        b"gfx90a",
    ]
