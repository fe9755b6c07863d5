"""`doctor --root` of a captured Windows install (issue 44, docs/windows.md).

The tree has the real installer's folder layout (OllamaSetup.exe installs per user under
%LOCALAPPDATA%\\Programs\\Ollama: ollama.exe, lib\\ollama\\rocm_v7_1\\ with ggml-hip.dll and the HIP SDK's
rocblas\\library, lib\\ollama\\vulkan\\; the log in %LOCALAPPDATA%\\Ollama\\server.log). **Placeholders**: ollama.exe,
the DLLs and the TensileLibrary_lazy_<gfx>.dat catalogues are empty files of those names — no Windows binary can be had
here; doctor never runs a captured tree's binary, reads the catalogues by name (as Ollama's discovery does) and does not
read PE DLLs (the installed-code row says "not scanned"). The rocBLAS kernels (Kernels.so-000-<gfx>.hsaco) are real
code objects compiled with clang-19 (amdgcn ELF, the same format the HIP SDK ships). The server log's lines are in
the format the v0.32.15 sources print (server/routes.go "Listening on %s (version %s)", discover/types.go "inference
compute")."""

from __future__ import annotations

import json
import subprocess

import pytest

LOG = (
    'time=2026-11-20T10:00:00.100+01:00 level=INFO source=routes.go:2008 msg="Listening on 127.0.0.1:11434 (version 0.32.15)"\n'
    'time=2026-11-20T10:00:00.200+01:00 level=INFO source=runner.go:61 msg="discovering available GPUs..."\n'
    'time=2026-11-20T10:00:02.300+01:00 level=INFO source=types.go:32 msg="inference compute" id=0 filter_id="" '
    'library=Vulkan compute=0.0 name=Vulkan0 description="AMD Radeon RX 6700 XT" libdirs=ollama,vulkan driver=0.0 '
    'pci_id=0000:03:00.0 type=discrete total="12.0 GiB" available="11.7 GiB"\n'
)
# the HIP SDK's rocblas\library as the release copies it whole: catalogues of the SDK's targets, none for gfx1031
SDK_TARGETS = ("gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1151", "gfx1200", "gfx1201", "gfx906", "gfx908")


def windows_tree(root, built=None):
    local = root / "Users" / "alice" / "AppData" / "Local"
    app = local / "Programs" / "Ollama"
    rocm = app / "lib" / "ollama" / "rocm_v7_1"
    library = rocm / "rocblas" / "library"
    library.mkdir(parents=True)
    (app / "lib" / "ollama" / "vulkan").mkdir()
    for placeholder in (
        app / "ollama.exe",
        app / "ollama app.exe",
        app / "lib" / "ollama" / "ggml-base.dll",
        rocm / "ggml-hip.dll",
        rocm / "rocblas.dll",
        rocm / "amdhip64_7.dll",
        app / "lib" / "ollama" / "vulkan" / "ggml-vulkan.dll",
    ):
        placeholder.write_bytes(b"")
    for gfx in SDK_TARGETS:
        (library / f"TensileLibrary_lazy_{gfx}.dat").write_bytes(b"")
        if built is not None:  # real code objects (clang-19) where the SDK has its kernels
            (library / f"Kernels.so-000-{gfx}.hsaco").write_bytes(built.code_object(gfx).read_bytes())
    (local / "Ollama").mkdir()
    (local / "Ollama" / "server.log").write_text(LOG)
    return root


@pytest.fixture
def env(tmp_path):
    import os

    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(tmp_path / "cache")
    return out


def test_doctor_infers_windows_from_the_tree_and_answers_for_its_release(gfxgate_exe, tmp_path, env, built):
    tree = windows_tree(tmp_path / "c", built)
    proc = subprocess.run(
        [gfxgate_exe, "doctor", "--root", str(tree), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert any("answered for the Windows release" in n for n in report["notes"])
    (target,) = report["targets"]
    assert target["target"] == "gfx1031" and target["version"] == "0.32.15"
    assert "(Windows release)" in target["matrix_from"]
    layers = {row["layer"]: row for row in target["rows"]}
    assert layers["hsa-override"]["status"] == "blocked"  # the override's absence, with its docs line
    assert "rocm_v7_1_windows" in layers["cmake-presets"]["summary"]
    assert "whole rocblas folder" in layers["release-packaging"]["summary"]
    # the SDK's kernels, none for gfx1031; on Windows another target's code is no route (no "override-required")
    assert layers["rocblas-artifacts"]["status"] == "blocked" and "gfx1030" in layers["rocblas-artifacts"]["summary"]
    assert (
        layers["installed-gpu-code"]["status"] == "not-scanned" and "PE DLL" in layers["installed-gpu-code"]["reason"]
    )
    (runner,) = [r for i in report["installs"]["ollama"] for r in i["runners"] if r["kind"] == "rocm"]
    assert "gfx1030" in runner["lazy_catalogs"] and "gfx1031" not in runner["lazy_catalogs"]
    text = json.dumps(report)
    assert "HSA_OVERRIDE_GFX_VERSION=" not in text and "systemd" not in text and "drop-in" not in text
    rocm = next(b for b in target["backends"] if b["backend"] == "rocm")
    steps = {s["workaround"]: s for s in rocm["steps"]}
    assert set(steps) == {"build-amdgpu-targets-windows", "copy-rocblas-tensile-windows"}
    assert any(
        "%LOCALAPPDATA%\\Programs\\Ollama\\lib\\ollama\\rocm_v7_1\\rocblas\\library" in c
        for c in steps["copy-rocblas-tensile-windows"]["commands"]
    )
    assert target["answer"].startswith("gfx1031") and "Vulkan" in target["answer"]


def test_a_linux_tree_is_not_taken_for_windows(tmp_path):
    from gfxgate.host.install import tree_os
    from gfxgate.host.rootfs import RootFS

    tree = windows_tree(tmp_path / "c")
    assert tree_os(RootFS(tree)) == "windows"
    (tree / "etc").mkdir()  # a Linux root that happens to hold a Users folder
    assert tree_os(RootFS(tree)) == "linux"


def test_without_a_log_the_report_says_where_the_target_comes_from(tmp_path):
    from gfxgate.app.doctor import DoctorRequest, examine

    tree = windows_tree(tmp_path / "c")
    (tree / "Users" / "alice" / "AppData" / "Local" / "Ollama" / "server.log").unlink()
    report = examine(DoctorRequest(root=tree)).report
    assert report.targets == ()
    assert any("a Windows tree has no sysfs" in n for n in report.notes)
    assert any("rocm_v7_1" in r.path for i in report.installs.ollama for r in i.runners)


def test_the_windows_report_reads_as_windows_in_every_format(tmp_path):
    from gfxgate.app.doctor import DoctorRequest, examine
    from gfxgate.doctor.render import render

    report = examine(DoctorRequest(root=windows_tree(tmp_path / "c"))).report
    md = render(report, "md")
    assert "a Windows install: no sysfs" in md and "amdgpu module" not in md and "ollama.service" not in md
    for fmt in ("text", "json", "nfd", "prometheus"):
        assert render(report, fmt)  # every formatter takes a Windows report
