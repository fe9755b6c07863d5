"""Clang offload bundles and compressed bundles (CCOB v1-3, zlib or zstd), read from headers only.

A bundle is ``__CLANG_OFFLOAD_BUNDLE__``, a u64 entry count, then per entry ``u64 offset, u64 size,
u64 id_len, id`` (offsets from the bundle start). A ``CCOB`` blob wraps a whole bundle compressed;
decompression streams and stops as soon as the requested bytes exist, under a hard size cap, so a
decompression bomb costs at most the cap. Malformed input raises ArtifactFormatError.
"""

from __future__ import annotations

import functools
import struct
import zlib
from typing import Iterator, NamedTuple

from gfxgate.artifacts.elf import ArtifactFormatError, Blob
from gfxgate.artifacts.budget import SMALL_INFLATE

BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
MAX_ENTRIES = 4096  # real bundles hold a host entry plus one per target (tens at most)
MAX_ID_LEN = 1024
DEFAULT_DECOMPRESS_CAP = 256 << 20  # bytes of decompressed output one compressed bundle may produce
_CCOB_LAYOUT = {1: ("<HHIQ", 20), 2: ("<HHIIQ", 24), 3: ("<HHQQQ", 32)}
_METHODS = {0: "zlib", 1: "zstd"}


class BundleEntry(NamedTuple):
    """One entry of an offload bundle's table: its id (kind, triple, target) and where its bytes are."""

    id: str
    kind: str  # "hipv4", "hip", "host", "openmp", …
    triple: str
    target: str  # target id as written ("gfx906:xnack-"), "" for host entries
    offset: int  # from the bundle start (in the decompressed bytes for a compressed bundle)
    size: int

    @property
    def is_device(self) -> bool:
        return self.triple.startswith("amdgcn") and self.size > 0


class Bundle(NamedTuple):
    """An offload bundle's entry table and the bytes the bundle spans."""

    entries: tuple[BundleEntry, ...]
    extent: int  # bytes the bundle spans (max offset + size)
    devices: tuple[BundleEntry, ...]  # the entries that hold device code (every caller walks these)


class CompressedHeader(NamedTuple):
    """The header of a compressed offload bundle (CCOB v1-v3)."""

    version: int
    method: str
    total_size: int | None  # includes the header; None in version 1
    uncompressed_size: int
    hash: int
    header_size: int


@functools.lru_cache(maxsize=4096)
def split_entry_id(entry_id: str) -> tuple[str, str, str]:
    """``hipv4-amdgcn-amd-amdhsa--gfx900:xnack-`` → (kind, triple, target id)."""
    kind, _, rest = entry_id.partition("-")
    if "--" in rest:
        triple, _, target = rest.partition("--")
        return kind, triple, target
    from gfxgate.targets import AMD_BUNDLE_TARGET  # the AMD target grammar lives with the target model (imported
    # here: a scan that meets no bundle does not load it)

    match = AMD_BUNDLE_TARGET.search(rest)
    if match and rest.startswith("amdgcn"):
        return kind, rest[: match.start()], match.group(1)
    return kind, rest, ""


def parse_bundle(blob: Blob, offset: int = 0, room: int | None = None, head: bytes | None = None) -> Bundle:
    """Entries of the uncompressed bundle at ``offset`` of ``blob``.

    ``room`` bounds every entry (default: the rest of the blob; for a compressed bundle, its declared
    uncompressed size, of which only the header need be inflated). ``head``: the bundle's first 32 bytes when
    the caller has read them already (the fatbin walk reads them to tell a bundle from a CCOB blob).
    """
    if head is None or len(head) < 32:
        head = blob.exact(offset, 32, "bundle header")
    if head[:24] != BUNDLE_MAGIC:
        raise ArtifactFormatError("no offload bundle magic", blob.start + offset)
    (count,) = struct.unpack_from("<Q", head, 24)
    room = blob.size - offset if room is None else room
    if count == 0 or count > MAX_ENTRIES or count * 24 > room:
        raise ArtifactFormatError(f"implausible bundle entry count {count}", blob.start + offset + 24)
    # One read for the whole entry table in the common case (HIP puts the first payload at 0x1000).
    table = blob.read(offset, min(room, 4096, 32 + count * 96))
    entries = []
    pos = 32  # relative to the bundle start
    for _ in range(count):
        if pos + 24 > len(table):
            table = blob.read(offset, min(room, pos + 24 + MAX_ID_LEN + 4096))
            if pos + 24 > len(table):
                raise ArtifactFormatError("bundle entry table runs past the end", blob.start + offset + pos)
        off, size, id_len = struct.unpack_from("<QQQ", table, pos)
        if id_len == 0 or id_len > MAX_ID_LEN:
            raise ArtifactFormatError(f"bundle entry id length {id_len}", blob.start + offset + pos + 16)
        if pos + 24 + id_len > len(table):
            table = blob.read(offset, min(room, pos + 24 + id_len + 4096))
            if pos + 24 + id_len > len(table):
                raise ArtifactFormatError("bundle entry id runs past the end", blob.start + offset + pos + 24)
        entry_id = table[pos + 24 : pos + 24 + id_len].decode("utf-8", "replace")
        if size and (off == 0 or off + size > room):
            raise ArtifactFormatError(
                f"bundle entry {entry_id!r} at 0x{off:x}+0x{size:x} lies outside the bundle "
                f"(0x{room:x} bytes available)",
                blob.start + offset + pos,
            )
        pos += 24 + id_len
        kind, triple, target = split_entry_id(entry_id)
        entries.append(BundleEntry(entry_id, kind, triple, target, off, size))
    pos += offset
    extent = max([pos - offset] + [e.offset + e.size for e in entries if e.size])
    return Bundle(tuple(entries), extent, tuple(e for e in entries if e.is_device))


