"""Issue 24, reproductions 8, 9 and 11 (and item 7's gfx950/gfx1011 in the timeline), through the installed console
script. The ollama trees are real git repositories built from the annotated excerpts of tests/rules/ (the real
files' lines, annotations blanked); with ``GFXGATE_TEST_UPSTREAM`` the same questions go to the real clones."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.core.conftest import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories
from tests.core.upstream_fixtures import commit_tree, new_repo, repo_of_cases

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")


def _scan(exe: str, *args: str, env: dict | None = None) -> dict:
    run = subprocess.run([exe, "scan", "--format", "json", *args], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GFXGATE_OFFLINE": "1", **(env or {})})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return json.loads(run.stdout)


def _cells(result: dict, layer: str) -> dict[str, dict]:
    return {c["target"]: c for lay in result["layers"] if lay["id"] == layer for c in lay["cells"]}


# -- reproduction 9: the release builds the preset its Dockerfile configures ---------------------------------------
def _assert_rocm7_only(cells: dict[str, dict], dockerfile_line: int | None) -> None:
    assert cells["gfx940"]["status"] == "blocked", cells["gfx940"]  # only the Windows preset 'ROCm 6' lists it
    assert cells["gfx941"]["status"] == "blocked"
    assert cells["gfx950"]["status"] == "allowed"  # 'ROCm 7' lists it
    for target in ("gfx940", "gfx950"):
        cited = [e for e in cells[target]["evidence"] if e["location"]["path"] == "Dockerfile"]
        assert [e["text"] for e in cited] == ["cmake --preset 'ROCm 7' \\"], cells[target]["evidence"]
        if dockerfile_line is not None:
            assert cited[0]["location"]["line"] == dockerfile_line
        assert "ROCm 7: the release configures it at Dockerfile:" in cells[target]["summary"]
        assert "ROCm 6" not in cells[target]["summary"]


def test_reproduction_9_release_build_reads_the_dockerfile_preset(gfxgate_exe, upstream, tmp_path):  # noqa: F811
    ollama = tmp_path / "ollama"
    repo_of_cases(ollama, {"v0.18.0": "ollama-cmake-presets-rocm/v0.18.0"})
    result = _scan(gfxgate_exe, "-t", "gfx940", "-t", "gfx941", "-t", "gfx950", "--ref", "ollama=v0.18.0",
                   "--source", f"ollama={ollama}", "--source", f"rocm-docs={upstream / 'rocm'}",
                   "--source", f"clr={upstream / 'clr'}")
    _assert_rocm7_only(_cells(result, "cmake-presets"), dockerfile_line=None)


@pytest.mark.skipif(not UPSTREAM, reason="opt-in: GFXGATE_TEST_UPSTREAM=/path with the ollama and ROCm clones")
@pytest.mark.parametrize("tag,line", [("v0.18.0", 90), ("v0.24.0", 90)])
def test_reproduction_9_on_the_real_clone(gfxgate_exe, tag, line):
    root = Path(UPSTREAM)
    result = _scan(gfxgate_exe, "-t", "gfx940", "-t", "gfx941", "-t", "gfx950", "--ref", f"ollama={tag}",
                   "--source", f"ollama={root / 'ollama'}", "--source", f"rocm-docs={root / 'ROCm'}",
                   "--source", f"clr={root / 'clr'}")
    _assert_rocm7_only(_cells(result, "cmake-presets"), dockerfile_line=line)


# -- reproduction 8: a build route needs a ROCm that can run code for the target -----------------------------------
V0121_DOCKERFILE = (  # ollama@v0.1.21:Dockerfile lines 43 and 112 (the ROCm 6 build stage, the runtime image)
    "FROM --platform=linux/amd64 rocm/dev-centos-7:6.0-complete AS rocm-6-build-amd64\n"
    "FROM --platform=linux/amd64 rocm/dev-centos-7:6.0-complete as runtime-amd64\n")


def _rocm_runtime(exe: str, ollama: Path, clr: Path, rocm_docs: Path, *targets: str) -> dict[str, dict]:
    args = [a for t in targets for a in ("-t", t)]
    result = _scan(exe, *args, "--ref", "ollama=v0.1.21", "--source", f"ollama={ollama}",
                   "--source", f"rocm-docs={rocm_docs}", "--source", f"clr={clr}")
    return _cells(result, "rocm-runtime")


def test_reproduction_8_rocm_6_0_cannot_run_gfx1200(gfxgate_exe, upstream, tmp_path):  # noqa: F811
    ollama = new_repo(tmp_path / "ollama")
    commit_tree(ollama, {"Dockerfile": V0121_DOCKERFILE}, "v0.1.21", tag="v0.1.21")
    cells = _rocm_runtime(gfxgate_exe, tmp_path / "ollama", upstream / "clr", upstream / "rocm", "gfx1200", "gfx1030")
    gfx1200 = cells["gfx1200"]
    assert gfx1200["status"] == "blocked", gfx1200
    assert "ROCm 6.0.0 cannot run code built for it" in gfx1200["summary"]
    [where] = {e["location"]["ref"] + ":" + e["text"] for e in gfx1200["evidence"]}
    assert where == "rocm-6.0.0:static constexpr Isa supportedIsas_[] = {"  # the release's ROCm, not the pin
    assert cells["gfx1030"]["status"] == "allowed"


@pytest.mark.skipif(not UPSTREAM, reason="opt-in: GFXGATE_TEST_UPSTREAM=/path with the ollama, ROCm and clr clones")
def test_reproduction_8_on_the_real_clones(gfxgate_exe):
    root = Path(UPSTREAM)
    if not (root / "clr").is_dir():
        pytest.skip("no clr clone (ROCm/clr) in GFXGATE_TEST_UPSTREAM")
    cells = _rocm_runtime(gfxgate_exe, root / "ollama", root / "clr", root / "ROCm", "gfx1200", "gfx1201", "gfx1011")
    assert cells["gfx1200"]["status"] == cells["gfx1201"]["status"] == "blocked"
    assert cells["gfx1200"]["evidence"][0]["where"] == "clr@rocm-6.0.0:rocclr/device/device.cpp:95"
    assert cells["gfx1011"]["status"] == "allowed"
