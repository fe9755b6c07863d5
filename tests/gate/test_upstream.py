"""Opt-in: the shipped rules against real upstream clones.

Set GFXGATE_TEST_UPSTREAM to a folder holding clones named `ollama` (ollama/ollama), `ROCm` (ROCm/ROCm) and `clr` (ROCm/clr);
partial clones work. Without it these tests are deselected, not counted as passing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from gfxgate.cli import main
from tests.gate.rule_fixtures import assert_expectations, cases, origins, read_case

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]


def _scan(capsys, monkeypatch, *args):
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))  # ROCm/clr: the HIP runtime's ISA table
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(root / "rocBLAS"))  # ROCm/rocBLAS: the bundled rocBLAS's targets
    with pytest.raises(SystemExit) as info:
        main(["scan", "--format", "json", "--offline", *args])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    data = json.loads(out)
    return lambda layer, target: next(l for l in data["layers"] if l["id"] == layer)["cells"][
        data["targets"].index(target)
    ]


@pytest.mark.parametrize("rule_id,case", cases())
def test_real_tree_decides_what_each_rule_fixture_says(rule_id, case, tmp_path):
    """A fixture case cut from the files of its own ref decides as the rule does on the whole clone at that ref:
    the same statuses, and each annotated evidence line is among the lines the real tree cites."""
    from gfxgate.gate.engine import collect_facts
    from gfxgate.gate.ruleset import RuleSet, default_rules
    from gfxgate.sources.resolve import SourceSet, load_pins

    named = origins(case)
    if {ref for _, ref in named} != {case.name}:
        pytest.skip(f"not cut from the files of {case.name} alone: {sorted(named)}")
    ruleset = default_rules()
    rule = next(r for r in ruleset.rules if r.id == rule_id)
    root = Path(UPSTREAM)
    sources = SourceSet(
        load_pins(),
        sources={
            "ollama": str(root / "ollama"),
            "rocm-docs": str(root / "ROCm"),
            "clr": str(root / "clr"),
            "rocblas": str(root / "rocBLAS"),
        },
        refs=dict(named),
        offline=True,
    )
    try:
        facts = collect_facts(RuleSet(layers=ruleset.layers, rules=(rule,)), sources)[rule.id]
    finally:
        sources.close()
    expectations = read_case(case, tmp_path)
    text = {
        (e.path, e.evidence_line): (tmp_path / e.path).read_text(encoding="utf-8").splitlines()[e.evidence_line - 1]
        for e in expectations
        if e.evidence_line
    }

    def same_line(e, finding):
        line = text[(e.path, e.evidence_line)].strip()
        assert (e.path, line) in {(h.path, h.text) for h in finding.hits}, f"{e.path}:{e.line}: {line!r} not cited"

    assert_expectations(rule, facts, expectations, same_line)


def test_real_v0_17_5(capsys, monkeypatch):
    cell = _scan(capsys, monkeypatch, "-t", "gfx900", "-t", "gfx1030", "--ref", "ollama=v0.17.5")
    assert cell("cmake-filter", "gfx900")["status"] == "override-required"
    assert cell("cmake-filter", "gfx900")["evidence"][0]["where"].startswith("ollama@v0.17.5:CMakeLists.txt:")
    assert cell("cmake-filter", "gfx1030")["status"] == "allowed"
    macros = cell("source-macros", "gfx900")
    assert "GCN5" in macros["summary"]
    assert any("vendors/hip.h" in e["where"] for e in macros["evidence"])
    assert any("common.cuh" in e["where"] for e in macros["evidence"])
    assert "GGML_CUDA_INIT" in cell("discovery", "gfx900")["summary"]
    assert cell("official-matrix", "gfx900")["status"] == "blocked"


def test_real_v0_12_3_still_allows_gfx900(capsys, monkeypatch):
    cell = _scan(capsys, monkeypatch, "-t", "gfx900", "--ref", "ollama=v0.12.3")
    assert cell("cmake-filter", "gfx900")["status"] == "allowed"
    assert "GetSupportedGFX" in cell("discovery", "gfx900")["summary"]


def test_real_rocm_docs_without_a_gpu_list(capsys, monkeypatch):
    """rocm-6.0.2 and rocm-6.1.0 hold neither linux-support.md (up to rocm-6.0.0) nor compatibility-matrix.rst (from
    rocm-6.1.1): their docs link the GPU list to ROCm/rocm-install-on-linux. The row stays unknown, its reason that link
    (no "upstream layout changed?"), its evidence the linking line; the tags around them stay decided by their lists."""
    for tag in ("rocm-6.0.2", "rocm-6.1.0"):
        matrix = _scan(capsys, monkeypatch, "-t", "gfx900", "--ref", f"rocm-docs={tag}")("official-matrix", "gfx900")
        assert matrix["status"] == "unknown", (tag, matrix)
        assert "layout changed" not in matrix["reason"], (tag, matrix["reason"])
        assert "rocm-install-on-linux:reference/system-requirements" in matrix["reason"], (tag, matrix["reason"])
        assert [e["where"] for e in matrix["evidence"]] == [f"rocm-docs@{tag}:docs/about/compatibility/openmp.md:18"]
    for tag, path in (
        ("rocm-6.0.0", "docs/about/compatibility/linux-support.md"),
        ("rocm-6.1.1", "docs/compatibility/compatibility-matrix.rst"),
    ):
        matrix = _scan(capsys, monkeypatch, "-t", "gfx900", "--ref", f"rocm-docs={tag}")("official-matrix", "gfx900")
        assert matrix["status"] == "blocked", (tag, matrix)
        assert all(e["where"].startswith(f"rocm-docs@{tag}:{path}:") for e in matrix["evidence"]), (
            tag,
            matrix["evidence"],
        )


def test_real_workarounds_at_v0_17_5(capsys, monkeypatch):
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))  # ROCm/clr: the HIP runtime's ISA table
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(root / "rocBLAS"))  # ROCm/rocBLAS: the bundled rocBLAS's targets
    if (root / "ollama-python").exists():
        monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA_PYTHON", str(root / "ollama-python"))
    with pytest.raises(SystemExit) as info:
        main(["workarounds", "--format", "json", "--offline", "--ref", "ollama=v0.17.5"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    items = json.loads(out)["workarounds"]
    assert len(items) >= 15
    states = {w["id"]: w["state"] for w in items}
    assert states["hsa-override-9.0.0"] == "live" and states["copy-rocblas-tensile"] == "live"
    hsa = next(w for w in items if w["id"] == "hsa-override-9.0.0")
    assert any(
        e["where"].startswith("ollama@v0.17.5:envconfig/config.go:") for c in hsa["checks"] for e in c["evidence"]
    )


def _scan_v030(capsys, monkeypatch, *args):
    """Scans of the v0.30+ layout: llama.cpp from the folder GFXGATE_TEST_UPSTREAM/llama.cpp (the llama-cpp-python
    0.3.36 sdist's vendor/llama.cpp, commit 0c1e57098) — there is no llama.cpp clone with the b-tags here."""
    root = Path(UPSTREAM)
    if not (root / "llama.cpp" / "ggml").is_dir():
        pytest.skip("needs GFXGATE_TEST_UPSTREAM/llama.cpp (vendor/llama.cpp of the llama-cpp-python 0.3.36 sdist)")
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(root / "llama.cpp"))
    return _scan(capsys, monkeypatch, *args)


