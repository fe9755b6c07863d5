"""The embedded Windows timeline (rules/snapshots/timeline-windows.json.zst, docs/windows.md): the Windows release's
routes per release, stored beside Linux's."""

from __future__ import annotations

from gfxgate.timeline import snapshot


def test_the_windows_table_is_stored_beside_linux_s_and_small():
    assert snapshot.default_path("windows").name == "timeline-windows.json.zst"
    assert snapshot.default_path("windows").parent == snapshot.default_path().parent
    assert snapshot.default_path("windows").stat().st_size < 200_000


def test_the_windows_table_answers_with_the_windows_routes():
    windows = snapshot.load(os="windows")
    assert windows.os == "windows" and windows.tags[0] == "v0.30.0" and windows.tags[-1] == snapshot.load().tags[-1]
    # NVIDIA's too: cuda_v12's Windows preset has Pascal as PTX only (60-virtual;61-virtual), so CUDA runs sm_61 by JIT
    assert windows.cell_at("sm_61", "v0.32.15").route == "cuda-release"
    assert snapshot.load_cells(os="windows").status_where("sm_61", "v0.32.15", "cuda-build")[0] == "partial"
    routes = {c.route for r in windows.rows for c in r.cells}
    assert "rocm-override" not in routes and "rocm-build" not in routes  # Linux's
    # gfx1010 was in rocm_v7_1_windows up to v0.31.1; v0.31.2 removed it (and gfx942/950/1012/1103)
    assert windows.cell_at("gfx1010", "v0.31.1").route == "rocm-release"
    assert windows.cell_at("gfx1010", "v0.31.2").route == "vulkan-default"
    assert {c.route for c in windows.row("gfx1031").cells} == {"vulkan-default"}
    assert {c.route for c in windows.row("gfx1030").cells} == {"rocm-release"}
    rocm = next(b for b in windows.cell_at("gfx1031", "v0.32.15").backends if b.backend == "rocm")
    assert set(rocm.steps) == {"build-amdgpu-targets-windows", "copy-rocblas-tensile-windows"}


def test_the_linux_table_is_unchanged_by_the_windows_rules():
    linux = snapshot.load()
    assert linux.os == "linux" and linux.tags[0] == "v0.0.1"
    assert "rocm-build-windows" not in {c.route for r in linux.rows for c in r.cells}
    assert "hsa-override" not in {layer for r in linux.rows for c in r.cells for layer, _ in c.layers}


def test_timeline_os_windows_from_the_command_line(capsys):
    from gfxgate.cli import main

    try:
        main(["timeline", "--os", "windows", "-t", "gfx1010", "--format", "md"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    assert out.startswith("# Support timeline: ollama v0.30.0 … ") and "(Windows release)" in out.splitlines()[0]
    assert "| gfx1010 | ROCm out of the box | Vulkan (default) |" in out
