"""NVIDIA fat binaries: the ``.nv_fatbin`` section of a host ELF (libggml-cuda.so, libcurand.so) or a ``.fatbin``
file, read from headers only.

A section is a run of containers, each ``{u32 magic 0xBA55ED50, u16 version 1, u16 header size 16, u64 size of its
entries}``; an entry is a header of at least 64 bytes (``u16 kind`` 1 = PTX, 2 = ELF/cubin; ``u32 header size``;
``u64 payload size``; at 0x1c ``u32 arch`` 61 for sm_61; at 0x28 ``u64 flags``) followed by its payload, padded to 8.
Flags seen in NVIDIA's own libraries: 0x1 64-bit, 0x10 Linux host, 0x2000 LZ4-compressed payload (CUDA 11.x–12.x
``--compress-all`` default), 0x8000 zstd-compressed (CUDA 13's default, payload starts ``28 b5 2f fd``); the header
then gives the compressed size at 0x10 and the decompressed size at 0x38. No public specification exists: the layout
is the one the CUDA toolkit's ``fatbinary_section.h``/``fatBinaryCtl.h`` and open readers (cuda-fatbin-decompression)
describe, and ``tests/artifacts/test_fatbin.py`` holds every entry list to NVIDIA's ``cuobjdump --list-elf
--list-ptx`` on real libraries.

Each container costs one 16-byte read and each entry one 64-byte read: a 555 MB ``.nv_fatbin`` of 145 containers and
1,160 entries is read as about 80 KB, never loaded. Malformed input raises :class:`ArtifactFormatError` with the
absolute offset; a per-file cap on entries bounds a crafted file's work.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from gfxgate.artifacts.elf import ArtifactFormatError, Blob

FATBIN_MAGIC = 0xBA55ED50
MAGIC_BYTES = struct.pack("<I", FATBIN_MAGIC)
CONTAINER_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries that follow
ENTRY_HEADER = struct.Struct(
    "<HHIQIIHHII"
)  # kind, ?, header size, payload size, compressed size, ?, minor, major, arch, name offset
ENTRY_MIN = 64
KIND_PTX, KIND_ELF = 1, 2
KINDS = {KIND_PTX: "ptx", KIND_ELF: "cubin"}
FLAG_64BIT, FLAG_DEBUG, FLAG_LINUX = 0x1, 0x2, 0x10
FLAG_LZ4, FLAG_ZSTD = 0x2000, 0x8000
MAX_ENTRIES = 200_000  # per file (libggml-cuda.so has 1,160): bounds the work a crafted section can ask for
MAX_ENTRY_HEADER = 4096  # real headers are 64 … 120 bytes


class FatbinEntry(NamedTuple):
    """One entry of a fat binary container: PTX or a cubin for one architecture."""

    kind: str  # "cubin", "ptx", or "kind N" for a kind gfxgate does not know
    arch: int  # 61 for sm_61 / compute_61
    offset: int  # absolute file offset of the entry header
    size: int  # payload bytes (padded), compressed when ``compression`` is set
    compression: str | None  # "lz4", "zstd" or None
    version: str  # PTX ISA version of a PTX entry ("8.4"), the cubin's ELF ABI version of a cubin ("1.7")
    flags: int
    uncompressed_size: int | None

    @property
    def sm(self) -> str:
        return f"sm_{self.arch}"


class FatbinContainer(NamedTuple):
    """One container: where it starts, its size and its entries in file order."""

    offset: int
    size: int  # header + entries
    entries: tuple[FatbinEntry, ...]


def parse_container(blob: Blob, offset: int, budget: list[int] | None = None) -> FatbinContainer:
    """The container starting at ``offset`` of ``blob``; ``budget`` ([entries left]) is shared by one file."""
    head = blob.exact(offset, CONTAINER_HEADER.size, "fatbin container header")
    magic, _version, header_size, entries_size = CONTAINER_HEADER.unpack(head)
    where = blob.start + offset
    if magic != FATBIN_MAGIC:
        raise ArtifactFormatError(f"no fatbin magic (0x{magic:08x})", where)
    if header_size < CONTAINER_HEADER.size or header_size > MAX_ENTRY_HEADER:
        raise ArtifactFormatError(f"fatbin container header size {header_size}", where)
    end = offset + header_size + entries_size
    if end > blob.size:
        raise ArtifactFormatError(
            f"fatbin container of {header_size + entries_size} bytes runs past the end "
            f"(0x{blob.size - offset:x} bytes left)",
            where,
        )
    budget = budget if budget is not None else [MAX_ENTRIES]
    entries: list[FatbinEntry] = []
    pos = offset + header_size
    while pos < end:
        if budget[0] <= 0:
            raise ArtifactFormatError(
                f"stopped after {MAX_ENTRIES} fatbin entries (a per-file limit)", blob.start + pos
            )
        budget[0] -= 1
        raw = blob.exact(pos, ENTRY_MIN, "fatbin entry header")
        kind, _, ehsize, size, _compressed, _, minor, major, arch, _ = ENTRY_HEADER.unpack_from(raw)
        flags, _, usize = struct.unpack_from("<QQQ", raw, 0x28)
        if ehsize < ENTRY_MIN or ehsize > MAX_ENTRY_HEADER:
            raise ArtifactFormatError(f"fatbin entry header size {ehsize}", blob.start + pos)
        if pos + ehsize + size > end:
            raise ArtifactFormatError(
                f"fatbin entry of {ehsize + size} bytes runs past its container's end", blob.start + pos
            )
        compression = "zstd" if flags & FLAG_ZSTD else "lz4" if flags & FLAG_LZ4 else None
        entries.append(
            FatbinEntry(
                KINDS.get(kind, f"kind {kind}"),
                arch,
                blob.start + pos,
                size,
                compression,
                f"{major}.{minor}",
                flags,
                usize if compression else None,
            )
        )
        pos += ehsize + size
    return FatbinContainer(where, header_size + entries_size, tuple(entries))


def walk_section(blob: Blob, offset: int, size: int) -> Iterator[FatbinContainer | ArtifactFormatError]:
    """Every container of a ``.nv_fatbin`` section at ``offset`` (``size`` bytes) in order; zero padding between
    containers is skipped 8 bytes at a time; anything else ends the walk with the error."""
    section = blob.window(offset, size)
    budget = [MAX_ENTRIES]
    pos = 0
    while pos + CONTAINER_HEADER.size <= section.size:
        head = section.read(pos, 8)
        if head[:4] != MAGIC_BYTES:
            if head == bytes(8):
                pos += 8
                continue
            yield ArtifactFormatError(f"no fatbin magic at 0x{pos:x} of .nv_fatbin", section.start + pos)
            return
        try:
            container = parse_container(section, pos, budget)
        except ArtifactFormatError as exc:
            yield exc
            return
        yield container
        pos += container.size
        pos += -pos % 8


def cubin_runs(code_arch: int, device_arch: int) -> bool:
    """A cubin for sm_XY runs on a device of compute capability X.Z with Z >= Y (CUDA's binary compatibility:
    the same major version, a minor version no newer than the device's)."""
    return code_arch // 10 == device_arch // 10 and code_arch % 10 <= device_arch % 10


def ptx_runs(code_arch: int, device_arch: int) -> bool:
    """PTX for compute_XY is compiled by the driver (JIT) for any device of compute capability X.Y or newer."""
    return code_arch <= device_arch