def test_real_v0_30_0_layout(capsys, monkeypatch):
    cell = _scan_v030(capsys, monkeypatch, "-t", "gfx900", "-t", "gfx1103", "--ref", "ollama=v0.30.0")
    build = cell("cmake-filter", "gfx900")
    assert build["status"] == "override-required"
    assert build["remedy"].startswith(
        "cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx900"
    )
    wheres = [e["where"] for e in build["evidence"]]
    assert "ollama@v0.30.0:cmake/local.cmake:287" in wheres and "ollama@v0.30.0:docs/development.md:51" in wheres
    assert cell("cmake-filter", "gfx1103")["status"] == "allowed"  # v0.30.0's rocm_v7_2_linux still lists gfx1103
    assert cell("cmake-presets", "gfx900")["status"] == "blocked"
    assert cell("release-packaging", "gfx900")["evidence"][0]["where"] == "ollama@v0.30.0:Dockerfile:135"
    discovery = cell("discovery", "gfx900")
    assert discovery["status"] == "override-required" and "TensileLibrary_lazy_gfx900.dat" in discovery["summary"]
    assert discovery["evidence"][0]["where"] == "ollama@v0.30.0:discover/amd.go:447"
    apu = cell("discovery", "gfx1103")
    assert "ollama@v0.30.0:discover/runner.go:391" in [e["where"] for e in apu["evidence"]]
    vulkan = cell("vulkan", "gfx900")
    assert vulkan["status"] == "allowed" and "enabled by default" in vulkan["summary"]
    assert "ollama@v0.30.0:discover/runner.go:94" in [e["where"] for e in vulkan["evidence"]]
    assert "as AMD_GCN" in vulkan["summary"]
    assert cell("vulkan", "gfx1103")["status"] == "override-required"  # an iGPU: OLLAMA_IGPU_ENABLE=1
    matrix = cell("official-matrix", "gfx900")  # v0.30.0 builds against ROCm 7.2.1; the docs end at rocm-6.3.3
    assert matrix["evidence"][0]["where"].startswith("rocm-docs@rocm-6.3.3:")
    assert "rocm-7.2.1 cannot be read here: read rocm-6.3.3 instead" in matrix["summary"]


