"""rocBLAS / Tensile / hipBLASLt file names, and the gate-matrix cells for a real rocBLAS-style folder."""

from __future__ import annotations

from pathlib import Path, PurePath

import pytest

from gfxgate.artifacts.rocblas import classify
from gfxgate.artifacts.scan import scan_paths
from gfxgate.artifacts.verdicts import INSTALLED_LAYER, ROCBLAS_LAYER, artifact_verdicts
from gfxgate.model import Status
from gfxgate.targets import catalog


@pytest.mark.parametrize(
    "name, library, kind, target",
    [
        ("Kernels.so-000-gfx900.hsaco", "rocblas", "asm-kernels", "gfx900"),
        ("Kernels.so-000-gfx90a-xnack+.hsaco", "rocblas", "asm-kernels", "gfx90a:xnack+"),
        ("TensileLibrary_lazy_gfx900.dat", "tensile", "lazy-catalog", "gfx900"),
        ("TensileLibrary_gfx1030.dat", "tensile", "catalog", "gfx1030"),
        ("TensileLibrary.dat", "tensile", "catalog", None),
        (
            "TensileLibrary_Type_HH_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx906-xnack-.co",
            "tensile",
            "code-objects",
            "gfx906:xnack-",
        ),
        ("TensileLibrary_Type_SS_fallback_gfx10-3-generic.hsaco", "tensile", "code-objects", "gfx10-3-generic"),
        ("library/gfx942/extop_gfx942.co", "hipblaslt", "code-objects", "gfx942"),
        ("library/gfx942/TensileLiteLibrary_lazy_Mapping.dat", "hipblaslt", "lazy-catalog", "gfx942"),
        ("hipblasltExtOpLibrary.dat", "hipblaslt", "catalog", None),
    ],
)
def test_library_names(name, library, kind, target):
    lib = classify(PurePath(name))
    assert (lib.library, lib.kind, lib.target) == (library, kind, target)


@pytest.mark.parametrize("name", ["libggml-hip.so", "Kernels.txt", "TensileLibraryNotes.md", "gfx900.hsaco"])
def test_other_names_are_not_library_files(name):
    assert classify(PurePath(name)) is None


@pytest.fixture(scope="module")
def folder_cells(rocblas_folder):
    report = scan_paths([rocblas_folder])
    targets = [catalog().parse(t) for t in ("gfx900", "gfx906", "gfx1030", "gfx1031", "gfx1100")]
    return report, artifact_verdicts(report, targets)


def test_folder_names_confirmed_by_headers(folder_cells):
    report, _ = folder_cells
    for f in report.files:
        assert f.library is not None, f.path
        assert not f.errors, f.errors
        if f.library.holds_code:
            assert [c.target for c in f.code_objects] == [f.library.target], f.path


def test_folder_verdicts(folder_cells, rocblas_folder):
    _, cells = folder_cells
    v900 = cells[(ROCBLAS_LAYER, "gfx900")]
    assert v900.status is Status.ALLOWED
    paths = {Path(e.location.path).name for e in v900.evidence}
    assert {"Kernels.so-000-gfx900.hsaco", "TensileLibrary_lazy_gfx900.dat"} <= paths
    assert all(e.location.repo == "file" for e in v900.evidence)
    # gfx906 has assembly kernels but no Tensile catalog: rocBLAS would find no solutions
    assert cells[(ROCBLAS_LAYER, "gfx906")].status is Status.PARTIAL
    assert cells[(ROCBLAS_LAYER, "gfx1030")].status is Status.ALLOWED
    v1031 = cells[(ROCBLAS_LAYER, "gfx1031")]
    assert v1031.status is Status.OVERRIDE_REQUIRED
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in v1031.remedy and "gfx1030" in v1031.summary
    v1100 = cells[(ROCBLAS_LAYER, "gfx1100")]
    assert v1100.status is Status.BLOCKED and v1100.evidence
    # no non-library files were scanned: the installed-code row has nothing to say
    assert cells[(INSTALLED_LAYER, "gfx900")].status is Status.UNKNOWN
    assert "no installed files" in cells[(INSTALLED_LAYER, "gfx900")].reason


def test_name_content_mismatch_is_reported(built, tmp_path):
    import shutil

    from gfxgate.artifacts.scan import scan_file

    liar = tmp_path / "Kernels.so-000-gfx900.hsaco"
    shutil.copy(built.code_object("gfx1030"), liar)
    report = scan_file(liar)
    assert [c.target for c in report.code_objects] == ["gfx1030"]
    assert [e.message for e in report.errors] == ["the name claims gfx900, the code objects are for gfx1030"]
