"""ROCm kpack: ``.kpack`` archives and the host binaries that point at them (``HIPK`` wrappers, ``.rocm_kpack_ref``).

ROCm built by TheRock (7.1x and later) moves device code out of a host library's ``.hip_fatbin`` into kpack
archives. The format, as specified in ROCm/rocm-kpack ``docs/multi_arch_packaging_with_kpack.md`` ("Appendix: File
Format Specifications"; the same file is ``shared/kpack/docs/multi_arch_packaging_with_kpack.md`` in
ROCm/rocm-systems) and written by its ``python/rocm_kpack/kpack.py`` / ``compression.py``:

* header, 16 bytes little-endian: ``b"KPAK"``, ``u32 version`` (1), ``u64 toc_offset``; zero padding to 64;
* blob data from offset 64: for ``compression_scheme: "none"`` the code objects back to back, each located by
  the TOC's ``blobs[ordinal] = {offset (absolute), size}``; for ``"zstd-per-kernel"`` a region at
  ``zstd_offset`` of ``zstd_size`` bytes holding ``u32 num_kernels`` then ``num_kernels × (u32 size, zstd frame)``;
* a msgpack map from ``toc_offset`` to the end of the file: ``format_version``, ``group_name``,
  ``gfx_arch_family``, ``gfx_arches``, ``compression_scheme``, the scheme's fields, and
  ``toc: {binary path: {gfx arch: {type, ordinal, original_size}}}`` — the architectures per library.

A kpack'd host binary keeps its ``.hipFatBinSegment`` records ``{u32 magic, u32 version, u64 ptr, u64}`` with
the magic changed from ``HIPF`` (0x48495046) to ``HIPK`` (0x4B504948); ``ptr`` points at a ``.rocm_kpack_ref``
section holding a msgpack map ``{kernel_name, kpack_search_paths}`` (the name the archives' TOC files it under);
``.hip_fatbin`` becomes ``SHT_NOBITS``.

Bounded like :mod:`gfxgate.artifacts.elf` and :mod:`~gfxgate.artifacts.bundle`: the TOC is read once, at most
``MAX_TOC_BYTES`` and charged to the scan's :class:`~gfxgate.artifacts.budget.Budget`; msgpack is unpacked with
length limits no larger than the bytes read, so a count of 2**32 fails at once; every offset is checked against
the file; a zstd frame is inflated through a bounded reader, never past what the TOC declares nor the scan's cap,
charged to the shared "inflated bytes" total. Anything malformed raises :class:`ArtifactFormatError`, which the
scanner records for the file.
"""

from __future__ import annotations

import struct
from typing import Any, NamedTuple

from gfxgate.artifacts.elf import ArtifactFormatError, Blob

KPAK_MAGIC = b"KPAK"
HIPF_MAGIC = 0x48495046
HIPK_MAGIC = 0x4B504948
HEADER_SIZE = 16
BLOB_ALIGNMENT = 64
VERSIONS = (1,)
SCHEMES = ("none", "zstd-per-kernel")
REF_SECTION = ".rocm_kpack_ref"

MAX_TOC_BYTES = 16 << 20  # per archive (a TOC entry is ~40 bytes: room for ~400,000 code objects)
MAX_KERNELS = 200_000  # per archive: TOC entries, blobs or zstd frames
MAX_REF_BYTES = 64 << 10  # a .rocm_kpack_ref marker (real ones are a few hundred bytes)
MAX_SEARCH_PATHS = 256
MAX_TEXT = 4096  # bytes of one name (binary path, arch, search path)


class KpackKernel(NamedTuple):
    """One TOC entry: the code object of ``binary`` for ``arch``, at ``ordinal`` in the blob data."""

    binary: str  # the library it was taken from, relative to the install ("lib/librocblas.so.5")
    arch: str  # as the TOC names it ("gfx1100")
    ordinal: int
    type: str  # "hsaco"
    original_size: int | None