def test_real_newest_release_has_no_unknown_row(capsys, monkeypatch):
    cell = _scan_v030(capsys, monkeypatch, "-t", "gfx900", "-t", "gfx1031", "-t", "gfx1103", "--ref", "ollama=latest")
    for target in ("gfx900", "gfx1031", "gfx1103"):
        for layer in (
            "official-matrix",
            "cmake-filter",
            "cmake-presets",
            "release-packaging",
            "discovery",
            "source-macros",
            "vulkan",
        ):
            assert cell(layer, target)["status"] != "unknown", (layer, target, cell(layer, target)["reason"])
    assert cell("cmake-presets", "gfx1103")["status"] == "blocked"  # gfx1103 left the release preset in v0.31.2
    assert cell("release-packaging", "gfx900")["status"] == "blocked"
    assert "read from a folder whose version gfxgate cannot check" in cell("source-macros", "gfx900")["summary"]


def test_real_vulkan_switch_over_the_versions(capsys, monkeypatch):
    expected = {
        "v0.12.5": "blocked",
        "v0.12.6": "allowed",
        "v0.12.10": "allowed",
        "v0.12.11": "override-required",
        "v0.17.5": "override-required",
    }
    for tag, status in expected.items():
        cell = _scan(capsys, monkeypatch, "-t", "gfx900", "--ref", f"ollama={tag}")
        assert cell("vulkan", "gfx900")["status"] == status, tag


def test_real_v0_30_0_release_candidates_decide_the_build_rows(capsys, monkeypatch):
    """Before the *_user_arch presets (rc26) the candidates kept the list on the Dockerfile's configure command
    (rc0-rc15), in the rocm preset (rc16-rc17), then in the preset with cmake/local.cmake taking a user list (rc18-rc25)."""
    expected = {
        "v0.30.0-rc0": ["ollama@v0.30.0-rc0:Dockerfile:121", "ollama@v0.30.0-rc0:Dockerfile:120"],
        "v0.30.0-rc15": ["ollama@v0.30.0-rc15:Dockerfile:121", "ollama@v0.30.0-rc15:Dockerfile:120"],
        "v0.30.0-rc16": [
            "ollama@v0.30.0-rc16:llama/server/CMakePresets.json:117",
            "ollama@v0.30.0-rc16:Dockerfile:120",
        ],
        "v0.30.0-rc18": [
            "ollama@v0.30.0-rc18:llama/server/CMakePresets.json:117",
            "ollama@v0.30.0-rc18:cmake/local.cmake:216",
            "ollama@v0.30.0-rc18:docs/development.md:45",
        ],
        "v0.30.0-rc25": [
            "ollama@v0.30.0-rc25:llama/server/CMakePresets.json:114",
            "ollama@v0.30.0-rc25:cmake/local.cmake:244",
            "ollama@v0.30.0-rc25:docs/development.md:45",
        ],
    }
    for tag, wheres in expected.items():
        cell = _scan(capsys, monkeypatch, "-t", "gfx900", "-t", "gfx1030", "--ref", f"ollama={tag}")
        build = cell("cmake-filter", "gfx900")
        assert build["status"] == "override-required", (tag, build["reason"])
        assert [e["where"] for e in build["evidence"]] == wheres, tag
        assert cell("cmake-filter", "gfx1030")["status"] == "allowed", tag
        assert cell("cmake-presets", "gfx900")["status"] == "blocked", tag
        assert cell("cmake-presets", "gfx1030")["status"] == "allowed", tag
    assert build["remedy"] == (
        "cmake -B build . -DOLLAMA_LLAMA_SERVER_BACKENDS=rocm -DCMAKE_HIP_ARCHITECTURES=gfx900 && cmake --build build"
    )


