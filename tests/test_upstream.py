"""Opt-in: the shipped rules against real upstream clones.

Set GFXGATE_TEST_UPSTREAM to a folder holding clones named `ollama` (ollama/ollama) and `ROCm` (ROCm/ROCm);
partial clones work. Without it these tests are deselected, not counted as passing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gfxgate.cli import main

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]


def _scan(capsys, monkeypatch, *args):
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    with pytest.raises(SystemExit) as info:
        main(["scan", "--format", "json", "--offline", *args])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    data = json.loads(out)
    return lambda layer, target: next(l for l in data["layers"] if l["id"] == layer)["cells"][data["targets"].index(target)]


def test_real_v0_17_5(capsys, monkeypatch):
    cell = _scan(capsys, monkeypatch, "-t", "gfx900", "-t", "gfx1030", "--live")
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


def test_real_workarounds_at_v0_17_5(capsys, monkeypatch):
    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    if (root / "ollama-python").exists():
        monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA_PYTHON", str(root / "ollama-python"))
    with pytest.raises(SystemExit) as info:
        main(["workarounds", "--format", "json", "--offline"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    items = json.loads(out)["workarounds"]
    assert len(items) >= 15
    states = {w["id"]: w["state"] for w in items}
    assert states["hsa-override-9.0.0"] == "live" and states["copy-rocblas-tensile"] == "live"
    hsa = next(w for w in items if w["id"] == "hsa-override-9.0.0")
    assert any(e["where"].startswith("ollama@v0.17.5:envconfig/config.go:") for c in hsa["checks"] for e in c["evidence"])