class KpackArchive(NamedTuple):
    """A parsed ``.kpack`` header and TOC; ``locations[ordinal]`` = (absolute offset, stored size)."""

    version: int
    toc_offset: int
    group_name: str
    arch_family: str
    gfx_arches: tuple[str, ...]
    compression: str
    kernels: tuple[KpackKernel, ...]
    locations: tuple[tuple[int, int], ...]


class KpackRef(NamedTuple):
    """A host binary's pointer to kpack archives: its ``.rocm_kpack_ref`` marker and wrapper magics."""

    kernel_name: str | None
    search_paths: tuple[str, ...]
    hipk_wrappers: int
    hipf_wrappers: int


def library_of(toc_key: str) -> str:
    """The library a TOC key belongs to: the writer files the n-th code object of a binary as ``binary#n``
    (rocm-kpack ``runtime/tests/generate_test_data.py``), the runtime looks up ``kernel_name + "#" + index``."""
    head, sep, tail = toc_key.rpartition("#")
    return head if sep and tail.isdigit() else toc_key


def _unpack(data: bytes, what: str, offset: int) -> Any:
    import msgpack

    n = len(data)
    try:
        # every length limit is at most the bytes there are: a claimed count of 2**32 fails before allocating
        return msgpack.unpackb(
            data,
            raw=False,
            strict_map_key=False,
            max_str_len=min(n, MAX_TOC_BYTES),
            max_bin_len=n,
            max_array_len=n,
            max_map_len=n,
            max_ext_len=n,
        )
    except Exception as exc:  # noqa: BLE001 - msgpack raises ValueError, ExtraData, FormatError, StackError, …
        raise ArtifactFormatError(
            f"{what}: not a valid msgpack document ({type(exc).__name__}: {exc})", offset
        ) from None


def _text(value: Any, what: str, offset: int) -> str:
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ArtifactFormatError(f"kpack TOC: {what} is not a string of at most {MAX_TEXT} characters", offset)
    return value


def _count(value: Any, what: str, offset: int) -> int:
    if type(value) is not int or value < 0:
        raise ArtifactFormatError(f"kpack TOC: {what} is not a non-negative integer ({value!r:.40})", offset)
    return value


def parse_archive(blob: Blob, budget=None) -> KpackArchive:
    """The header and TOC of the ``.kpack`` archive that ``blob`` holds; raises on anything malformed."""
    magic, version, toc_offset = struct.unpack("<4sIQ", blob.exact(0, HEADER_SIZE, "kpack header"))
    if magic != KPAK_MAGIC:
        raise ArtifactFormatError(f"not a kpack archive (magic {magic!r})", blob.start)
    if version not in VERSIONS:
        raise ArtifactFormatError(f"kpack version {version} is not one this reader knows ({VERSIONS})", blob.start + 4)
    size = blob.size
    if not HEADER_SIZE <= toc_offset < size:
        raise ArtifactFormatError(
            f"kpack TOC offset 0x{toc_offset:x} lies outside the file (size 0x{size:x})", blob.start + 8
        )
    toc_size = size - toc_offset
    if toc_size > MAX_TOC_BYTES:
        raise ArtifactFormatError(
            f"kpack TOC of {toc_size} bytes is over the {MAX_TOC_BYTES}-byte limit", blob.start + toc_offset
        )
    if budget is not None:
        budget.charge("string-table bytes", toc_size, blob.start + toc_offset)
    where = blob.start + toc_offset
    toc = _unpack(blob.exact(toc_offset, toc_size, "kpack TOC"), "kpack TOC", where)
    if not isinstance(toc, dict):
        raise ArtifactFormatError(f"kpack TOC is a {type(toc).__name__}, not a map", where)
    scheme = toc.get("compression_scheme")
    if scheme not in SCHEMES:
        raise ArtifactFormatError(
            f"kpack compression scheme {scheme!r:.60} is not one this reader knows {SCHEMES}", where
        )
    arches = toc.get("gfx_arches", [])
    if not isinstance(arches, list) or len(arches) > MAX_KERNELS:
        raise ArtifactFormatError("kpack TOC: gfx_arches is not a list", where)
    kernels = _kernels(toc.get("toc"), where)
    locations = (
        _noop_blobs(blob, toc, toc_offset, where)
        if scheme == "none"
        else _zstd_frames(blob, toc, toc_offset, where, budget)
    )
    for k in kernels:
        if k.ordinal >= len(locations):
            raise ArtifactFormatError(
                f"kpack TOC: {k.binary} {k.arch} has ordinal {k.ordinal}, "
                f"the archive holds {len(locations)} code objects",
                where,
            )
    return KpackArchive(
        version,
        toc_offset,
        _text(toc.get("group_name", ""), "group_name", where),
        _text(toc.get("gfx_arch_family", ""), "gfx_arch_family", where),
        tuple(_text(a, "a gfx_arches item", where) for a in arches),
        scheme,
        kernels,
        locations,
    )