def test_real_integrated_gpu_filter_from_v0_30_0_rc28(capsys, monkeypatch):
    """filterIntegratedGPUs drops APUs from rc28 on; its log line names OLLAMA_IGPU_ENABLE only from rc32, so from
    rc28 to rc31 the evidence names the variable from envconfig (config.go:236), from rc32 the log line does."""
    before = {"discovery": "partial", "vulkan": "allowed"}  # rc27: no filter yet (the Tensile check decides discovery)
    expected = {
        "v0.30.0-rc27": (before, None),
        "v0.30.0-rc28": (None, "envconfig/config.go:236"),
        "v0.30.0-rc31": (None, "envconfig/config.go:236"),
        "v0.30.0-rc32": (None, "discover/runner.go:391"),
    }
    for tag, (statuses, where) in expected.items():
        cell = _scan(capsys, monkeypatch, "-t", "gfx1103", "--ref", f"ollama={tag}")
        for layer in ("discovery", "vulkan"):
            apu = cell(layer, "gfx1103")
            assert apu["status"] == (statuses or {}).get(layer, "override-required"), (tag, layer, apu["summary"])
            wheres = [e["where"] for e in apu["evidence"]]
            assert where is None or f"ollama@{tag}:{where}" in wheres, (tag, layer, wheres)
            assert "OLLAMA_IGPU_ENABLE=1" in apu["summary"] or where is None, (tag, layer)


def test_real_build_scripts_and_too_old_check_before_cmake(capsys, monkeypatch):
    """ollama < v0.5.8: the release's target list from gen_linux.sh / Makefile.rocm, the user's list where the script
    takes one, and discovery's "amdgpu too old" below gfx9 (hard-coded, then RocmComputeMajorMin)."""
    expected = {  # tag: {(layer, target): status}
        "v0.1.17": {("cmake-presets", "gfx900"): "blocked", ("cmake-filter", "gfx900"): "blocked"},  # no ROCm build
        "v0.1.20": {
            ("cmake-presets", "gfx803"): "allowed",
            ("cmake-filter", "gfx1030"): "allowed",
            ("cmake-filter", "gfx1100"): "allowed",
            ("discovery", "gfx803"): "allowed",
        },
        "v0.1.22": {("cmake-filter", "gfx1031"): "override-required", ("cmake-presets", "gfx1031"): "blocked"},
        "v0.1.26": {
            ("cmake-presets", "gfx803"): "blocked",
            ("discovery", "gfx803"): "blocked",
            ("discovery", "gfx900"): "allowed",
        },
        # no HIP_ARCHS?= yet, but make's command line replaces HIP_ARCHS_COMMON
        "v0.4.7": {("cmake-filter", "gfx1031"): "override-required", ("cmake-presets", "gfx900"): "allowed"},
        # the same Makefile in the CI tag before the first candidate and in the candidates (not "no build script")
        "v0.4.0-ci3": {("cmake-filter", "gfx900"): "allowed", ("cmake-filter", "gfx1031"): "override-required"},
        "v0.4.0-rc8": {("cmake-filter", "gfx900"): "allowed", ("cmake-filter", "gfx1031"): "override-required"},
        "v0.5.7": {("cmake-filter", "gfx803"): "override-required", ("discovery", "gfx803"): "override-required"},
    }
    for tag, cells in expected.items():
        targets = sorted({t for _, t in cells})
        cell = _scan(capsys, monkeypatch, *[a for t in targets for a in ("-t", t)], "--ref", f"ollama={tag}")
        for (layer, target), status in cells.items():
            got = cell(layer, target)
            assert got["status"] == status, (tag, layer, target, got["summary"])
            assert all(e["where"].startswith(f"ollama@{tag}:") for e in got["evidence"]), (tag, layer, target)


