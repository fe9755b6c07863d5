"""The OS axis (issue 44): rules, layers, routes and workarounds carry `os:`; absent means Linux.

The Linux answer must not change by the Windows rules' presence, and the Windows answer must never offer what only
Linux has (the HSA override, its route, a systemd drop-in)."""

from __future__ import annotations

import json
import subprocess

import pytest

from gfxgate.errors import RuleError, UsageError
from gfxgate.gate.route import default_routes, routes_for_os
from gfxgate.gate.ruleset import default_rules, load_rules
from gfxgate.gate.scan import FactsRequest, scan_matrix
from gfxgate.gate.workarounds import default_workarounds, for_os
from gfxgate.resources import rules_dir
from gfxgate.targets import catalog


def test_an_entry_without_os_is_linux_and_each_rule_is_a_row_of_its_release():
    rules = default_rules()
    layers = {layer.id: layer for layer in rules.layers}
    assert all(r.os == ("linux",) for r in rules.rules if "os" not in r.raw)
    assert all(set(r.os) <= set(layers[r.layer].os) for r in rules.rules)
    windows = rules.for_os("windows")
    assert windows.rules and all("windows" in r.os for r in windows.rules)
    assert "hsa-override" in {la.id for la in windows.layers}
    assert "hsa-override" not in {la.id for la in rules.for_os("linux").layers}
    assert {"official-matrix", "ollama-docs"} & {la.id for la in windows.layers} == set()  # Linux's documents


def test_a_rule_of_an_os_its_layer_lacks_is_refused_at_load(tmp_path):
    root = tmp_path / "rules"
    (root / "gates").mkdir(parents=True)
    (root / "layers.yaml").write_text((rules_dir() / "layers.yaml").read_text())
    text = (rules_dir() / "gates" / "ollama-docs.yaml").read_text()
    (root / "gates" / "ollama-docs.yaml").write_text(
        text.replace("    repo: ollama\n", "    repo: ollama\n    os: [windows]\n", 1)
    )
    with pytest.raises(RuleError, match="is not among its layer's"):
        load_rules(root)


def test_the_windows_routes_and_workarounds_have_no_hsa_override():
    windows = routes_for_os(default_routes(), "windows")
    assert not any(r.as_override for r in windows.routes)
    assert "rocm-build-windows" in {r.id for r in windows.routes}
    assert "rocm-build-windows" not in {r.id for r in routes_for_os(default_routes(), "linux").routes}
    assert not any(w.override or "HSA_" in w.setting for w in for_os(default_workarounds(), "windows"))
    assert {w.id for w in for_os(default_workarounds(), "linux")} >= {"hsa-override-10.3.0", "copy-rocblas-tensile"}


def test_an_unknown_os_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown OS 'macos'"):
        FactsRequest(os="macos")


def test_the_linux_answer_keeps_its_override_and_has_no_windows_row():
    matrix = scan_matrix([catalog().parse("gfx1031")], FactsRequest())
    assert matrix.os == "linux" and "os" not in matrix.to_json()
    assert "hsa-override" not in {la.id for la in matrix.layers}
    assert not any("windows" in e.source for c in matrix.cells.values() for e in c.evidence)
    route = matrix.route("gfx1031")
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in route.label or any(
        o.route == "rocm-override" for b in route.backends for o in ([b.option] if b.option else [])
    )