def _kernels(table: Any, where: int) -> tuple[KpackKernel, ...]:
    if not isinstance(table, dict):
        raise ArtifactFormatError("kpack TOC: no 'toc' map of binaries", where)
    out: list[KpackKernel] = []
    for binary, arches in table.items():
        binary = _text(binary, "a binary path", where)
        if not isinstance(arches, dict):
            raise ArtifactFormatError(f"kpack TOC: the entry of {binary} is not a map of architectures", where)
        for arch, entry in arches.items():
            arch = _text(arch, f"an architecture of {binary}", where)
            if not isinstance(entry, dict):
                raise ArtifactFormatError(f"kpack TOC: {binary} {arch} is not a map", where)
            if len(out) >= MAX_KERNELS:
                raise ArtifactFormatError(f"kpack TOC lists more than {MAX_KERNELS} code objects", where)
            original = entry.get("original_size")
            out.append(
                KpackKernel(
                    binary,
                    arch,
                    _count(entry.get("ordinal"), f"{binary} {arch} ordinal", where),
                    _text(entry.get("type", ""), "a type", where),
                    None if original is None else _count(original, "original_size", where),
                )
            )
    return tuple(out)


def _noop_blobs(blob: Blob, toc: dict, toc_offset: int, where: int) -> tuple[tuple[int, int], ...]:
    blobs = toc.get("blobs")
    if not isinstance(blobs, list) or len(blobs) > MAX_KERNELS:
        raise ArtifactFormatError("kpack TOC: scheme 'none' without a 'blobs' list", where)
    out = []
    for i, item in enumerate(blobs):
        if not isinstance(item, dict):
            raise ArtifactFormatError(f"kpack TOC: blobs[{i}] is not a map", where)
        offset = _count(item.get("offset"), f"blobs[{i}].offset", where)
        size = _count(item.get("size"), f"blobs[{i}].size", where)
        if offset < HEADER_SIZE or offset + size > toc_offset:
            raise ArtifactFormatError(
                f"kpack blob {i} (0x{offset:x}+0x{size:x}) lies outside the blob data "
                f"(0x{HEADER_SIZE:x}..0x{toc_offset:x})",
                where,
            )
        out.append((offset, size))
    return tuple(out)


def _zstd_frames(blob: Blob, toc: dict, toc_offset: int, where: int, budget) -> tuple[tuple[int, int], ...]:
    start = _count(toc.get("zstd_offset"), "zstd_offset", where)
    size = _count(toc.get("zstd_size"), "zstd_size", where)
    if start < HEADER_SIZE or start + size > toc_offset or size < 4:
        raise ArtifactFormatError(
            f"kpack zstd region (0x{start:x}+0x{size:x}) lies outside the blob data "
            f"(0x{HEADER_SIZE:x}..0x{toc_offset:x})",
            where,
        )
    (count,) = struct.unpack("<I", blob.exact(start, 4, "kpack zstd frame count"))
    if count > MAX_KERNELS or count * 4 > size - 4:
        raise ArtifactFormatError(f"kpack zstd region claims {count} frames in {size} bytes", blob.start + start)
    if budget is not None:
        budget.charge("section headers", count, blob.start + start)
    out = []
    pos, end = start + 4, start + size
    for i in range(count):
        (length,) = struct.unpack("<I", blob.exact(pos, 4, f"kpack zstd frame {i} size"))
        if pos + 4 + length > end:
            raise ArtifactFormatError(
                f"kpack zstd frame {i} ({length} bytes) runs past its region (ends 0x{end:x})", blob.start + pos
            )
        out.append((pos + 4, length))
        pos += 4 + length
    return tuple(out)


