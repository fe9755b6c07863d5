"""NVIDIA fat binaries (issue 38 item 3): the ``.nv_fatbin`` containers of real libraries, read from headers only,
held to NVIDIA's own ``cuobjdump --list-elf --list-ptx`` entry by entry, and the answer per architecture (cubin, PTX
JIT only, nothing) — including CUDA 13's cut of Maxwell, Pascal and Volta from cuRAND."""

from __future__ import annotations

import os
import random

import pytest

from gfxgate.artifacts import fatbin as nvf
from gfxgate.artifacts.elf import Blob
from gfxgate.artifacts.model import CUDA_HOST, FATBIN
from gfxgate.artifacts.scan import scan_bytes, scan_file
from gfxgate.artifacts.verdicts import CUDA_LAYER, cuda_verdict
from gfxgate.model import Status
from gfxgate.targets import catalog
from tests import nvidia_packages as nv
from tests.conftest import require_tool

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cuobjdump():
    tool = nv.cuobjdump()
    if tool is None:
        message = "NVIDIA's cuobjdump is not installed (pip install -e '.[test]' installs nvidia-cuda-cuobjdump)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return tool


@pytest.fixture(scope="module")
def ggml_cuda():
    return nv.debian_ggml_cuda(require_tool("apt-get"), require_tool("dpkg"))


@pytest.fixture(scope="module")
def curand12():
    return nv.curand(nv.CURAND_12)


@pytest.fixture(scope="module")
def curand13():
    return nv.curand(nv.CURAND_13)


def _ours(report) -> list[tuple[str, int, str]]:
    """The report's entries numbered as cuobjdump numbers them: ELF and PTX each counted from 1, in file order."""
    counters = {"ELF": 0, "PTX": 0}
    out = []
    for code in report.cuda_code:
        kind = {"cubin": "ELF", "ptx": "PTX"}[code.kind]
        counters[kind] += 1
        out.append((kind, counters[kind], code.arch))
    return out


@pytest.mark.parametrize("library", ["ggml_cuda", "curand12", "curand13"])
def test_every_entry_is_the_one_cuobjdump_lists(library, cuobjdump, request):
    path = request.getfixturevalue(library)
    report = scan_file(path)
    assert report.kind == CUDA_HOST and not report.errors
    assert _ours(report) == nv.list_entries(cuobjdump, path)
    # headers only: a few bytes per container and entry, never the payloads
    assert report.bytes_read < 100 * (len(report.cuda_code) + 100) + 64 * 1024, report.bytes_read


