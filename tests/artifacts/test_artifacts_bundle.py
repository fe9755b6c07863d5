"""Offload bundles in real HIP shared objects (plain and --offload-compress), device bundles and CCOB v1-3."""

from __future__ import annotations

import struct
import zlib

import pytest

from gfxgate.artifacts import bundle as bnd
from gfxgate.artifacts.elf import ArtifactFormatError, Blob, host_elf
from gfxgate.artifacts.model import BUNDLE, COMPRESSED_BUNDLE, HIP_HOST, IN_BUNDLE, IN_COMPRESSED
from gfxgate.artifacts.scan import scan_bytes, scan_file
from tests.cputime import cpu_time
from tests.artifacts.artifact_builders import ccob

EXPECTED = {"gfx900": 1, "gfx906:xnack-": 1}


@pytest.mark.parametrize("extra", [(), ("--offload-compress",), ("-fuse-ld=lld",)], ids=["plain", "compressed", "lld"])
def test_hip_shared_object(built, extra):
    so = built.hip_so(f"lib{'-'.join(extra) or 'plain'}.so", *extra)
    report = scan_file(so, kernels=True)
    assert report.kind == HIP_HOST and not report.errors, report.errors
    assert report.target_counts() == EXPECTED
    container = IN_COMPRESSED if extra == ("--offload-compress",) else IN_BUNDLE
    for co in report.code_objects:
        assert co.container == container
        assert co.entry_id == f"hipv4-amdgcn-amd-amdhsa--{co.target}"
        assert co.kernels == ("_Z6vadd_0PfPKf",)
        assert co.note == ""
    data = so.read_bytes()
    if container == IN_BUNDLE:  # the offset points at the ELF itself
        assert {data[co.offset : co.offset + 4] for co in report.code_objects} == {b"\x7fELF"}
    else:  # the offset points at the CCOB blob holding it
        assert {data[co.offset : co.offset + 4] for co in report.code_objects} == {b"CCOB"}


def test_several_translation_units_give_several_bundles(built):
    so = built.hip_so("libmulti.so", units=3)
    report = scan_file(so)
    assert report.target_counts() == {"gfx900": 3, "gfx906:xnack-": 3}
    assert len({co.offset for co in report.code_objects}) == 6


def test_device_only_bundle_file(built):
    path = built.device_bundle("dev.bundle", archs=("gfx900", "gfx90a:xnack+"))
    report = scan_file(path)
    assert report.kind == BUNDLE and not report.errors
    assert report.target_counts() == {"gfx900": 1, "gfx90a:xnack+": 1}


@pytest.mark.parametrize("version", [1, 2, 3])
@pytest.mark.parametrize("method", ["zlib", "zstd"])
def test_ccob_versions_and_methods(built, version, method):
    raw = built.device_bundle("dev.bundle", archs=("gfx900", "gfx90a:xnack+")).read_bytes()
    report = scan_bytes(ccob(raw, version, method), "k.co", kernels=True)
    assert report.kind == COMPRESSED_BUNDLE and not report.errors, report.errors
    assert report.target_counts() == {"gfx900": 1, "gfx90a:xnack+": 1}
    assert all(co.inner_offset and co.kernels == ("_Z6vadd_0PfPKf",) for co in report.code_objects)


def test_clang_writes_ccob_v2_zstd(built):
    data = built.device_bundle("devc.bundle", "--offload-compress").read_bytes()
    header = bnd.parse_compressed_header(Blob(data))
    assert (header.version, header.method, header.total_size) == (2, "zstd", len(data))


def test_decompression_is_capped(built):
    """An entry 8 MiB into a bundle that compresses to a few KiB: inflating it stops at the cap."""
    code = built.code_object("gfx900").read_bytes()
    head = _bundle([(8 << 20, len(code), b"hipv4-amdgcn-amd-amdhsa--gfx900")])
    bomb = ccob(head + b"\0" * ((8 << 20) - len(head)) + code, 2, "zstd")
    assert len(bomb) < 4096
    capped = scan_bytes(bomb, "bomb.co", cap=1 << 20)
    assert any("cap" in e.message for e in capped.errors)
    assert [(c.target, c.confirmed) for c in capped.code_objects] == [("gfx900", False)]
    full = scan_bytes(bomb, "bomb.co")
    assert not full.errors and [(c.target, c.confirmed) for c in full.code_objects] == [("gfx900", True)]


