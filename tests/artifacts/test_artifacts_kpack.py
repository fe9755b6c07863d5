"""kpack in the artifact scanner: the format's reference archives, archives of real code objects written by our own
writer from the spec (tests/artifacts/kpack_writer.py), a kpack'd HIP library, and hostile archives — each hostile
one a per-file error within the bounds, never a traceback."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import msgpack
import pytest

from gfxgate.artifacts import kpack as kp
from gfxgate.artifacts.budget import Budget
from gfxgate.artifacts.model import IN_KPACK, KPACK, KPACK_HOST
from gfxgate.artifacts.render import ArtifactsResult, render
from gfxgate.artifacts.scan import scan_bytes, scan_paths
from tests.artifacts.kpack_writer import kpack, kpacked_host

DATA = Path(__file__).parent / "data" / "kpack"


def _errors(report) -> list[str]:
    return [e.message for e in report.errors]


def _no_internal(report) -> None:
    assert not [m for m in _errors(report) if "internal error" in m or "Traceback" in m]


# -- the format's own test data (ROCm/rocm-kpack runtime/tests/test_assets) ---------------------------------------
def test_reference_noop_archive_lists_libraries_and_arches():
    report = scan_paths([DATA / "test_noop.kpack"]).files[0]
    assert report.kind == KPACK
    info = report.kpack
    assert (info.role, info.version, info.group_name, info.arch_family, info.compression) == (
        "archive",
        1,
        "test",
        "gfx900X",
        "none",
    )
    assert info.gfx_arches == ("gfx900", "gfx906")
    assert {lib.binary: lib.archs for lib in info.libraries} == {
        "bin/testapp": ("gfx900",),
        "lib/libtest.so": ("gfx900", "gfx906"),
    }
    # its payloads are byte patterns, not ELF: listed from the TOC, unconfirmed, each with its error
    assert sorted((c.entry_id, c.target, c.confirmed, c.container) for c in report.code_objects) == [
        ("bin/testapp#0", "gfx900", False, IN_KPACK),
        ("lib/libtest.so#0", "gfx900", False, IN_KPACK),
        ("lib/libtest.so#0", "gfx906", False, IN_KPACK),
    ]
    assert sorted(_errors(report)) == [
        f"kpack {b} {a}: no ELF magic"
        for b, a in sorted(
            [("bin/testapp#0", "gfx900"), ("lib/libtest.so#0", "gfx900"), ("lib/libtest.so#0", "gfx906")]
        )
    ]


def test_reference_zstd_archive_inflates_each_frame():
    report = scan_paths([DATA / "test_zstd.kpack"]).files[0]
    assert report.kpack.compression == "zstd-per-kernel"
    assert {lib.binary: lib.archs for lib in report.kpack.libraries} == {
        "bin/hiptest": ("gfx1100",),
        "lib/libhip.so": ("gfx1100", "gfx1101"),
    }
    # the frames inflated to the sizes the TOC declares (no size error), then were found not to be ELF
    assert all(m.endswith(": no ELF magic") for m in _errors(report)) and len(_errors(report)) == 3
    from gfxgate.artifacts.verdicts import INSTALLED_LAYER, artifact_verdicts
    from gfxgate.targets import catalog

    report_all = scan_paths([DATA / "test_zstd.kpack"])
    cell = artifact_verdicts(report_all, [catalog().parse("gfx1100")])[(INSTALLED_LAYER, "gfx1100")]
    assert cell.summary == "a kpack TOC entry names gfx1100 code but its ELF could not be read"
    assert report.bytes_read <= report.size


# -- archives of real code objects, written from the spec ----------------------------------------------------------
@pytest.fixture(scope="module")
def objects(built) -> dict[str, bytes]:
    return {a: built.code_object(a).read_bytes() for a in ("gfx1030", "gfx1100", "gfx906:xnack-")}


@pytest.mark.parametrize("scheme", ["none", "zstd-per-kernel"])
def test_archive_of_real_code_objects_confirms_each_target(objects, scheme):
    data = kpack(
        {
            "lib/librocblas.so.5#0": {"gfx1030": objects["gfx1030"], "gfx1100": objects["gfx1100"]},
            "lib/libhipblaslt.so.1#0": {"gfx906": objects["gfx906:xnack-"]},
        },
        scheme=scheme,
    )
    report = scan_bytes(data, "rocm-gfx1030.kpack", kernels=True)
    assert _errors(report) == []
    assert sorted((c.entry_id, c.target, c.confirmed, c.note) for c in report.code_objects) == [
        ("lib/libhipblaslt.so.1#0", "gfx906:xnack-", True, ""),
        ("lib/librocblas.so.5#0", "gfx1030", True, ""),
        ("lib/librocblas.so.5#0", "gfx1100", True, ""),
    ]
    assert all(c.kernels == ("add", "scale") for c in report.code_objects)  # --kernels reads the inflated objects
    assert report.target_counts() == {"gfx906:xnack-": 1, "gfx1030": 1, "gfx1100": 1}


def test_toc_arch_that_the_code_object_contradicts_is_noted(objects):
    report = scan_bytes(kpack({"lib/a.so#0": {"gfx1100": objects["gfx1030"]}}), "a.kpack")
    (obj,) = report.code_objects
    assert (obj.target, obj.note) == ("gfx1030", "the kpack TOC says gfx1100, e_flags say gfx1030")


def test_kpacked_library_and_its_archive_give_arches_per_library(built, objects, tmp_path):
    tree = tmp_path / "rocm"
    (tree / "lib").mkdir(parents=True)
    (tree / ".kpack").mkdir()
    kpacked_host(
        built.hip_so("libvadd.so"),
        tree / "lib" / "libvadd.so",
        "lib/libvadd.so",
        ["../.kpack/vadd-gfx110X.kpack"],
        objcopy=shutil.which("llvm-objcopy-19") or "llvm-objcopy-19",
    )
    (tree / ".kpack" / "vadd-gfx110X.kpack").write_bytes(
        kpack(
            {"lib/libvadd.so#0": {"gfx1100": objects["gfx1100"], "gfx1030": objects["gfx1030"]}},
            scheme="zstd-per-kernel",
        )
    )
    report = scan_paths([tree])
    host = next(f for f in report.files if f.path.endswith("libvadd.so"))
    assert host.kind == KPACK_HOST and _errors(host) == []
    assert host.code_objects == ()  # .hip_fatbin is no longer in the file
    assert (host.kpack.kernel_name, host.kpack.search_paths) == ("lib/libvadd.so", ("../.kpack/vadd-gfx110X.kpack",))
    assert (host.kpack.hipk_wrappers, host.kpack.hipf_wrappers) == (1, 0)
    assert report.kpack_libraries() == {
        "lib/libvadd.so": {
            "archs": ["gfx1030", "gfx1100"],
            "archives": [str(tree / ".kpack" / "vadd-gfx110X.kpack")],
            "referenced_by": [host.path],
        }
    }
    assert set(report.target_counts()) == {"gfx1030", "gfx1100"}
    import jsonschema

    from gfxgate.datafiles import load_schema

    data = json.loads(render(ArtifactsResult(report, (), ()), "json"))
    jsonschema.validate(data, load_schema("artifacts"))
    assert data["kpack"]["lib/libvadd.so"]["archs"] == ["gfx1030", "gfx1100"]
    from gfxgate.artifacts.verdicts import INSTALLED_LAYER, artifact_verdicts
    from gfxgate.model import Status
    from gfxgate.targets import catalog

    cells = artifact_verdicts(report, [catalog().parse("gfx1030"), catalog().parse("gfx900")])
    assert cells[(INSTALLED_LAYER, "gfx1030")].status is Status.ALLOWED  # the kpack'd code counts as installed code
    assert cells[(INSTALLED_LAYER, "gfx900")].status is not Status.ALLOWED
    text = render(ArtifactsResult(report, (), ()), "text")
    assert "  kpack lib/libvadd.so: gfx1030, gfx1100" in text
    assert "  kpack reference lib/libvadd.so: 1 HIPK wrapper(s), archives at ../.kpack/vadd-gfx110X.kpack" in text


def test_kpacked_library_that_kept_its_fatbin_bytes(built, tmp_path):
    """A .hip_fatbin not zero-paged: its bundles are still read, and the HIPK records are no error."""
    out = kpacked_host(
        built.hip_so("libvadd.so"),
        tmp_path / "libvadd.so",
        "lib/libvadd.so",
        [".kpack"],
        objcopy=shutil.which("llvm-objcopy-19") or "llvm-objcopy-19",
        keep_fatbin=True,
    )
    report = scan_paths([out]).files[0]
    assert _errors(report) == []
    assert report.kpack.hipk_wrappers == 1 and report.target_counts() == {"gfx900": 1, "gfx906:xnack-": 1}


def test_hipk_records_without_a_marker_are_an_error(built, tmp_path):
    out = kpacked_host(
        built.hip_so("libvadd.so"),
        tmp_path / "libvadd.so",
        "x",
        [],
        objcopy=shutil.which("llvm-objcopy-19") or "llvm-objcopy-19",
    )
    stripped = tmp_path / "stripped.so"
    import subprocess

    subprocess.run(
        [
            shutil.which("llvm-objcopy-19") or "llvm-objcopy-19",
            "--remove-section=.rocm_kpack_ref",
            str(out),
            str(stripped),
        ],
        check=True,
    )
    report = scan_paths([stripped]).files[0]
    assert report.kind == KPACK_HOST
    assert _errors(report) == ["1 HIPK wrapper record(s) but no .rocm_kpack_ref section"]


def test_text_path_list_marker_and_garbage_marker():
    assert kp.parse_ref(b"../../.kpack:.kpack\0", 0) == (None, ("../../.kpack", ".kpack"))
    assert kp.parse_ref(msgpack.packb({"kernel_name": "bin/x", "kpack_search_paths": ["a"]}), 0) == ("bin/x", ("a",))
    for bad in (b"\xff\xfe\x00\x01", msgpack.packb({"kpack_search_paths": "notalist"}), b"\x81\xa1"):
        with pytest.raises(kp.ArtifactFormatError):
            kp.parse_ref(bad, 0)


# -- hostile archives ---------------------------------------------------------------------------------------------
def _toc_at(data: bytes) -> int:
    return struct.unpack_from("<Q", data, 8)[0]


def _with_toc(data: bytes, toc: bytes) -> bytes:
    return data[: _toc_at(data)] + toc


def _hostile(objects) -> dict[str, bytes]:
    good = kpack({"lib/a.so#0": {"gfx1100": objects["gfx1100"]}})
    zgood = kpack({"lib/a.so#0": {"gfx1100": objects["gfx1100"]}}, scheme="zstd-per-kernel")
    ztoc = msgpack.unpackb(zgood[_toc_at(zgood) :])
    ntoc = msgpack.unpackb(good[_toc_at(good) :])
    zstart = ztoc["zstd_offset"]
    return {
        "truncated TOC": good[:-7],
        "TOC offset past the end": good[:8] + struct.pack("<Q", len(good) + 100) + good[16:],
        "TOC offset inside the header": good[:8] + struct.pack("<Q", 3) + good[16:],
        "cut header": good[:10],
        "unknown version": good[:4] + struct.pack("<I", 9) + good[8:],
        "TOC not a map": _with_toc(good, msgpack.packb([1, 2, 3])),
        "unknown scheme": _with_toc(good, msgpack.packb({**ntoc, "compression_scheme": "lz4"})),
        "huge array count": _with_toc(good, b"\xdd\xff\xff\xff\xff" + b"\x00" * 8),
        "huge map count": _with_toc(good, b"\xdf\xff\xff\xff\xff"),
        "huge string length": _with_toc(good, b"\x81\xdb\xff\xff\xff\xf0abc"),
        "deep nesting": _with_toc(good, b"\x91" * 200_000 + b"\xc0"),
        "blob past the end": _with_toc(good, msgpack.packb({**ntoc, "blobs": [{"offset": 64, "size": 1 << 40}]})),
        "negative blob offset": _with_toc(good, msgpack.packb({**ntoc, "blobs": [{"offset": -5, "size": 10}]})),
        "ordinal out of range": _with_toc(
            good, msgpack.packb({**ntoc, "toc": {"lib/a.so#0": {"gfx1100": {"type": "hsaco", "ordinal": 7}}}})
        ),
        "zstd region past the end": _with_toc(zgood, msgpack.packb({**ztoc, "zstd_size": 1 << 40})),
        "huge frame count": zgood[:zstart] + struct.pack("<I", 0xFFFFFFFF) + zgood[zstart + 4 :],
        "frame past its region": zgood[: zstart + 4] + struct.pack("<I", 0x7FFFFFFF) + zgood[zstart + 8 :],
        "corrupt frame": zgood[: zstart + 8] + b"\x00" * 16 + zgood[zstart + 24 :],
    }


HOSTILE_MESSAGES = {
    "truncated TOC": "not a valid msgpack document",
    "TOC offset past the end": "lies outside the file",
    "TOC offset inside the header": "lies outside the file",
    "cut header": "kpack header runs past the end",
    "unknown version": "kpack version 9",
    "TOC not a map": "not a map",
    "unknown scheme": "compression scheme 'lz4'",
    "huge array count": "not a valid msgpack document",
    "huge map count": "not a valid msgpack document",
    "huge string length": "not a valid msgpack document",
    "deep nesting": "not a valid msgpack document",
    "blob past the end": "lies outside the blob data",
    "negative blob offset": "not a non-negative integer",
    "ordinal out of range": "has ordinal 7",
    "zstd region past the end": "lies outside the blob data",
    "huge frame count": "claims 4294967295 frames",
    "frame past its region": "runs past its region",
    "corrupt frame": "kpack zstd frame",
}


def test_each_hostile_archive_is_one_clear_error(objects):
    cases = _hostile(objects)
    assert set(cases) == set(HOSTILE_MESSAGES)
    for name, data in cases.items():
        report = scan_bytes(data, f"{name}.kpack")
        _no_internal(report)
        assert report.kind == KPACK, name
        assert report.errors, name
        assert HOSTILE_MESSAGES[name] in report.errors[0].message, (name, _errors(report))
        assert report.bytes_read <= len(data), name


def test_zstd_bomb_stops_at_what_the_toc_declares(objects):
    import zstandard

    # a code object and 512 MB of zeros, compressed a megabyte at a time (one 512 MB buffer at level 19 cost 2.5 s)
    compressor = zstandard.ZstdCompressor().compressobj(size=len(objects["gfx1100"]) + (512 << 20))
    zeros = bytes(1 << 20)
    bomb = b"".join([compressor.compress(objects["gfx1100"]), *(compressor.compress(zeros) for _ in range(512))])
    bomb += compressor.flush()
    assert len(bomb) < 100_000
    data = kpack({"lib/a.so#0": {"gfx1100": objects["gfx1100"]}}, scheme="zstd-per-kernel")
    toc = msgpack.unpackb(data[_toc_at(data) :])
    body = struct.pack("<I", 1) + struct.pack("<I", len(bomb)) + bomb
    toc["zstd_size"] = len(body)
    bombed = data[:64] + body
    bombed = bombed[:8] + struct.pack("<Q", len(bombed)) + bombed[16:64] + body + msgpack.packb(toc)
    budget = Budget()
    report = scan_bytes(bombed, "bomb.kpack", budget=budget)
    _no_internal(report)
    assert any("inflates past" in m for m in _errors(report)), _errors(report)
    assert budget.used["inflated bytes"] <= len(objects["gfx1100"]) + (1 << 20)
    assert [(c.target, c.confirmed) for c in report.code_objects] == [("gfx1100", False)]
    # a TOC that declares no size is bounded by the scan's cap and by the per-scan budget
    del toc["toc"]["lib/a.so#0"]["gfx1100"]["original_size"]
    undeclared = bombed[: _toc_at(bombed)] + msgpack.packb(toc)
    small = Budget(inflated_bytes=8 << 20)
    report = scan_bytes(undeclared, "bomb.kpack", budget=small)
    _no_internal(report)
    assert any("budget exhausted: inflated bytes" in m for m in _errors(report)), _errors(report)
    assert small.used["inflated bytes"] <= 8 << 20


# -- fuzz: mutated archives and kpack'd libraries ------------------------------------------------------------------
@pytest.fixture(scope="module")
def kpack_seeds(built, objects, tmp_path_factory) -> list[bytes]:
    host = kpacked_host(
        built.hip_so("libvadd.so"),
        tmp_path_factory.mktemp("kp") / "libvadd.so",
        "lib/libvadd.so",
        ["../.kpack/a.kpack"],
        objcopy=shutil.which("llvm-objcopy-19") or "llvm-objcopy-19",
    )
    kernels = {"lib/a.so#0": {"gfx1100": objects["gfx1100"], "gfx1030": objects["gfx1030"]}}
    return [
        kpack(kernels),
        kpack(kernels, scheme="zstd-per-kernel"),
        (DATA / "test_noop.kpack").read_bytes(),
        (DATA / "test_zstd.kpack").read_bytes(),
        host.read_bytes(),
    ]


def test_mutated_kpack_inputs_give_reports_not_tracebacks(kpack_seeds):
    """1,500 seeded mutations of the archives and of a kpack'd library (tests/artifacts/test_artifacts_fuzz.py)."""
    from gfxgate.artifacts.elf import Blob
    from tests.artifacts.test_artifacts_fuzz import cases, mutate

    for case in cases(44, 1500, len(kpack_seeds), 6):
        data = mutate(kpack_seeds[case[1]], case[2])
        budget = Budget()
        report = scan_bytes(data, "fuzz.kpack", kernels=True, cap=16 << 20, budget=budget)
        internal = [m for m in _errors(report) if "internal error" in m or "Traceback" in m]
        assert not internal, (internal, case)
        assert len(report.errors) <= 51, case
        assert report.bytes_read <= len(data), case
        assert budget.used["inflated bytes"] <= 2 * (16 << 20), case
        try:  # the parser itself raises only format errors
            kp.parse_archive(Blob(data))
        except kp.ArtifactFormatError:
            pass
        except Exception as exc:
            raise AssertionError(case) from exc
