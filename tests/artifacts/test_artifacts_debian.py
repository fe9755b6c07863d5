"""End to end against real Debian packages nobody here wrote (apt-get download + dpkg -x, cached)."""

from __future__ import annotations

import pytest

from gfxgate.artifacts.model import EMBEDDED, HIP_HOST, HOST, HOST_WITH_IMAGES, IN_BUNDLE
from gfxgate.artifacts.scan import scan_file, scan_paths
from gfxgate.artifacts.verdicts import INSTALLED_LAYER, artifact_verdicts
from gfxgate.model import Status
from gfxgate.targets import catalog


def test_libhsa_runtime_embedded_images(libhsa):
    report = scan_file(libhsa, kernels=True)
    assert report.kind == HOST_WITH_IMAGES and not report.errors, report.errors
    images = report.code_objects
    assert len(images) == 29  # the blit-kernel images in .data (FORMATS.md)
    assert {c.container for c in images} == {EMBEDDED}
    assert {c.code_object_version for c in images} == {2, 4}
    targets = report.target_counts()
    for expected in ("gfx803", "gfx900", "gfx900:xnack-", "gfx906", "gfx90a", "gfx1030", "gfx1035"):
        assert expected in targets
    data = libhsa.read_bytes()
    for c in images:  # every offset points at an AMDGPU ELF header
        assert data[c.offset : c.offset + 4] == b"\x7fELF" and data[c.offset + 18] == 224
    v4 = [c for c in images if c.code_object_version == 4]
    assert all("copy_buffer_to_image" in c.kernels for c in v4)  # from the msgpack metadata note
    v2 = [c for c in images if c.code_object_version == 2]
    assert len(v2) == 3 and all("__copy_buffer_to_image_kernel" in c.kernels for c in v2)  # from v2 kernel symbols


def test_libamdhip64_has_no_code_objects_only_names(libamdhip):
    report = scan_file(libamdhip)
    # its .rodata holds a bundle magic string and a target table, not device code
    assert report.kind == HOST and not report.code_objects and not report.errors
    assert {"gfx900", "gfx906", "gfx1030"} <= {s.target for s in report.strings}


def test_installed_row_for_runtime_only(libhsa, libamdhip):
    report = scan_paths([libhsa, libamdhip])
    cells = artifact_verdicts(report, [catalog().parse("gfx1031"), catalog().parse("gfx1100")])
    v = cells[(INSTALLED_LAYER, "gfx1031")]
    assert v.status is Status.PARTIAL and "runtime" in v.summary
    assert v.evidence[0].location.path == str(libhsa)
    assert cells[(INSTALLED_LAYER, "gfx1100")].status is Status.BLOCKED


@pytest.mark.slow
def test_librocsparse_bundles(librocsparse):
    report = scan_file(librocsparse)
    assert report.kind == HIP_HOST and not report.errors
    counts = report.target_counts()
    assert set(counts) == {
        "gfx803",
        "gfx900:xnack-",
        "gfx906:xnack-",
        "gfx908:xnack-",
        "gfx90a:xnack+",
        "gfx90a:xnack-",
        "gfx1030",
    }
    assert set(counts.values()) == {111}  # 111 translation units, one bundle each
    assert all(c.container == IN_BUNDLE and not c.note for c in report.code_objects)  # e_flags agree with ids
    assert report.bytes_read < report.size / 100, (report.bytes_read, report.size)
    cells = artifact_verdicts(scan_paths([librocsparse]), [catalog().parse("gfx900"), catalog().parse("gfx902")])
    assert cells[(INSTALLED_LAYER, "gfx900")].status is Status.ALLOWED
    v902 = cells[(INSTALLED_LAYER, "gfx902")]
    assert v902.status is Status.OVERRIDE_REQUIRED and "HSA_OVERRIDE_GFX_VERSION=9.0.0" in v902.remedy


@pytest.mark.slow
def test_override_beats_runtime_only_images(libhsa, librocsparse):
    """gfx1031: libhsa's blit kernels cover it, but the library code is gfx1030 → the answer is 10.3.0."""
    cells = artifact_verdicts(scan_paths([libhsa, librocsparse]), [catalog().parse("gfx1031")])
    v = cells[(INSTALLED_LAYER, "gfx1031")]
    assert v.status is Status.OVERRIDE_REQUIRED and v.remedy.startswith("HSA_OVERRIDE_GFX_VERSION=10.3.0 ")
    assert {e.location.path for e in v.evidence} == {str(librocsparse)}
