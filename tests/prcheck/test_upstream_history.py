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
    return [(c["tag"], c["previous_tag"], c["old"]["status"], c["new"]["status"], c["new"]["summary"], c["old"]["summary"])
            for c in entry["changes"]]


@pytest.mark.parametrize("method", [[], ["--every-tag"]])
def test_gfx900_flips_at_v0_12_4(tmp_path, method):
    env = {"GFXGATE_SOURCE_OLLAMA": str(Path(UPSTREAM) / "ollama"), "GFXGATE_CACHE_DIR": str(tmp_path / "cache")}
    done = gfxgate(["history", "-t", "gfx900", "--from", "v0.10.0", "--to", "v0.24.0", "--offline", "--format", "json", *method],
                   env, tmp_path)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    cmake = steps(data, "cmake-filter")
    assert [(s[0], s[1], s[2], s[3]) for s in cmake] == [("v0.12.4", "v0.12.3", "allowed", "override-required")]
    discovery = steps(data, "discovery")
    assert [(s[0], s[1]) for s in discovery] == [("v0.12.4", "v0.12.3")]
    assert "GetSupportedGFX" in discovery[0][5] and "GGML_CUDA_INIT" in discovery[0][4]
    packaging = steps(data, "release-packaging")
    assert [(s[0], s[3]) for s in packaging] == [("v0.12.4", "blocked")] and "gfx90[06]" in packaging[0][4]
