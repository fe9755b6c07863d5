"""Issue 36, items 2-5 of its Why, through the command line (in process: tests/inprocess.py), offline and without a
clone (the embedded evidence): each names the release and the answer a user gets, so a regression of any of them
fails here.

(Items 1, 6 and 8: tests/answer/test_answer_items.py; item 7: tests/trace/test_render_cli.py.)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest


def _json(gfxgate_cli, cache: Path, *args: str) -> dict:
    done = gfxgate_cli(*args, "--offline", "--format", "json", env={**os.environ, "GFXGATE_CACHE_DIR": str(cache)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _cell(gfxgate_cli, cache: Path, target: str, tag: str) -> dict:
    data = _json(gfxgate_cli, cache, "timeline", "-t", target, "--from", tag, "--to", tag)
    return data["targets"][0]["cells"][0]


@pytest.mark.parametrize(
    "target,label", [("gfx1031", "ROCm: override 10.3.0"), ("gfx900", "ROCm: build + rocBLAS files")]
)
@pytest.mark.parametrize("tag", ["v0.12.6", "v0.12.10", "v0.12.11"])
def test_2_no_vulkan_where_the_linux_archives_shipped_none(gfxgate_cli, tmp_path, target, label, tag):
    """v0.12.6-v0.12.11's tarballs have no lib/ollama/vulkan (archive_novulkan; 399eacf48 is first in v0.13.0)."""
    cell = _cell(gfxgate_cli, tmp_path, target, tag)
    assert cell["label"] == label, cell["label"]
    vulkan = next(b for b in cell["backends"] if b["backend"] == "vulkan")
    assert vulkan["state"] == "none", vulkan


def test_2_vulkan_arrives_with_the_archives_of_v0_13_0(gfxgate_cli, tmp_path):
    vulkan = next(b for b in _cell(gfxgate_cli, tmp_path, "gfx1031", "v0.13.0")["backends"] if b["backend"] == "vulkan")
    assert vulkan["state"] == "route", vulkan


@pytest.mark.parametrize("tag", ["v0.12.4", "v0.12.5"])
def test_3_gfx803s_build_route_copies_its_rocblas_files(gfxgate_cli, tmp_path, tag):
    cell = _cell(gfxgate_cli, tmp_path, "gfx803", tag)
    assert cell["label"] == "ROCm: build + rocBLAS files" and "copy-rocblas-tensile" in cell["steps"], cell


def test_4_discovery_at_v0_17_5_is_the_init_probe_not_the_lazy_catalog(gfxgate_cli, tmp_path):
    """v0.12.4-v0.24.0 validate a ROCm device by a deep-initialization probe; no TensileLibrary_lazy check there."""
    data = _json(gfxgate_cli, tmp_path, "scan", "-t", "gfx900", "--ref", "ollama=v0.17.5")
    discovery = next(
        c for layer in data["layers"] if layer["id"] == "discovery" for c in layer["cells"] if c["target"] == "gfx900"
    )
    assert "TensileLibrary_lazy" not in discovery["summary"] and "deep-initialization" in discovery["summary"], (
        discovery
    )


@pytest.mark.parametrize("target", ["gfx1103", "gfx90c"])
def test_5_apus_up_to_v0_12_3_need_the_carve_out_raised(gfxgate_cli, tmp_path, target):
    """IGPUMemLimit (v0.1.29 … v0.12.3) skips an AMD GPU with less than 1 GiB of VRAM whatever the override."""
    old = _cell(gfxgate_cli, tmp_path, target, "v0.12.3")
    assert "uma-carveout-1gib" in old["steps"] and old["label"].endswith("+ 1 GiB carve-out"), old
    assert "uma-carveout-1gib" not in _cell(gfxgate_cli, tmp_path, target, "v0.12.4")["steps"]