def test_real_build_rows_switch_to_cmake_at_the_first_v0_5_8_candidate(capsys, monkeypatch):
    """CMakeLists.txt and CMakePresets.json are new in v0.5.8-rc0, and make/Makefile.rocm is gone there: the two build
    rows are decided by the Makefile rules up to v0.5.7 and by the CMake rules from v0.5.8-rc0 (all 14 candidates), and
    no rule of another era is left in range to report "rule did not match … upstream layout changed?" on either side."""
    makefile = {"cmake-filter": "ollama-makefile-hip-archs", "cmake-presets": "ollama-build-scripts-rocm-targets"}
    cmake = {"cmake-filter": "ollama-cmake-amdgpu-targets-filter", "cmake-presets": "ollama-cmake-presets-rocm"}
    expected = {"v0.1.20": None, "v0.5.7": makefile, "v0.5.8-rc0": cmake, "v0.5.8-rc13": cmake, "v0.5.8": cmake}
    for tag, rules in expected.items():
        cell = _scan(capsys, monkeypatch, "-t", "gfx900,gfx1031", "--ref", f"ollama={tag}")
        for layer in ("cmake-filter", "cmake-presets"):
            for target in ("gfx900", "gfx1031"):
                got = cell(layer, target)
                assert got["status"] != "unknown" and got.get("reason") is None, (tag, layer, target, got.get("reason"))
                if rules:
                    assert {e["source"] for e in got["evidence"]} == {rules[layer]}, (
                        tag,
                        layer,
                        target,
                        got["evidence"],
                    )


@pytest.mark.parametrize("name", ["ollama", "ROCm", "clr", "ollama-python"])
def test_every_tag_of_the_clone_has_a_version_key(name):
    """Each tag of the real clones orders (no tag falls outside every version range), and a pre-release's base
    version is a release tag of the source's own pattern: ollama's -ci3 / -citest0 / -int1 tags included."""
    from gfxgate.sources.gitrepo import local_git_dir, tag_commits
    from gfxgate.sources.resolve import load_pins
    from gfxgate.sources.versions import base_version, is_prerelease, version_key

    root = Path(UPSTREAM) / name
    if not root.exists():
        pytest.skip(f"no {name} clone in GFXGATE_TEST_UPSTREAM")
    tags = list(tag_commits(local_git_dir(root)))
    assert tags and [t for t in tags if version_key(t) is None] == []
    pins = {"ROCm": "rocm-docs"}.get(name, name)
    pattern = re.compile(load_pins().sources[pins].release_tags)
    assert [t for t in tags if is_prerelease(t) and not pattern.search(base_version(t))] == []


def test_real_timeline_snapshot_covers_the_newest_release_and_is_what_the_clone_gives(capsys, monkeypatch):
    """The embedded timeline ends at the clone's newest release (pre-releases are not in the default range) and is
    exactly what a live run over the clone computes now: a new release or a changed result means regenerating it."""
    from gfxgate.sources.resolve import load_pins
    from gfxgate.sources.versions import is_prerelease, sort_tags
    from gfxgate.sources.gitrepo import local_git_dir, tag_commits

    root = Path(UPSTREAM) / "ollama"
    pattern = re.compile(load_pins().sources["ollama"].release_tags)
    releases = sort_tags([t for t in tag_commits(local_git_dir(root)) if not is_prerelease(t) and pattern.search(t)])
    with pytest.raises(SystemExit):
        main(["timeline", "--format", "json"])
    stored = json.loads(capsys.readouterr().out)
    assert stored["range"]["to"] == releases[-1], "run `gfxgate snapshot timeline --source ollama=CLONE`"
    assert stored["releases"] == releases
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root))
    with pytest.raises(SystemExit):
        main(
            [
                "timeline",
                "--format",
                "json",
                "--live",
                "--offline",
                *[a for t in stored["targets"] for a in ("-t", t["target"])],
            ]
        )
    live = json.loads(capsys.readouterr().out)
    assert [
        (t["target"], t["sentence"], [(c["from"], c["to"], c["label"]) for c in t["cells"]]) for t in live["targets"]
    ] == [
        (t["target"], t["sentence"], [(c["from"], c["to"], c["label"]) for c in t["cells"]]) for t in stored["targets"]
    ]


