"""`gfxgate scan --installed`: the artifact rows of the gate matrix filled from real code objects."""

from __future__ import annotations

import json

import pytest

from gfxgate.cli import main


def _cell(data, layer, target):
    row = next(l for l in data["layers"] if l["id"] == layer)
    return row["cells"][data["targets"].index(target)]


def test_installed_rows_carry_file_evidence(rocblas_folder, capsys):
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "-t", "gfx1100", "--installed", str(rocblas_folder), "--format", "json"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    data = json.loads(out)
    gfx900 = _cell(data, "rocblas-artifacts", "gfx900")
    assert gfx900["status"] == "allowed"
    assert any("Kernels.so-000-gfx900.hsaco" in e["where"] for e in gfx900["evidence"])
    assert _cell(data, "rocblas-artifacts", "gfx1100")["status"] in ("blocked", "override-required")
    assert _cell(data, "installed-gpu-code", "gfx900")["status"] != "not-scanned"
    # the source-side rows still come from the snapshot
    assert _cell(data, "cmake-filter", "gfx900")["status"] == "override-required"


def test_folder_without_gpu_libraries_is_unknown_not_blocked(tmp_path, capsys):
    import os
    import shutil
    import sys

    host = tmp_path / "lib"
    host.mkdir()
    shutil.copy(os.path.realpath(sys.executable), host / "python-host-elf")  # a real ELF with no GPU code
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "--installed", str(host), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert info.value.code == 0
    cell = _cell(data, "installed-gpu-code", "gfx900")
    assert cell["status"] == "unknown" and "no GPU library" in cell["reason"]
