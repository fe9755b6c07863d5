"""Fuzz the parsers with thousands of mutated real inputs (seeded: the same cases every run).

Contract: any byte string gives a FileReport; problems become error entries; no parser bug
("internal error"), no exception, no hang, and bounded work.

The cases are drawn with ``random.Random(seed)`` from the distribution the hypothesis strategies of before drew
from (same mutations, counts and seeds); hypothesis's engine cost ten times the parsing it drove (9 of 10 s of
CPU, issue 40). A failure names its case (seed index and steps), which ``mutate`` replays.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Iterator

import pytest

from gfxgate.artifacts import bundle as bnd
from gfxgate.artifacts import elf
from gfxgate.artifacts.scan import scan_bytes
from tests.cputime import cpu_time
from tests.artifacts.artifact_builders import ccob

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


OPS = ("set", "splice", "truncate", "duplicate")
Step = tuple[str, int, int, bytes]


def cases(seed: int, count: int, seeds: int, max_steps: int) -> Iterator[tuple[int, int, list[Step]]]:
    """``count`` cases (number, seed index, steps), the same for every run of ``seed``. A step: an operation, a
    position (half of them in the first 256 bytes: header bytes are the most productive targets; the others in
    the first 64 KiB), a byte value and an interesting value to splice; 1 to ``max_steps`` steps."""
    rng = random.Random(seed)
    for case in range(count):
        steps = [
            (
                rng.choice(OPS),
                rng.randint(0, 255) if rng.random() < 0.5 else rng.randint(0, 1 << 16),
                rng.randint(0, 255),
                rng.choice(INTERESTING),
            )
            for _ in range(rng.randint(1, max_steps))
        ]
        yield case, rng.randrange(seeds), steps


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


def _check(data: bytes, name: str, case) -> None:
    with cpu_time() as spent:
        report = scan_bytes(data, name, kernels=True, cap=16 << 20)
    assert spent.seconds < 2.0, ("parsing one small mutated file must not take seconds of CPU", case)
    internal = [e.message for e in report.errors if e.message.startswith("internal error")]
    assert not internal, (internal, case)
    assert len(report.errors) <= 51, case


def test_scan_survives_mutated_real_files(seeds):
    for case in cases(20260415, 2500, len(seeds), 8):
        _check(mutate(seeds[case[1]], case[2]), "fuzz.co", case)


def test_parsers_raise_only_format_errors(seeds):
    rng = random.Random(7)
    for case in cases(7, 2500, len(seeds), 4):
        offset = rng.randint(0, 128)
        blob = elf.Blob(mutate(seeds[case[1]], case[2]))
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
            except Exception as exc:
                raise AssertionError((parse.__name__, offset, case)) from exc


@pytest.fixture(scope="module")
def hsa_images(libhsa) -> list[bytes]:
    """Real code object v2 and v4 images cut out of Debian's libhsa-runtime64 (its blit kernels)."""
    from gfxgate.artifacts.scan import scan_file

    data = libhsa.read_bytes()
    out = {}
    for c in scan_file(libhsa).code_objects:
        out.setdefault(c.code_object_version, data[c.offset : c.offset + c.size])
    return [out[2], out[4]]


def test_v2_and_v4_images_survive_mutation(hsa_images):
    for case in cases(11, 1000, len(hsa_images), 6):
        _check(mutate(hsa_images[case[1]], case[2]), "blit.co", case)