def parse_compressed_header(blob: Blob, offset: int = 0) -> CompressedHeader:
    head = blob.exact(offset, 8, "compressed bundle header")
    if head[:4] != CCOB_MAGIC:
        raise ArtifactFormatError("no CCOB magic", blob.start + offset)
    (version,) = struct.unpack_from("<H", head, 4)
    if version not in _CCOB_LAYOUT:
        raise ArtifactFormatError(f"unknown compressed bundle version {version}", blob.start + offset + 4)
    fmt, size = _CCOB_LAYOUT[version]
    fields = struct.unpack(fmt, blob.exact(offset + 4, size - 4, f"CCOB v{version} header"))
    method = _METHODS.get(fields[1])
    if method is None:
        raise ArtifactFormatError(f"unknown compression method {fields[1]}", blob.start + offset + 6)
    if version == 1:
        total, uncompressed, digest = None, fields[2], fields[3]
    else:
        total, uncompressed, digest = fields[2], fields[3], fields[4]
        if total < size or total > blob.size - offset:
            raise ArtifactFormatError(
                f"compressed bundle total size {total} does not fit (0x{blob.size - offset:x} bytes available)",
                blob.start + offset + 8,
            )
    return CompressedHeader(version, method, total, uncompressed, digest, size)


class Inflater:
    """Streaming, capped decompression of one CCOB payload; ``blob()`` exposes what is inflated so far.

    ``need(n)`` inflates until ``n`` bytes exist (or the stream ends). Output never exceeds
    ``min(uncompressed_size, cap)``; asking for more raises ArtifactFormatError.
    """

    CHUNK = 1 << 16

    def __init__(
        self, blob: Blob, offset: int, header: CompressedHeader, cap: int = DEFAULT_DECOMPRESS_CAP, budget=None
    ) -> None:
        self.header = header
        self.budget = budget
        self._large = False  # holds the budget's large-inflation slot
        self.origin = blob.start + offset
        end = offset + header.total_size if header.total_size is not None else blob.size
        self.source = blob.window(offset + header.header_size, end - offset - header.header_size)
        self.limit = min(header.uncompressed_size, cap)
        self.capped = header.uncompressed_size > cap
        self.out = bytearray()
        self.done = False
        self._in = 0
        if header.method == "zlib":
            self._z = zlib.decompressobj()
        else:
            import zstandard

            self._zstd = zstandard.ZstdDecompressor().stream_reader(
                # zstandard's stubs want an IO[bytes]; it calls read() only, which the blob's stream has
                self.source.stream(),  # type: ignore[arg-type]
                read_size=self.CHUNK,
                read_across_frames=False,
            )

    def need(self, n: int) -> None:
        if n > self.limit:
            what = "the compression cap" if self.capped else "its declared uncompressed size"
            raise ArtifactFormatError(f"compressed bundle needs {n} bytes, beyond {what} ({self.limit})", self.origin)
        try:
            while len(self.out) < n and not self.done:
                # Uncapped, ask for one byte more than declared so a stream that lies about its size is
                # caught; capped, never produce more than the cap.
                room = self.limit - len(self.out) + (0 if self.capped else 1)
                want = min(room, self.CHUNK * 16)  # >= 1 here: zlib reads max_length 0 as "no limit"
                if self.budget is not None:
                    self._reserve(want)
                if self.header.method == "zlib":
                    data = self._z.unconsumed_tail or self.source.read(self._in, self.CHUNK)
                    if not self._z.unconsumed_tail:
                        self._in += len(data)
                    piece = self._z.decompress(data, want)
                    if self._z.eof or (not data and not piece):
                        self.done = True
                else:
                    piece = self._zstd.read(want)
                    if not piece:
                        self.done = True
                self.out += piece
                if len(self.out) > self.limit:
                    raise ArtifactFormatError(
                        f"compressed bundle inflates beyond {self.limit} bytes (declared "
                        f"{self.header.uncompressed_size})",
                        self.origin,
                    )
        except ArtifactFormatError:
            raise
        except Exception as exc:  # noqa: BLE001 - zlib.error, zstd.ZstdError: corrupt stream
            raise ArtifactFormatError(f"corrupt {self.header.method} stream: {exc}", self.origin) from None

    def _reserve(self, want: int) -> None:
        """Charge the scan's inflation total; past SMALL_INFLATE, wait for the one large-inflation slot."""
        if not self._large and len(self.out) + want > SMALL_INFLATE:
            self.budget.large_inflation.acquire()
            self._large = True
        self.budget.charge("inflated bytes", want, self.origin)

    def close(self) -> None:
        """Drop the inflated bytes and give the large-inflation slot back."""
        self.out = bytearray()
        if self._large:
            self._large = False
            self.budget.large_inflation.release()

    def blob(self) -> Blob:
        return Blob(self.out)

    def verify(self) -> str | None:
        """Hash check once everything is inflated (None when it matches or cannot be checked yet)."""
        if len(self.out) != self.header.uncompressed_size:
            return None
        import hashlib

        digest = int.from_bytes(hashlib.md5(self.out, usedforsecurity=False).digest()[:8], "little")
        return None if digest == self.header.hash else "compressed bundle hash does not match its contents"


