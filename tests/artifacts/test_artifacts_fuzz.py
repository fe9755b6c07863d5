"""Fuzz the parsers with thousands of mutated real inputs (seeded, derandomized hypothesis runs).

Contract: any byte string gives a FileReport; problems become error entries; no parser bug
("internal error"), no exception, no hang, and bounded work.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from gfxgate.artifacts import bundle as bnd
from gfxgate.artifacts import elf
from gfxgate.artifacts.scan import scan_bytes
from tests.cputime import cpu_time
from tests.artifacts.artifact_builders import ccob

FUZZ = settings(
    max_examples=2500, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
INTERESTING = [
    b"\xff" * 8,
    b"\0" * 8,
    struct.pack("<Q", 1 << 40),
    struct.pack("<Q", 0x1000),
    b"\x7fELF",
    b"CCOB",
    bnd.BUNDLE_MAGIC,
    struct.pack("<I", 0xFFFFFFF0),
]


@pytest.fixture(scope="module")
def seeds(built) -> list[bytes]:
    dev = built.device_bundle("dev.bundle", archs=("gfx900", "gfx90a:xnack+")).read_bytes()
    return [
        built.code_object("gfx900").read_bytes(),
        built.code_object("gfx9-generic", "-mcode-object-version=6").read_bytes(),
        built.hip_so("libplain.so").read_bytes(),
        built.hip_so("lib--offload-compress.so", "--offload-compress").read_bytes(),
        dev,
        ccob(dev, 1, "zlib"),
        ccob(dev, 3, "zstd"),
    ]


mutation = st.tuples(
    st.sampled_from(["set", "splice", "truncate", "duplicate"]),
    st.one_of(st.integers(0, 255), st.integers(0, 1 << 16)),  # header bytes are the most productive targets
    st.integers(0, 255),
    st.sampled_from(INTERESTING),
)


def mutate(data: bytes, steps) -> bytes:
    buf = bytearray(data)
    for op, pos, value, blob in steps:
        if not buf:
            break
        pos %= len(buf)
        if op == "set":
            buf[pos] = value
        elif op == "splice":
            buf[pos : pos + len(blob)] = blob
        elif op == "truncate":
            del buf[pos:]
        else:
            buf[pos:pos] = buf[pos : pos + 4096]
    return bytes(buf)


def _check(data: bytes, name: str) -> None:
    with cpu_time() as spent:
        report = scan_bytes(data, name, kernels=True, cap=16 << 20)
    assert spent.seconds < 2.0, "parsing one small mutated file must not take seconds of CPU"
    internal = [e.message for e in report.errors if e.message.startswith("internal error")]
    assert not internal, internal
    assert len(report.errors) <= 51


@seed(20260415)
@FUZZ
@given(which=st.integers(0, 6), steps=st.lists(mutation, min_size=1, max_size=8))
def test_scan_survives_mutated_real_files(seeds, which, steps):
    _check(mutate(seeds[which], steps), "fuzz.co")


@seed(7)
@FUZZ
@given(which=st.integers(0, 6), steps=st.lists(mutation, min_size=1, max_size=4), offset=st.integers(0, 128))
def test_parsers_raise_only_format_errors(seeds, which, steps, offset):
    blob = elf.Blob(mutate(seeds[which], steps))
    for parse in (
        elf.code_object_header,
        elf.kernel_names,
        elf.host_elf,
        elf.needed_libraries,
        bnd.parse_bundle,
        bnd.parse_compressed_header,
    ):
        try:
            parse(blob, offset) if parse not in (elf.host_elf, elf.needed_libraries) else parse(blob)
        except elf.ArtifactFormatError:
            pass


@pytest.fixture(scope="module")
def hsa_images(libhsa) -> list[bytes]:
    """Real code object v2 and v4 images cut out of Debian's libhsa-runtime64 (its blit kernels)."""
    from gfxgate.artifacts.scan import scan_file

    data = libhsa.read_bytes()
    out = {}
    for c in scan_file(libhsa).code_objects:
        out.setdefault(c.code_object_version, data[c.offset : c.offset + c.size])
    return [out[2], out[4]]


@seed(11)
@settings(FUZZ, max_examples=1000)
@given(which=st.integers(0, 1), steps=st.lists(mutation, min_size=1, max_size=6))
def test_v2_and_v4_images_survive_mutation(hsa_images, which, steps):
    _check(mutate(hsa_images[which], steps), "blit.co")