def inflate(blob: Blob, offset: int, size: int, limit: int, budget=None) -> bytes:
    """The zstd frame at ``offset``, inflated to at most ``limit`` bytes (more is an error, not a larger buffer).
    Output is charged to the budget's "inflated bytes" as it is produced."""
    import zstandard

    source: Any = blob.window(offset, size).stream()  # a file object: the frame is read in pieces, never whole
    reader = zstandard.ZstdDecompressor().stream_reader(source, read_size=1 << 16)
    out = bytearray()
    try:
        while True:
            piece = reader.read(min(1 << 20, limit + 1 - len(out)))
            if not piece:
                break
            if budget is not None:
                budget.charge("inflated bytes", len(piece), blob.start + offset)
            out += piece
            if len(out) > limit:
                raise ArtifactFormatError(
                    f"kpack zstd frame inflates past {limit} bytes (a per-code-object limit)", blob.start + offset
                )
    except zstandard.ZstdError as exc:
        raise ArtifactFormatError(f"kpack zstd frame: {exc}", blob.start + offset) from None
    finally:
        reader.close()
    return bytes(out)


def parse_ref(data: bytes, offset: int) -> tuple[str | None, tuple[str, ...]]:
    """A ``.rocm_kpack_ref`` marker: (kernel_name, kpack_search_paths). The writer (rocm-kpack
    ``elf/kpack_transform.py``) stores a msgpack map; its tutorial describes a colon-separated path list,
    which is accepted too."""
    data = data.rstrip(b"\0")
    if data[:1] and 0x80 <= data[0] <= 0x8F or data[:1] in (b"\xde", b"\xdf"):  # a msgpack map
        ref = _unpack(data, ".rocm_kpack_ref", offset)
        if not isinstance(ref, dict):
            raise ArtifactFormatError(".rocm_kpack_ref is not a msgpack map", offset)
        name = ref.get("kernel_name")
        paths = ref.get("kpack_search_paths", [])
        if not isinstance(paths, list) or len(paths) > MAX_SEARCH_PATHS:
            raise ArtifactFormatError(".rocm_kpack_ref: kpack_search_paths is not a list of paths", offset)
        return (
            None if name is None else _text(name, "kernel_name", offset),
            tuple(_text(p, "a search path", offset) for p in paths),
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ArtifactFormatError(".rocm_kpack_ref is neither a msgpack map nor a path list", offset) from None
    paths = tuple(p for p in text.strip().split(":") if p)
    if len(paths) > MAX_SEARCH_PATHS or any(len(p) > MAX_TEXT or not p.isprintable() for p in paths):
        raise ArtifactFormatError(".rocm_kpack_ref is neither a msgpack map nor a path list", offset)
    return None, paths


def wrapper_magics(data: bytes) -> tuple[int, int, list[int]]:
    """(HIPK records, HIPF records, other magics) of a ``.hipFatBinSegment``'s 24-byte records."""
    hipk = hipf = 0
    other = []
    for i in range(len(data) // 24):
        (magic,) = struct.unpack_from("<I", data, i * 24)
        if magic == HIPK_MAGIC:
            hipk += 1
        elif magic == HIPF_MAGIC:
            hipf += 1
        else:
            other.append(magic)
    return hipk, hipf, other