def test_declared_size_lie_is_caught(built):
    raw = built.device_bundle("dev.bundle", archs=("gfx900",)).read_bytes()
    blob = bytearray(ccob(raw + b"\0" * (1 << 20), 2, "zlib"))
    blob[12:16] = (len(raw) // 2).to_bytes(4, "little")  # uncompressed_size claims half the bundle
    report = scan_bytes(bytes(blob), "liar.co", kernels=True)
    assert report.errors and report.kind == COMPRESSED_BUNDLE


def test_corrupt_stream_is_an_error_entry(built):
    raw = built.device_bundle("dev.bundle", archs=("gfx900",)).read_bytes()
    good = ccob(raw, 2, "zlib")
    bad = good[:24] + bytes(b ^ 0x5A for b in good[24:64]) + good[64:]
    report = scan_bytes(bad, "bad.co")
    assert report.errors and not [c for c in report.code_objects if c.confirmed]


def test_hash_mismatch_reported(built):
    raw = built.device_bundle("dev.bundle", archs=("gfx900",)).read_bytes()
    blob = bytearray(ccob(raw, 2, "zlib"))
    blob[16:24] = b"\1" * 8
    report = scan_bytes(bytes(blob), "hash.co", kernels=True)
    assert [e.message for e in report.errors] == ["compressed bundle hash does not match its contents"]


@pytest.mark.parametrize(
    "entry_id, expected",
    [
        ("hipv4-amdgcn-amd-amdhsa--gfx900:xnack-", ("hipv4", "amdgcn-amd-amdhsa", "gfx900:xnack-")),
        ("hipv4-amdgcn-amd-amdhsa--gfx10-3-generic", ("hipv4", "amdgcn-amd-amdhsa", "gfx10-3-generic")),
        ("hipv4-amdgcn-amd-amdhsa-unknown--gfx942", ("hipv4", "amdgcn-amd-amdhsa-unknown", "gfx942")),
        ("host-x86_64-unknown-linux--", ("host", "x86_64-unknown-linux", "")),
        ("host-x86_64-unknown-linux-gnu", ("host", "x86_64-unknown-linux-gnu", "")),
        ("hip-amdgcn-amd-amdhsa-gfx906", ("hip", "amdgcn-amd-amdhsa", "gfx906")),
    ],
)
def test_entry_ids(entry_id, expected):
    assert bnd.split_entry_id(entry_id) == expected


def _bundle(entries: list[tuple[int, int, bytes]], count: int | None = None) -> bytes:
    import struct

    out = bnd.BUNDLE_MAGIC + struct.pack("<Q", len(entries) if count is None else count)
    for off, size, ident in entries:
        out += struct.pack("<QQQ", off, size, len(ident)) + ident
    return out


@pytest.mark.parametrize(
    "data, message",
    [
        (_bundle([(0x1000, 0x10, b"hipv4-amdgcn-amd-amdhsa--gfx900")]) + b"\0" * 64, "outside the bundle"),
        (_bundle([], count=1 << 40) + b"\0" * 64, "entry count"),
        (_bundle([(8, 8, b"x" * 2000)]) + b"\0" * 64, "id length"),
        (_bundle([(0x20, 8, b"hipv4-amdgcn-amd-amdhsa--gfx900")], count=2), "past the end"),
    ],
    ids=["offset-past-end", "huge-count", "huge-id", "truncated"],
)
def test_crafted_bundles_raise_format_errors(data, message):
    with pytest.raises(ArtifactFormatError, match=message):
        bnd.parse_bundle(Blob(data))


def test_ccob_unknown_method_and_version():
    with pytest.raises(ArtifactFormatError, match="version 9"):
        bnd.parse_compressed_header(Blob(b"CCOB\x09\x00\x00\x00" + b"\0" * 40))
    with pytest.raises(ArtifactFormatError, match="method 7"):
        bnd.parse_compressed_header(Blob(b"CCOB\x02\x00\x07\x00" + b"\0" * 40))
    assert zlib  # zlib is the method 0 codec the tests build with


def test_fatbin_wrappers_agree_with_the_walk(built):
    """GNU ld writes each wrapper's blob address in place: every one must be a blob the walk found."""
    data = built.hip_so("libmulti.so", units=3).read_bytes()
    info = host_elf(Blob(data))
    seg, fat = info.section(".hipFatBinSegment"), info.section(".hip_fatbin")
    pointers = bnd.fatbin_wrappers(Blob(data), seg.offset, seg.size)
    walked = [pos for pos, what, _ in bnd.walk_fatbin(Blob(data), fat.offset, fat.size)]
    assert len(pointers) == 3
    assert sorted(p - fat.addr + fat.offset for p in pointers) == walked


@pytest.mark.parametrize("field, value, message", [(0, 0xDEADBEEF, "record magic"), (8, 1 << 60, "outside")])
def test_crafted_wrappers_are_errors_not_crashes(built, field, value, message):
    data = bytearray(built.hip_so("libplain.so").read_bytes())
    seg = host_elf(Blob(bytes(data))).section(".hipFatBinSegment")
    fmt = "<I" if field == 0 else "<Q"
    struct.pack_into(fmt, data, seg.offset + field, value)
    report = scan_bytes(bytes(data), "libcrafted.so")
    assert any(message in e.message for e in report.errors)
    assert report.target_counts() == EXPECTED  # the section walk still finds the code


def test_per_file_work_limits(built, monkeypatch):
    from gfxgate.artifacts import scan

    so = built.hip_so("libmulti.so", units=3)
    monkeypatch.setattr(scan, "MAX_OBJECTS", 4)
    report = scan_file(so)
    assert len(report.code_objects) == 4 and report.kind == HIP_HOST
    assert report.errors[-1].message == "stopped after 4 code objects (a per-file limit)"
    monkeypatch.setattr(scan, "MAX_OBJECTS", 50_000)
    compressed = built.hip_so("libmulti-c.so", "--offload-compress", units=3)
    monkeypatch.setattr(scan, "MAX_INFLATE_TOTAL", 20_000)  # ~1.5 blobs' worth
    report = scan_file(compressed)
    assert any("per-file limit" in e.message for e in report.errors)
    assert 0 < len(report.code_objects) < 6


def test_many_entries_sharing_one_image_stay_fast(built):
    """4,096 entries (the cap) pointing at one real ELF: bounded work, every entry decoded."""

    code = built.code_object("gfx900").read_bytes()
    ids = [f"hipv4-amdgcn-amd-amdhsa--gfx900-{i}".encode() for i in range(bnd.MAX_ENTRIES)]
    head_len = 32 + sum(24 + len(i) for i in ids)
    start = -(-head_len // 4096) * 4096
    data = _bundle([(start, len(code), i) for i in ids])
    data += b"\0" * (start - len(data)) + code
    with cpu_time() as spent:
        report = scan_bytes(data, "many.co")
    assert spent.seconds < 5, spent.seconds
    assert report.target_counts() == {"gfx900": bnd.MAX_ENTRIES}


def test_cap_exactly_at_the_needed_size(built):
    """A cap that is just big enough must not be reported as exceeded (no off-by-one at the cap)."""
    raw = built.device_bundle("dev.bundle", archs=("gfx900", "gfx90a:xnack+")).read_bytes()
    blob = ccob(raw + b"\0" * 65536, 2, "zlib")
    header = bnd.parse_compressed_header(Blob(blob))
    inflater = bnd.Inflater(Blob(blob), 0, header, cap=len(raw))
    inflater.need(len(raw))
    assert bytes(inflater.out) == raw