def test_real_build_step_is_the_command_of_each_era(capsys, monkeypatch):
    """The answer's build step is the build target list cell's remedy at that version (Makefile, CMake, llama-server),
    and the step's own check finds the user's list in each era (HIP_ARCHS in make/Makefile.rocm at v0.5.7)."""
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))  # ROCm/clr: the HIP runtime's ISA table
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(root / "rocBLAS"))  # ROCm/rocBLAS: the bundled rocBLAS's targets
    expected = {
        "v0.5.7": "make -j 5 HIP_ARCHS=gfx803",
        "v0.17.5": "cmake -B build -DAMDGPU_TARGETS=gfx803 && cmake --build build",
        "v0.32.15": "cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx803 && cmake --build build",
    }
    for tag, command in expected.items():
        with pytest.raises(SystemExit) as info:
            main(["scan", "--format", "json", "--offline", "-t", "gfx803", "--ref", f"ollama={tag}"])
        out, err = capsys.readouterr()
        assert info.value.code == 0, err
        route = json.loads(out)["routes"][0]
        steps = [s for b in route["backends"] if b["option"] and b["backend"] == "rocm" for s in b["option"]["steps"]]
        build = next(s for s in steps if s["workaround"] == "build-amdgpu-targets")
        assert build["setting"].startswith(command), (tag, build["setting"])
        assert build["check"]["state"] == "live", (tag, build["check"])
        assert route["certain"], (tag, route["reason"])


def test_real_source_build_workaround_of_each_era(capsys, monkeypatch):
    """`gfxgate workarounds` prints the build command of the scanned version's era, as its docs/development.md
    documents it, and checks it against that era's files: gen_linux.sh takes $AMDGPU_TARGETS from v0.1.21 (at v0.1.20
    its GPU_LIST is the list to edit), llama/make/Makefile.rocm (v0.4.0 … v0.5.1) reads no AMDGPU_TARGETS although its docs
    name it, but make's command line replaces its HIP_ARCHS_COMMON, make/Makefile.rocm has HIP_ARCHS?= (v0.5.2 … v0.5.7); CMake
    after, and llama-server's backends from v0.30.0-rc26. Before v0.1.18 no script builds ROCm code: stale."""
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    go_generate = "AMDGPU_TARGETS=gfx900 go generate ./... && go build ."
    edit_gpu_list = "add gfx900 to GPU_LIST in llm/generate/gen_linux.sh, then go generate ./... && go build ."
    make_hip_archs_common = "make -j 5 HIP_ARCHS_COMMON=gfx900 && go build ."
    expected = {  # tag: (setting, state, evidence it cites)
        "v0.1.17": (edit_gpu_list, "stale", None),
        "v0.1.20": (edit_gpu_list, "live", "llm/generate/gen_linux.sh:21"),
        "v0.1.21": (go_generate, "live", "llm/generate/gen_linux.sh:19"),
        "v0.1.22": (go_generate, "live", "llm/generate/gen_linux.sh:19"),
        "v0.3.14": (go_generate, "live", "docs/development.md:84"),
        "v0.4.0": (make_hip_archs_common, "live", "llama/make/Makefile.rocm:8"),
        "v0.4.7": (make_hip_archs_common, "live", "llama/make/Makefile.rocm:8"),
        "v0.5.1": (make_hip_archs_common, "live", "llama/make/Makefile.rocm:8"),
        "v0.5.2": ("make -j 5 HIP_ARCHS=gfx900", "live", "make/Makefile.rocm:15"),
        "v0.5.7": ("make -j 5 HIP_ARCHS=gfx900", "live", "docs/development.md:68"),
        # make/Makefile.rocm's HIP_ARCHS?= is already in the first candidate of v0.5.2, and CMake in every one of v0.5.8
        "v0.5.2-rc0": ("make -j 5 HIP_ARCHS=gfx900", "live", "make/Makefile.rocm:15"),
        "v0.5.8-rc0": ("cmake -B build -DAMDGPU_TARGETS=gfx900 && cmake --build build", "live", "CMakeLists.txt:88"),
        "v0.5.8-rc13": ("cmake -B build -DAMDGPU_TARGETS=gfx900 && cmake --build build", "live", "CMakeLists.txt:90"),
        "v0.17.5": ("cmake -B build -DAMDGPU_TARGETS=gfx900 && cmake --build build", "live", "CMakeLists.txt:125"),
        "v0.32.15": (
            "cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx900 && cmake --build build",
            "live",
            "docs/development.md:51",
        ),
    }
    for tag, (setting, state, where) in expected.items():
        with pytest.raises(SystemExit) as info:
            main(["workarounds", "--format", "json", "--offline", "-t", "gfx900", "--ref", f"ollama={tag}"])
        out, err = capsys.readouterr()
        assert info.value.code == 0, err
        build = next(w for w in json.loads(out)["workarounds"] if w["id"] == "build-amdgpu-targets")
        assert (build["setting"], build["state"]) == (setting, state), (tag, build["summary"])
        wheres = [e["where"] for c in build["checks"] for e in c["evidence"]]
        assert where is None or f"ollama@{tag}:{where}" in wheres, (tag, wheres)


