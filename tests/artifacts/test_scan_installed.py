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


def test_no_gpu_code_anywhere_cites_the_folders_not_the_first_files(gfxgate_cli, tmp_path):
    """issue 29: `scan --installed default` cited Mcrt1.o (the walk's first file) as evidence that no GPU code is
    installed; with nothing found, the scanned folders are the evidence, with how many files each held."""
    import json
    import shutil
    import sys

    first, second = tmp_path / "lib", tmp_path / "more"
    for folder in (first, second):
        folder.mkdir()
        shutil.copy(sys.executable, folder / "Acrt1.o")  # a real host ELF without GPU code
    shutil.copy(sys.executable, first / "libx.so")
    done = gfxgate_cli(
        "scan",
        "-t",
        "gfx900",
        "--installed",
        str(first),
        "--installed",
        str(second),
        "--format",
        "json",
        timeout=120,
        check=True,
    )
    layer = next(layer for layer in json.loads(done.stdout)["layers"] if layer["id"] == "installed-gpu-code")
    evidence = layer["cells"][0]["evidence"]
    assert [e["where"] for e in evidence] == [str(first), str(second)]
    assert [e["text"] for e in evidence] == ["2 file(s) scanned here", "1 file(s) scanned here"]