def scan_windows(gfxgate_exe, *args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [gfxgate_exe, "scan", "-t", "gfx1031", "--os", "windows", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.fixture
def clean_env(tmp_path):
    import os

    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(tmp_path / "cache")
    return out


def test_scan_for_windows_names_the_preset_the_sdk_the_packaging_and_no_override(gfxgate_exe, clean_env):
    """Through the installed script, from the embedded snapshot (offline): the Windows preset, the HIP SDK, the
    packaging without deletion and the override's absence, each with its evidence line at the pinned release."""
    proc = scan_windows(gfxgate_exe, "--format", "md", env=clean_env)
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert "rocm_v7_1_windows" in md and "does not list gfx1031" in md
    assert "`ollama@v0.32.15:llama/server/CMakePresets.json:" in md  # the preset's line, found by the matcher
    assert "HIP SDK for Windows (rocm-version: '7.1'" in md
    assert "`ollama@v0.32.15:.github/workflows/release.yaml:" in md
    assert "whole rocblas folder, with no file deleted" in md
    assert "`ollama@v0.32.15:llama/server/CMakeLists.txt:" in md and "install(DIRECTORY ${_hip_dir}/rocblas" in md
    assert "ROCm 6 on Windows is disabled" in md and "`ollama@v0.32.15:scripts/build_windows.ps1:" in md
    assert 'documented under "Overrides on Linux" only' in md and "`ollama@v0.32.15:docs/gpu.mdx:" in md
    assert "AMD driver is too old" in md and "`ollama@v0.32.15:discover/amd.go:" in md
    assert "answers for the Windows release (--os windows)" in md and "answers for ollama v0.32.15 for Windows" in md


def test_the_windows_answer_never_suggests_the_override_or_a_systemd_drop_in(gfxgate_exe, clean_env):
    proc = scan_windows(gfxgate_exe, "--format", "json", env=clean_env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["os"] == "windows"
    routes = json.dumps(data["routes"])
    remedies = json.dumps([c.get("remedy") for layer in data["layers"] for c in layer["cells"]])
    for text in (routes, remedies):
        assert "HSA_OVERRIDE_GFX_VERSION=" not in text
        assert "systemd" not in text and "drop-in" not in text and "/opt/rocm" not in text
    (route,) = data["routes"]
    assert route["label"].startswith("Vulkan (default)")  # gfx1031 is not in rocm_v7_1_windows: Vulkan, or a build
    rocm = next(b for b in route["backends"] if b["backend"] == "rocm")
    steps = {s["workaround"] for s in rocm["option"]["steps"]}
    assert steps == {"build-amdgpu-targets-windows", "copy-rocblas-tensile-windows"}
    assert any("-DOLLAMA_LLAMA_BACKENDS=rocm_v7_1" in s["setting"] for s in rocm["option"]["steps"])


def test_scan_for_windows_reads_the_windows_cuda_runner(gfxgate_exe, clean_env):
    """NVIDIA on Windows: cuda_v12's Windows preset builds Pascal as PTX only (the Linux one has sm_60/61 cubins)."""
    proc = subprocess.run(
        [gfxgate_exe, "scan", "-t", "sm_61", "--os", "windows", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=clean_env,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    build = next(c for layer in data["layers"] if layer["id"] == "cuda-build" for c in layer["cells"])
    assert build["status"] == "partial" and "cuda_v12 (windows): PTX only (61-virtual)" in build["summary"]
    assert any("60-virtual;61-virtual" in e["text"] for e in build["evidence"])
    packaging = next(c for layer in data["layers"] if layer["id"] == "cuda-packaging" for c in layer["cells"])
    assert "Windows release build has CUDA runners" in packaging["summary"]
    assert data["routes"][0]["label"].startswith("CUDA out of the box")


def test_an_unknown_os_on_the_command_line_is_exit_2(gfxgate_exe, clean_env):
    proc = subprocess.run(
        [gfxgate_exe, "scan", "-t", "gfx1031", "--os", "macos"],
        capture_output=True,
        text=True,
        timeout=60,
        env=clean_env,
    )
    assert proc.returncode == 2 and "macos" in proc.stderr


def test_diff_refuses_matrices_of_two_oses(tmp_path):
    from gfxgate.app.diff import DiffRequest, diff

    target = [catalog().parse("gfx1031")]
    linux, windows = tmp_path / "linux.json", tmp_path / "windows.json"
    linux.write_text(json.dumps(scan_matrix(target, FactsRequest()).to_json()))
    windows.write_text(json.dumps(scan_matrix(target, FactsRequest(os="windows")).to_json()))
    with pytest.raises(UsageError, match="answers for linux, the new one for windows"):
        diff(DiffRequest(linux, windows))
    with pytest.raises(UsageError, match="not --os linux"):
        diff(DiffRequest(windows, windows, os="linux"))
    assert diff(DiffRequest(windows, windows, os="windows")).diff.targets == ("gfx1031",)