FatbinBlob = tuple[int, str, "Bundle | CompressedHeader | ArtifactFormatError"]  # (offset, kind, what was read)


def walk_fatbin(blob: Blob, sec_offset: int, sec_size: int) -> Iterator[FatbinBlob]:
    """Yield (offset, kind) of each blob in a ``.hip_fatbin`` section, or ArtifactFormatError for a bad one.

    Blobs start on 4096-byte boundaries relative to the section, with zero padding between them.
    A bad blob does not stop the walk: the next 4096 boundary is probed.
    """
    section = blob.window(sec_offset, sec_size)
    pos = 0
    while pos < section.size:
        head = section.read(pos, 32)
        if head[:24] == BUNDLE_MAGIC:
            try:
                bundle = parse_bundle(section, pos, head=head)
                yield pos + sec_offset, "bundle", bundle
                pos += bundle.extent
            except ArtifactFormatError as exc:
                yield pos + sec_offset, "error", exc
                pos += 1
        elif head[:4] == CCOB_MAGIC:
            try:
                header = parse_compressed_header(section, pos)
                yield pos + sec_offset, "compressed", header
                pos += header.total_size or 1
            except ArtifactFormatError as exc:
                yield pos + sec_offset, "error", exc
                pos += 1
        else:
            pos += 1
        pos += -pos % 4096


FATBIN_WRAPPER_MAGIC = 0x48495046  # "FPIH": __hipFatBinSegment records
MAX_WRAPPERS = 1 << 16


def fatbin_wrappers(blob: Blob, seg_offset: int, seg_size: int) -> list[int]:
    """Blob addresses from ``.hipFatBinSegment`` records ``{u32 magic, u32 version, u64 ptr, u64 unused}``.

    GNU ld writes the address in place; lld leaves 0 (the dynamic relocation fills it at load time),
    so zero pointers are skipped and the section walk remains the primary method.
    """
    if seg_size % 24 or seg_size // 24 > MAX_WRAPPERS:
        raise ArtifactFormatError(
            f".hipFatBinSegment of {seg_size} bytes is not a whole number of records", blob.start + seg_offset
        )
    data = blob.exact(seg_offset, seg_size, ".hipFatBinSegment")
    out = []
    for i in range(seg_size // 24):
        magic, _, pointer, _ = struct.unpack_from("<IIQQ", data, i * 24)
        if magic != FATBIN_WRAPPER_MAGIC:
            raise ArtifactFormatError(
                f"bad .hipFatBinSegment record magic 0x{magic:x}", blob.start + seg_offset + i * 24
            )
        if pointer:
            out.append(pointer)
    return out