def test_real_build_step_before_v0_4_is_go_generate(capsys, monkeypatch):
    """gfx940 is in no GPU_LIST of v0.1.22: the answer is a build with AMDGPU_TARGETS set for go generate, checked live."""
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))  # ROCm/clr: the HIP runtime's ISA table
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(root / "rocBLAS"))  # ROCm/rocBLAS: the bundled rocBLAS's targets
    with pytest.raises(SystemExit) as info:
        main(["scan", "--format", "json", "--offline", "-t", "gfx940", "--ref", "ollama=v0.1.22"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    route = json.loads(out)["routes"][0]
    assert route["best"]["route"] != "cpu" and route["certain"], route["reason"]
    build = next(s for s in route["best"]["steps"] if s["workaround"] == "build-amdgpu-targets")
    assert build["setting"] == "AMDGPU_TARGETS=gfx940 go generate ./... && go build ."
    assert build["check"]["state"] == "live", build["check"]
    assert "ollama@v0.1.22:llm/generate/gen_linux.sh:19" in [e["where"] for e in build["check"]["evidence"]]


def test_real_discovery_v0_1_25_to_v0_1_28_is_the_gfx9_minimum_alone(capsys, monkeypatch):
    """v0.1.25 … v0.1.28 reject a device below gfx9 ("AMD GPU too old") and have no gfx name allowlist: GetGPUInfo
    goes from the major-version loop straight to rocm_check_vram; GetSupportedGFX (the rocBLAS allowlist) starts at
    v0.1.29. gfx803 is blocked, gfx900 / gfx906 / gfx1030 allowed, each with both lines of gpu/gpu.go."""
    targets = ("gfx803", "gfx900", "gfx906", "gfx1030")
    for tag in ("v0.1.25", "v0.1.26", "v0.1.27", "v0.1.28"):
        cell = _scan(capsys, monkeypatch, *[a for t in targets for a in ("-t", t)], "--ref", f"ollama={tag}")
        for target in targets:
            got = cell("discovery", target)
            assert got["status"] == ("blocked" if target == "gfx803" else "allowed"), (tag, target, got["summary"])
            assert "no gfx name allowlist" in got["summary"] and "GetSupportedGFX" not in got["summary"], (
                tag,
                got["summary"],
            )
            texts = [e["text"] for e in got["evidence"]]
            assert any("v.Major < 9" in t for t in texts) and any("rocm_check_vram(" in t for t in texts), (tag, texts)
            assert all(e["where"].startswith(f"ollama@{tag}:gpu/gpu.go:") for e in got["evidence"]), (
                tag,
                got["evidence"],
            )
    cell = _scan(capsys, monkeypatch, "-t", "gfx900", "--ref", "ollama=v0.1.29")
    assert "GetSupportedGFX" in cell("discovery", "gfx900")["summary"]
    assert "no gfx name allowlist" not in cell("discovery", "gfx900")["summary"]


@pytest.mark.skipif(not shutil.which("make"), reason="GNU make is not installed")
@pytest.mark.parametrize("tag", ["v0.4.0", "v0.5.1"])
def test_real_make_takes_the_build_row_remedy_of_v0_4_to_v0_5_1(tag, capsys, monkeypatch, tmp_path):
    """The build row's remedy at v0.4.0 … v0.5.1 is a make command line (llama/make/Makefile.rocm has no HIP_ARCHS?=).
    Run by GNU make itself (`make -n`, the real tree at the tag; only hipcc, which cannot run here, is a one-line
    stand-in so that the Makefile finds a ROCm compiler): the printed command compiles gfx803 and the default
    HIP_ARCHS_LINUX targets, nothing of the default HIP_ARCHS_COMMON — without the variable, gfx803 is in no command."""
    cell = _scan(capsys, monkeypatch, "-t", "gfx803", "--ref", f"ollama={tag}")
    row = cell("cmake-filter", "gfx803")
    assert row["status"] == "override-required", row["summary"]
    words = shlex.split(row["remedy"].split("&&")[0])
    assert words[:3] == ["make", "-j", "5"] and all("=" in w for w in words[3:]), row["remedy"]
    tree = tmp_path / "ollama"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(Path(UPSTREAM) / "ollama"), "archive", tag], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    rocm = tmp_path / "rocm"
    (rocm / "bin").mkdir(parents=True)
    (rocm / "lib").mkdir()
    hipcc = rocm / "bin" / "hipcc"
    hipcc.write_text("#!/bin/sh\necho 'HIP version: 6.1.40091'\n")
    hipcc.chmod(0o755)
    env = {**os.environ, "PATH": f"{rocm / 'bin'}{os.pathsep}{os.environ['PATH']}", "HIP_PATH": str(rocm)}

    def arches(*assignments: str) -> set[str]:
        run = subprocess.run(
            ["make", "-n", *assignments], cwd=tree, env=env, capture_output=True, text=True, timeout=120
        )
        return set(re.findall(r"--offload-arch=(\S+)", run.stdout))

    linux = re.search(r"^HIP_ARCHS_LINUX\s*:=(.*)$", (tree / "llama/make/Makefile.rocm").read_text(), re.M)[1].split()
    assert "gfx803" not in arches() and arches() >= set(linux)
    assert arches(*words[3:]) == {"gfx803", *linux}


def test_real_rocm_compute_major_min_is_linked_only_where_the_variable_exists(capsys, monkeypatch):
    """`var RocmComputeMajorMin` is in discover/gpu.go from v0.5.2-rc0 to v0.12.3: gfx803's discovery cell links the
    build that lowers it there, and not at v0.32.15, where the cell is partial again (the Tensile-file filter) but the
    variable has been gone since v0.12.4-rc0; `gfxgate workarounds` names it as not applicable there, not stale."""
    expected = {"v0.5.2-rc0": True, "v0.12.3": True, "v0.30.0": False, "v0.32.15": False}
    for tag, linked in expected.items():
        cell = _scan(capsys, monkeypatch, "-t", "gfx803", "--ref", f"ollama={tag}")("discovery", "gfx803")
        assert cell["status"] in ("override-required", "partial"), (tag, cell["summary"])
        assert ("build-rocm-compute-major-min" in cell["workarounds"]) == linked, (tag, cell["workarounds"])
        with pytest.raises(SystemExit) as info:
            main(["workarounds", "--format", "json", "--offline", "-t", "gfx803", "--ref", f"ollama={tag}"])
        out, err = capsys.readouterr()
        assert info.value.code == 0, err
        report = json.loads(out)
        listed = {w["id"]: w["state"] for w in report["workarounds"]}
        absent = [n["id"] for n in report["not_applicable"]]
        if linked:
            assert (
                listed.get("build-rocm-compute-major-min") == "live" and "build-rocm-compute-major-min" not in absent
            ), tag
        else:
            assert "build-rocm-compute-major-min" not in listed and "build-rocm-compute-major-min" in absent, (
                tag,
                listed,
            )
