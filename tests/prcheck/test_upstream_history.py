"""Opt-in: `gfxgate history` over the real ollama release tags.

Set GFXGATE_TEST_UPSTREAM to a folder holding a clone named `ollama` (ollama/ollama; bare or
partial clones work). Without it these tests are deselected, not counted as passing.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.prcheck.golden import gfxgate

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]


def steps(data, layer):
    entry = next(layer_ for layer_ in data["layers"] if layer_["id"] == layer)["targets"][0]
    return [
        (c["tag"], c["previous_tag"], c["old"]["status"], c["new"]["status"], c["new"]["summary"], c["old"]["summary"])
        for c in entry["changes"]
    ]


@pytest.mark.parametrize("method", [[], ["--every-tag"]])
def test_gfx900_flips_at_v0_12_4(tmp_path, method):
    env = {"GFXGATE_SOURCE_OLLAMA": str(Path(UPSTREAM) / "ollama"), "GFXGATE_CACHE_DIR": str(tmp_path / "cache")}
    done = gfxgate(
        ["history", "-t", "gfx900", "--from", "v0.10.0", "--to", "v0.24.0", "--offline", "--format", "json", *method],
        env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    cmake = steps(data, "cmake-filter")
    assert [(s[0], s[1], s[2], s[3]) for s in cmake] == [("v0.12.4", "v0.12.3", "allowed", "override-required")]
    discovery = steps(data, "discovery")
    assert [(s[0], s[1]) for s in discovery] == [("v0.12.4", "v0.12.3")]
    assert "GetSupportedGFX" in discovery[0][5] and "GGML_CUDA_INIT" in discovery[0][4]
    packaging = steps(data, "release-packaging")
    assert [(s[0], s[3]) for s in packaging] == [("v0.12.4", "blocked")] and "gfx90[06]" in packaging[0][4]


def test_no_drift_from_v0_24_to_the_newest_tag_with_prereleases(tmp_path):
    """Every tag from v0.24.0 to the newest (the v0.30.0 candidates included) is decided for the build rows:
    the old CMakeLists.txt filter and the llama-server layouts each apply in their own range."""
    env = {"GFXGATE_SOURCE_OLLAMA": str(Path(UPSTREAM) / "ollama"), "GFXGATE_CACHE_DIR": str(tmp_path / "cache")}
    done = gfxgate(
        [
            "history",
            "-t",
            "gfx900,gfx1030",
            "--from",
            "v0.24.0",
            "--every-tag",
            "--prereleases",
            "--layer",
            "cmake-filter",
            "--layer",
            "cmake-presets",
            "--offline",
            "--format",
            "json",
        ],
        env,
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["range"]["probed"] > 100  # v0.24.0 … v0.33.0-rc2 with the candidates
    changes = [
        (layer["id"], entry["target"], c["tag"], c["new"]["status"])
        for layer in data["layers"]
        for entry in layer["targets"]
        for c in entry["changes"]
    ]
    assert not [c for c in changes if c[3] == "unknown"], changes
    # gfx900 is override-required for a source build at every one of these tags, whichever layout has the list
    assert not [c for c in changes if c[0] == "cmake-filter" and c[1] == "gfx900" and c[3] != "override-required"]
