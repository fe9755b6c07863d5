"""The NVIDIA gate matrix and its answer (issue 38 item 2), offline from the embedded snapshot of v0.32.15: each
layer's cell with its evidence lines, and an answer that names the runner, the driver window and the steps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gfxgate.app.scan import ScanRequest, scan

NVIDIA_LAYERS = [
    "nvidia-docs",
    "cuda-build",
    "cuda-packaging",
    "cuda-driver",
    "cuda-discovery",
    "cuda-flash-attention",
    "nvidia-vulkan",
    "installed-cuda-code",
    "runtime",
]


def cells(matrix, target):
    return {layer.id: matrix.cell(layer.id, target) for layer in matrix.layers}


def test_an_nvidia_targets_matrix_has_the_nvidia_rows_and_an_amd_targets_the_amd_rows():
    p40 = scan(ScanRequest(("Tesla P40",)))
    assert p40.targets == ("sm_61",) and [layer.id for layer in p40.layers] == NVIDIA_LAYERS
    amd = scan(ScanRequest(("gfx906",)))
    assert not {layer.id for layer in amd.layers} & set(NVIDIA_LAYERS[:-1]) and "runtime" in {
        la.id for la in amd.layers
    }
    both = scan(ScanRequest(("gfx906", "sm_61")))
    assert both.cell("cuda-build", "gfx906").summary == "not a layer of this target's vendor"
    assert both.cell("cmake-presets", "sm_61").summary == "not a layer of this target's vendor"
    assert both.route("gfx906").best.backend in ("rocm", "vulkan") and both.route("sm_61").best.backend == "cuda"


def test_pascal_runs_the_cuda_v12_cubin_inside_a_driver_window():
    m = scan(ScanRequest(("sm_61",)))
    c = cells(m, "sm_61")
    assert c["cuda-build"].status.value == "allowed" and "cuda_v12 (linux): cubin (61)" in c["cuda-build"].summary
    assert "cuda_v12 (windows): PTX only (61-virtual)" in c["cuda-build"].summary
    assert "cuda_v13 (linux): absent" in c["cuda-packaging"].summary
    assert c["cuda-discovery"].status.value == "allowed" and '"610"' in c["cuda-discovery"].summary
    driver = c["cuda-driver"]
    assert (
        driver.status.value == "partial" and "needs driver 570 or newer" in driver.summary and "R580" in driver.summary
    )
    assert {e.location.path for e in driver.evidence} == {"discover/cuda_compat.go", "docs/gpu.mdx"}
    for verdict in c.values():  # every decided cell cites its lines
        if verdict.status.value in ("allowed", "partial", "blocked"):
            assert verdict.evidence and all(e.location.line for e in verdict.evidence if e.location.repo == "ollama")
    route = m.route("sm_61")
    assert route.best.route == "cuda-release" and route.best.label == "CUDA out of the box"
    assert any("needs driver 570 or newer" in cond and "580" in cond for cond in route.best.conditions)
    # the answer names the runner folder even where the cell is plainly allowed (routes.yaml `states`)
    assert route.best.conditions[0].startswith("the release has a sm_61 cubin: cuda_v12 (linux): cubin (61)")


def test_volta_has_the_550_floor_and_maxwell_only_ptx():
    volta = scan(ScanRequest(("V100",))).route("sm_70")
    assert volta.best.route == "cuda-release"
    assert any("needs driver 550 or newer" in cond and "R580" in cond for cond in volta.best.conditions)
    maxwell = scan(ScanRequest(("5.0",))).route("sm_50")
    assert maxwell.best.route == "cuda-release"
    assert any("PTX only" in cond and "50-virtual" in cond for cond in maxwell.best.conditions)


def test_a_capability_no_runner_lists_gets_vulkan_or_a_build_with_its_configure_command():
    m = scan(ScanRequest(("Jetson Nano",)))  # sm_53: the JetPack runners build 72;87 and 87
    route = m.route("sm_53")
    assert m.cell("cuda-discovery", "sm_53").status.value == "blocked"
    assert route.best.backend == "vulkan"
    build = route.backend("cuda").option
    assert build.route == "cuda-build"
    assert [s.setting for s in build.steps] == [
        "cmake -S llama/server --preset llama_cuda_v12_user_arch -DCMAKE_CUDA_ARCHITECTURES=53 && cmake --build "
        "build/llama-server-cuda_v12 && cmake --install build/llama-server-cuda_v12 --component llama-server"
    ]


def test_the_scan_command_answers_for_sm_61_in_every_format(gfxgate_cli):
    done = gfxgate_cli("scan", "-t", "sm_61", "--format", "json", timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    from gfxgate.datafiles import load_schema
    import jsonschema

    jsonschema.validate(data, load_schema("matrix"))
    assert data["routes"][0]["best"]["conditions"]
    text = gfxgate_cli("scan", "-t", "sm_61", "--format", "md", timeout=120)
    assert "  - if: needs driver 570 or newer" in text.stdout


UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")


@pytest.mark.upstream
@pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")
def test_pascal_at_v0_30_0_is_ptx_only(monkeypatch):
    """v0.30.0, read from the real clone: cuda_v12 listed Pascal as PTX only (60-virtual;61-virtual) on Linux too."""
    root = Path(str(UPSTREAM))
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(root / "ROCm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(root / "clr"))
    m = scan(ScanRequest(("sm_60",), refs={"ollama": "v0.30.0"}, offline=True))
    build = m.cell("cuda-build", "sm_60")
    assert build.status.value == "partial" and "cuda_v12 (linux): PTX only (60-virtual)" in build.summary
    assert m.cell("cuda-flash-attention", "sm_60").status.value == "partial"  # CC < 7 at v0.30.0
    route = m.route("sm_60")
    assert route.best.route == "cuda-release" and any("PTX only" in c for c in route.best.conditions)


def test_the_h200_sweep_confirms_the_cuda_route():
    """The study's real H200 run (samples/h200/sweep.jsonl.zst, llama-server on CUDA and Vulkan) fills the runtime row of
    sm_90 and confirms the answer the rules give."""
    worklog = Path(__file__).resolve().parents[2] / "samples" / "h200" / "sweep.jsonl.zst"
    m = scan(ScanRequest(("H200",), runtime=worklog))
    assert m.cell("runtime", "sm_90").status.value == "allowed"
    route = m.route("sm_90")
    assert route.best.route == "cuda-release" and route.runtime.outcome == "confirmed"