def test_each_container_alone_is_what_cuobjdump_lists(ggml_cuda, curand13, cuobjdump, tmp_path):
    """A container cut out of the section is a .fatbin file cuobjdump reads by itself: the same entries, per container."""
    for path in (ggml_cuda, curand13):
        report = scan_file(path)
        containers = sorted({c.container for c in report.cuda_code})
        for index in (0, 1, len(containers) // 2, len(containers) - 1):
            start = containers[index]
            with open(path, "rb") as handle:
                head = os.pread(handle.fileno(), 16, start)
                size = 16 + int.from_bytes(head[8:16], "little")
                data = os.pread(handle.fileno(), size, start)
            cut = tmp_path / f"{path.name}-{index}.fatbin"
            cut.write_bytes(data)
            alone = scan_file(cut)
            assert alone.kind == FATBIN and not alone.errors
            assert [(c.kind, c.arch) for c in alone.cuda_code] == [
                (c.kind, c.arch) for c in report.cuda_code if c.container == start
            ]
            assert _ours(alone) == nv.list_entries(cuobjdump, cut)


def test_the_debian_library_is_what_the_issue_says(ggml_cuda):
    """libggml0-backend-cuda (Debian, CUDA 12.4): cubins for sm_86/89, LZ4-compressed PTX for 50/61/70/75/80/90,
    145 containers; read in about 80 KB of its 575 MB."""
    report = scan_file(ggml_cuda)
    assert report.size > 500 << 20 and report.bytes_read < 128 * 1024
    counts = report.cuda_counts()
    assert {a for a, row in counts.items() if row.get("cubin")} == {"sm_86", "sm_89"}
    assert {a for a, row in counts.items() if row.get("ptx")} == {"sm_50", "sm_61", "sm_70", "sm_75", "sm_80", "sm_90"}
    assert len({c.container for c in report.cuda_code}) == 145
    assert {c.compression for c in report.cuda_code if c.kind == "ptx"} == {"lz4"}
    assert {c.compression for c in report.cuda_code if c.kind == "cubin"} == {None}


def _verdict(path, target):
    return cuda_verdict([scan_file(path)], catalog().parse_target(target))


def test_the_answer_per_architecture(ggml_cuda, curand12, curand13):
    p40 = _verdict(ggml_cuda, "Tesla P40")
    assert (p40.layer, p40.status) == (CUDA_LAYER, Status.PARTIAL) and "only through PTX JIT" in p40.summary
    assert "-DCMAKE_CUDA_ARCHITECTURES=61" in p40.remedy
    assert _verdict(ggml_cuda, "sm_86").status is Status.ALLOWED
    ampere = _verdict(ggml_cuda, "8.7")  # Orin: the sm_86 cubin is binary compatible (same major, older minor)
    assert ampere.status is Status.ALLOWED and "binary compatible" in ampere.summary
    kepler = _verdict(ggml_cuda, "sm_35")
    assert kepler.status is Status.BLOCKED and "does not run sm_35 at all" in kepler.summary
    # the CUDA 12 -> 13 cut: cuRAND 12 carries sm_50/60/70 cubins, cuRAND 13 starts at 75
    for target in ("sm_50", "sm_60", "sm_61", "sm_70"):
        assert _verdict(curand12, target).status is Status.ALLOWED, target
        assert _verdict(curand13, target).status is Status.BLOCKED, target
    assert "sm_60 cubins" in _verdict(curand12, "sm_61").summary
    assert _verdict(curand13, "sm_75").status is Status.ALLOWED
    assert {c.compression for c in scan_file(curand13).cuda_code} == {"zstd"}  # CUDA 13 compresses with zstd


def test_the_artifacts_command_answers_for_an_nvidia_target(ggml_cuda, gfxgate_cli):
    import json

    done = gfxgate_cli("artifacts", "-t", "sm_61", "--format", "json", str(ggml_cuda), timeout=120)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    from gfxgate.datafiles import load_schema
    import jsonschema

    jsonschema.validate(data, load_schema("artifacts"))
    assert data["cuda_targets"]["sm_61"] == {"cubin": 0, "ptx": 145, "files": 1}
    assert [(a["layer"], a["status"]) for a in data["answers"]] == [(CUDA_LAYER, "partial")]


# -- hostile input: small crafted fat binaries ------------------------------------------------------------------


def _entry(kind: int, arch: int, payload: bytes, header_size: int = 64, flags: int = 0x11) -> bytes:
    head = bytearray(header_size)
    head[0:2] = kind.to_bytes(2, "little")
    head[2:4] = (0x101).to_bytes(2, "little")
    head[4:8] = header_size.to_bytes(4, "little")
    head[8:16] = len(payload).to_bytes(8, "little")
    head[0x18:0x1A], head[0x1A:0x1C] = (7).to_bytes(2, "little"), (1).to_bytes(2, "little")
    head[0x1C:0x20] = arch.to_bytes(4, "little")
    head[0x28:0x30] = flags.to_bytes(8, "little")
    return bytes(head) + payload


def _container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return (
        nvf.MAGIC_BYTES
        + (1).to_bytes(2, "little")
        + (16).to_bytes(2, "little")
        + len(body).to_bytes(8, "little")
        + body
    )


def test_a_crafted_container_parses_and_its_damage_is_an_error():
    good = _container(_entry(2, 61, b"\x7fELF" + bytes(4)), _entry(1, 50, b"// ptx\0\0", flags=0x2011))
    report = scan_bytes(good, "x.fatbin")
    assert [(c.kind, c.arch, c.compression) for c in report.cuda_code] == [
        ("cubin", "sm_61", None),
        ("ptx", "sm_50", "lz4"),
    ]
    assert not report.errors
    for damaged in (
        good[:40],
        good[:-4],
        good[:4] + bytes(12) + good[16:],
        good[:16] + _entry(2, 61, b"", header_size=8)[:8] + good[24:],
    ):
        cut = scan_bytes(damaged, "x.fatbin")
        assert cut.errors or not cut.cuda_code  # an error entry, never an exception
    many = _container(*[_entry(2, 61, b"")] * 10)
    with pytest.raises(nvf.ArtifactFormatError, match="per-file limit"):
        nvf.parse_container(Blob(many), 0, [5])


def test_random_damage_never_raises():
    rng = random.Random(38)
    good = _container(_entry(2, 61, bytes(24)), _entry(1, 70, bytes(16)), _entry(2, 89, bytes(8), header_size=72))
    for _ in range(2000):
        data = bytearray(good)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        report = scan_bytes(bytes(data[: rng.randint(16, len(data))]), "f.fatbin")
        assert all(not e.message.startswith("internal error") for e in report.errors), report.errors
