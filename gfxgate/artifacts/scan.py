"""Scan files and folders for installed GPU code: by content, from headers, one pass per file.

Per file: map it, read the first bytes, and follow only the structures that lead to code objects
(ELF header → section table → ``.hip_fatbin`` bundle headers → first bytes of each entry). A broken
file becomes a FileError entry and the scan goes on. Folders are walked without following symlink
loops; special and unreadable files are reported as skipped with a reason.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import stat
from collections import deque
from pathlib import Path
from typing import Callable, Iterable, Iterator

from gfxgate.artifacts import bundle as bnd
from gfxgate.artifacts import elf
from gfxgate.artifacts import fatbin as nvf
from gfxgate.artifacts import kpack as kp
from gfxgate.artifacts.budget import SMALL_INFLATE, Budget
from gfxgate.artifacts.elf import ArtifactFormatError, Blob, mach_table
from gfxgate.artifacts.model import (
    BUNDLE,
    CODE_OBJECT,
    COMPRESSED_BUNDLE,
    CUDA_HOST,
    EMBEDDED,
    FATBIN,
    HIP_HOST,
    HOST,
    HOST_WITH_IMAGES,
    IN_BUNDLE,
    IN_COMPRESSED,
    IN_FILE,
    IN_KPACK,
    KPACK,
    KPACK_HOST,
    OTHER,
    SKIPPED,
    ArtifactReport,
    CodeObject,
    CudaCode,
    FileError,
    FileReport,
    KpackInfo,
    KpackLibrary,
    TargetString,
    target_key,
)
from gfxgate.artifacts.rocblas import classify

MAX_SEARCH_BYTES = 64 << 20  # per file: data sections searched for embedded images and target names
MAX_ERRORS = 50  # per file; a crafted file cannot flood the report
MAX_OBJECTS = 50_000  # per file: code objects decoded (librocsparse has 777); bounds the work on crafted files
MAX_INFLATE_TOTAL = 1 << 30  # per file: bytes inflated over all its compressed bundles
LOOKAHEAD = 16  # .hip_fatbin blobs parsed ahead of the one being decoded (their code object headers prefetched)


class _ScanLimit(Exception):
    """A per-file work limit was reached; the file's report says so and the scan moves on."""


HIP_RUNTIME_LIBS = ("libamdhip64", "libhsa-runtime64", "librocblas", "libhipblas", "librocsolver", "libMIOpen")
_EMBEDDED_MAGIC = b"\x7fELF\x02\x01\x01"  # 64-bit little-endian ELF, version 1
# Allocated sections that hold linker/unwinder tables, never data a program embeds.
_NOT_DATA = (
    ".hip_fatbin",
    ".hipFatBinSegment",
    ".nv_fatbin",
    ".nvFatBinSegment",
    ".eh_frame",
    ".gcc_except_table",
    ".got",
    ".init_array",
    ".fini_array",
    ".dynamic",
    ".interp",
    ".note",
    ".gnu",
    ".rela",
    ".rel.",
    ".dynsym",
    ".dynstr",
    ".tbss",
    ".tdata",
    ".ctors",
    ".dtors",
    ".jcr",
)


class _FileScan:
    """Collects what one file yields; the parsers raise, this records and moves on."""

    def __init__(self, blob: Blob, kernels: bool, cap: int, budget: Budget) -> None:
        self.blob, self.kernels, self.cap, self.budget = blob, kernels, cap, budget
        self.objects: list[CodeObject] = []
        self.errors: list[FileError] = []
        self.strings: list[TargetString] = []
        self.cuda: list[CudaCode] = []
        self._searched: set[tuple[int, int]] = set()
        self.decoded = 0
        self.kind = OTHER
        self.inflate_left = MAX_INFLATE_TOTAL
        self.kpack: KpackInfo | None = None

    def touch(self, start: int, end: int) -> None:
        """Count a searched range once in bytes_read (a search touches every byte of it)."""
        if (start, end) not in self._searched:
            self._searched.add((start, end))
            self.blob.counter[0] += end - start

    def error(self, exc: ArtifactFormatError | str, offset: int | None = None) -> None:
        if len(self.errors) < MAX_ERRORS:
            if isinstance(exc, ArtifactFormatError):
                self.errors.append(FileError(str(exc), exc.offset))
            else:
                self.errors.append(FileError(exc, offset))
        elif len(self.errors) == MAX_ERRORS:
            self.errors.append(FileError(f"more than {MAX_ERRORS} errors; the rest are not listed"))

    # -- code objects ------------------------------------------------------------------------------
    def code_object(
        self,
        image: Blob,
        container: str,
        *,
        origin: int,
        size: int,
        entry: bnd.BundleEntry | None = None,
        inner_offset: int | None = None,
    ) -> None:
        """Decode the ELF that starts ``image``; ``origin`` is what the report calls its file offset."""
        self.decoded += 1
        if self.decoded > MAX_OBJECTS:
            raise _ScanLimit(f"stopped after {MAX_OBJECTS} code objects (a per-file limit)")
        try:
            hdr = elf.code_object_header(image, budget=self.budget)
        except ArtifactFormatError as exc:
            self.error(exc)
            if entry is not None and entry.target:
                self.unconfirmed(entry, container, origin, inner_offset)
            return
        available = size if container == IN_COMPRESSED else min(size, image.size) if size else image.size
        if hdr.extent > available:
            # the section header table lies past the end: a cut file or entry, not a usable code object
            self.error(f"truncated code object: its headers span {hdr.extent} bytes, {available} are there", origin)
            return
        kernels = None
        if self.kernels:
            try:
                kernels = elf.kernel_names(image, budget=self.budget)
            except ArtifactFormatError as exc:
                self.error(exc)
        note = ""
        if entry is not None and entry.target and _norm(entry.target) != hdr.target:
            note = f"entry id says {entry.target}, e_flags say {hdr.target}"
        self.objects.append(
            CodeObject(
                hdr.target,
                hdr.processor,
                container,
                origin,
                size if size else hdr.extent,
                code_object_version=hdr.code_object_version,
                generic_version=hdr.generic_version,
                entry_id=entry.id if entry else None,
                inner_offset=inner_offset,
                kernels=kernels,
                note=note,
            )
        )

    def unconfirmed(self, entry: bnd.BundleEntry, container: str, origin: int, inner_offset: int | None) -> None:
        """A bundle entry whose ELF could not be read: its id still names a target (weaker evidence)."""
        self.objects.append(
            CodeObject(
                entry.target,
                entry.target.split(":")[0],
                container,
                origin,
                entry.size,
                entry_id=entry.id,
                inner_offset=inner_offset,
                confirmed=False,
                note="target from the entry id only",
            )
        )

    def _prefetched(self, walk: Iterator[bnd.FatbinBlob]) -> Iterator[bnd.FatbinBlob]:
        """The fatbin walk, LOOKAHEAD blobs ahead of its consumer: the code object headers of the bundles
        ahead are prefetched while the current one is decoded, so on a cold cache their reads overlap."""
        ahead: deque = deque()
        for item in walk:
            pos, what, parsed = item
            if isinstance(parsed, bnd.Bundle):
                for entry in parsed.devices:
                    self.blob.prefetch(pos + entry.offset, elf.EHDR_SIZE)
            ahead.append(item)
            if len(ahead) > LOOKAHEAD:
                yield ahead.popleft()
        yield from ahead

    def bundle(self, blob: Blob, offset: int, parsed: bnd.Bundle | None = None, *, prefetched: bool = False) -> None:
        try:
            parsed = parsed or bnd.parse_bundle(blob, offset)
        except ArtifactFormatError as exc:
            self.error(exc)
            return
        if not prefetched:  # the entries' headers are read in turn: on a cold cache, let those reads overlap
            for entry in parsed.devices:
                blob.prefetch(offset + entry.offset, elf.EHDR_SIZE)
        for entry in parsed.devices:
            window = blob.window(offset + entry.offset, entry.size)
            self.code_object(window, IN_BUNDLE, origin=window.start, size=entry.size, entry=entry)

    def compressed(self, blob: Blob, offset: int) -> None:
        try:
            header = bnd.parse_compressed_header(blob, offset)
        except ArtifactFormatError as exc:
            self.error(exc)
            return
        if self.inflate_left <= 0:
            raise _ScanLimit(f"stopped after inflating {MAX_INFLATE_TOTAL} bytes (a per-file limit)")
        inflater = bnd.Inflater(blob, offset, header, min(self.cap, self.inflate_left), self.budget)
        try:
            self._inflated_entries(blob, offset, header, inflater)
        finally:
            self.inflate_left -= len(inflater.out)
            inflater.close()

    def _inflated_entries(self, blob: Blob, offset: int, header: bnd.CompressedHeader, inflater: bnd.Inflater) -> None:
        try:
            inflater.need(min(inflater.limit, 1 << 16))
            parsed = bnd.parse_bundle(inflater.blob(), 0, room=header.uncompressed_size)
        except ArtifactFormatError as exc:
            self.error(exc)
            return
        origin = blob.start + offset
        for entry in sorted(parsed.entries, key=lambda e: e.offset):
            if not entry.is_device:
                continue
            try:
                inflater.need(entry.offset + (entry.size if self.kernels else elf.EHDR_SIZE))
            except ArtifactFormatError as exc:
                self.error(exc)
                if entry.target:
                    self.unconfirmed(entry, IN_COMPRESSED, origin, entry.offset)
                continue
            image = inflater.blob().window(entry.offset, entry.size)
            self.code_object(
                image, IN_COMPRESSED, origin=origin, size=entry.size, entry=entry, inner_offset=entry.offset
            )
        problem = inflater.verify()
        if problem:
            self.error(problem, origin)

    # -- kpack -----------------------------------------------------------------------------------------
    def kpack_archive(self) -> None:
        """A ``.kpack`` archive: its TOC names library × architecture; each code object's own header confirms it."""
        try:
            archive = kp.parse_archive(self.blob, self.budget)
        except ArtifactFormatError as exc:
            self.error(exc)
            return
        libraries: dict[str, list[str]] = {}
        for k in archive.kernels:
            libraries.setdefault(kp.library_of(k.binary), []).append(k.arch)
        self.kpack = KpackInfo(
            "archive",
            archive.version,
            archive.group_name,
            archive.arch_family,
            archive.gfx_arches,
            archive.compression,
            tuple(KpackLibrary(b, tuple(sorted(set(a), key=target_key))) for b, a in sorted(libraries.items())),
        )
        for k in sorted(archive.kernels, key=lambda k: (k.ordinal, k.binary, k.arch)):
            offset, stored = archive.locations[k.ordinal]
            inner: int | None = None
            if archive.compression == "none":
                image, size = self.blob.window(offset, stored), stored
            else:
                inflated = self.kpack_inflated(k, offset, stored)
                if inflated is None:
                    continue
                image, size, inner = inflated, inflated.size, 0
            before, errors = len(self.objects), len(self.errors)
            self.code_object(image, IN_KPACK, origin=offset, size=size, inner_offset=inner)
            # name the TOC entry and its place in the archive (an inflated frame's offsets are its own)
            self.errors[errors:] = [
                e
                if e.message.startswith("more than")
                else FileError(f"kpack {k.binary} {k.arch}: {e.message}", self.blob.start + offset)
                for e in self.errors[errors:]
            ]
            if len(self.objects) > before:
                found = self.objects[-1]
                note = (
                    f"the kpack TOC says {k.arch}, e_flags say {found.target}"
                    if found.processor != k.arch.split(":")[0]
                    else ""
                )
                self.objects[-1] = dataclasses.replace(found, entry_id=k.binary, note=note)
            else:
                self.kpack_unconfirmed(k, offset, stored)

    def kpack_inflated(self, k: kp.KpackKernel, offset: int, stored: int) -> Blob | None:
        """The zstd frame of one TOC entry inflated (at most what the TOC declares and the scan's cap), or None."""
        if self.inflate_left <= 0:
            raise _ScanLimit(f"stopped after inflating {MAX_INFLATE_TOTAL} bytes (a per-file limit)")
        limit = min(self.cap, self.inflate_left, k.original_size if k.original_size is not None else self.cap)
        try:
            if limit > SMALL_INFLATE:  # one large buffer in flight per scan, whatever -j is
                with self.budget.large_inflation:
                    data = kp.inflate(self.blob, offset, stored, limit, self.budget)
            else:
                data = kp.inflate(self.blob, offset, stored, limit, self.budget)
        except ArtifactFormatError as exc:
            self.error(exc)
            self.kpack_unconfirmed(k, offset, stored)
            return None
        self.inflate_left -= len(data)
        if k.original_size is not None and len(data) != k.original_size:
            self.error(
                f"kpack code object {k.binary} {k.arch} inflates to {len(data)} bytes, the TOC says {k.original_size}",
                self.blob.start + offset,
            )
        return Blob(data)

    def kpack_unconfirmed(self, k: kp.KpackKernel, offset: int, stored: int) -> None:
        self.objects.append(
            CodeObject(
                k.arch,
                k.arch.split(":")[0],
                IN_KPACK,
                offset,
                stored,
                entry_id=k.binary,
                confirmed=False,
                note="target from the kpack TOC only",
            )
        )

    def kpack_reference(self, info: elf.HostElf) -> None:
        """A host ELF pointing at kpack archives: ``HIPK`` wrapper records and its ``.rocm_kpack_ref`` marker."""
        segment = info.section(".hipFatBinSegment")
        hipk = hipf = 0
        if segment is not None and segment.type != "SHT_NOBITS" and 0 < segment.size <= 24 * bnd.MAX_WRAPPERS:
            hipk, hipf, _ = kp.wrapper_magics(self.blob.read(segment.offset, segment.size))
        ref = info.section(kp.REF_SECTION)
        if ref is None and not hipk:
            return
        if self.kind == HOST:
            self.kind = KPACK_HOST
        name: str | None = None
        paths: tuple[str, ...] = ()
        if ref is None:
            self.error(
                f"{hipk} HIPK wrapper record(s) but no {kp.REF_SECTION} section", segment.offset if segment else None
            )
        elif ref.type == "SHT_NOBITS" or ref.size > kp.MAX_REF_BYTES:
            self.error(f"{kp.REF_SECTION} of {ref.size} bytes is empty or over {kp.MAX_REF_BYTES}", ref.offset)
        else:
            try:
                name, paths = kp.parse_ref(
                    self.blob.exact(ref.offset, ref.size, kp.REF_SECTION), self.blob.start + ref.offset
                )
            except ArtifactFormatError as exc:
                self.error(exc)
        self.kpack = KpackInfo(
            "reference", kernel_name=name, search_paths=paths, hipk_wrappers=hipk, hipf_wrappers=hipf
        )

    # -- NVIDIA fat binaries ---------------------------------------------------------------------------
    def nv_fatbin(self, offset: int, size: int) -> None:
        """Every container of a ``.nv_fatbin`` section (or a ``.fatbin`` file): its entries from their headers."""
        for item in nvf.walk_section(self.blob, offset, size):
            if isinstance(item, ArtifactFormatError):
                self.error(item)
                continue
            self.cuda += [
                CudaCode(e.sm, e.kind, e.offset, e.size, item.offset, e.compression, e.version) for e in item.entries
            ]

    # -- host ELF ------------------------------------------------------------------------------------
    def host(self, size: int) -> None:
        """A host ELF: ``.hip_fatbin`` bundles, AMDGPU images embedded in data sections, target names."""
        try:
            info = elf.host_elf(self.blob, self.budget)
        except ArtifactFormatError as exc:
            self.error(exc)
            return
        nv = info.section(".nv_fatbin")
        if nv is not None and nv.type != "SHT_NOBITS":
            self.kind = CUDA_HOST
            if nv.offset + nv.size > size:
                self.error(f".nv_fatbin (0x{nv.offset:x}+0x{nv.size:x}) runs past the end of the file", nv.offset)
            self.nv_fatbin(nv.offset, nv.size)
        fatbin = info.section(".hip_fatbin")
        if fatbin is not None and fatbin.type != "SHT_NOBITS":
            self.kind = HIP_HOST
            if fatbin.offset + fatbin.size > size:
                self.error(
                    f".hip_fatbin (0x{fatbin.offset:x}+0x{fatbin.size:x}) runs past the end of the file", fatbin.offset
                )
            starts = set()
            wrappers = self.wrapper_pointers(info)
            if isinstance(
                wrappers, list
            ):  # cold cache: let the blob headers' reads overlap instead of following the walk
                for pointer in wrappers:
                    pos = pointer - fatbin.addr + fatbin.offset
                    if fatbin.offset <= pos < fatbin.offset + fatbin.size:
                        self.blob.prefetch(pos, 4096)
            for pos, _kind, item in self._prefetched(bnd.walk_fatbin(self.blob, fatbin.offset, fatbin.size)):
                starts.add(pos)
                if isinstance(item, bnd.Bundle):
                    self.bundle(self.blob, pos, item, prefetched=True)
                elif isinstance(item, ArtifactFormatError):
                    self.error(item)
                else:  # a compressed bundle's header: decompressed where it starts
                    self.compressed(self.blob, pos)
            self.follow_wrappers(info, fatbin, starts, wrappers)
        self.kpack_reference(info)
        if self.kind == CUDA_HOST and fatbin is None:
            return  # NVIDIA code is in its containers: no AMDGPU images or gfx names to search the data for
        budget = MAX_SEARCH_BYTES
        data_sections = [
            s
            for s in info.sections
            if s.type == "SHT_PROGBITS"
            and s.allocated
            and not s.executable
            and not s.name.startswith(_NOT_DATA)
            and s.size > 0
            and s.offset + s.size <= size
        ]
        found_embedded = False
        for sec in data_sections:
            if budget <= 0:
                self.error(f"searched {MAX_SEARCH_BYTES} bytes of data sections; the rest was not searched")
                break
            span = min(sec.size, budget)
            budget -= span
            found_embedded |= self.embedded(sec.offset, sec.offset + span)
        if found_embedded and self.kind == HOST:
            self.kind = HOST_WITH_IMAGES
        if self.kind not in (HOST, CUDA_HOST) or self.gpu_linked(info):  # AMD target names: HIP code's libraries
            self.target_strings([s for s in data_sections if not s.writable or s.name == ".data"])

    def wrapper_pointers(self, info: elf.HostElf) -> list[int] | ArtifactFormatError | None:
        """The ``.hipFatBinSegment`` pointers (None without the section; the error when it is malformed)."""
        segment = info.section(".hipFatBinSegment")
        if segment is None or segment.type == "SHT_NOBITS":
            return None
        if 0 < segment.size <= 24 * bnd.MAX_WRAPPERS and not segment.size % 24:
            hipk, hipf, _ = kp.wrapper_magics(self.blob.read(segment.offset, segment.size))
            if hipk and not hipf:  # kpack'd: the records point at .rocm_kpack_ref (kpack_reference reads it)
                return None
        try:
            return bnd.fatbin_wrappers(self.blob, segment.offset, segment.size)
        except ArtifactFormatError as exc:
            return exc

    def follow_wrappers(
        self, info: elf.HostElf, fatbin: elf.Section, starts: set[int], pointers: list[int] | ArtifactFormatError | None
    ) -> None:
        """Cross-check the walk with the ``.hipFatBinSegment`` pointers; parse any blob the walk missed."""
        if pointers is None:
            return
        if isinstance(pointers, ArtifactFormatError):
            self.error(pointers)
            return
        segment = info.section(".hipFatBinSegment")  # there: the pointers were read from it
        where = segment.offset if segment is not None else None
        for pointer in pointers:
            pos = pointer - fatbin.addr + fatbin.offset
            if not fatbin.offset <= pos < fatbin.offset + fatbin.size:
                self.error(f".hipFatBinSegment points at 0x{pointer:x}, outside .hip_fatbin", where)
            elif pos not in starts:
                starts.add(pos)
                head = self.blob.read(pos, 4)
                if head == bnd.CCOB_MAGIC:
                    self.compressed(self.blob, pos)
                else:
                    self.bundle(self.blob, pos)

    def gpu_linked(self, info: elf.HostElf) -> bool:
        """Does this host ELF link a HIP/HSA runtime or ROCm library (so its target names matter)?"""
        try:
            return any(n.startswith(HIP_RUNTIME_LIBS) for n in elf.needed_libraries(self.blob, info, self.budget))
        except ArtifactFormatError as exc:
            self.error(exc)
            return False

    def embedded(self, start: int, end: int) -> bool:
        """Raw AMDGPU ELF images inside a host data section (libhsa-runtime64's blit kernels)."""
        self.touch(start, end)
        found = False
        pos = start
        while True:
            hit = self.blob.find(_EMBEDDED_MAGIC, pos, end)
            if hit < 0:
                return found
            pos = hit + 1
            head = self.blob.read(hit, elf.EHDR_SIZE)
            if len(head) < elf.EHDR_SIZE or int.from_bytes(head[18:20], "little") != elf.EM_AMDGPU:
                continue
            try:
                hdr = elf.parse_header(self.blob, hit)
            except ArtifactFormatError:
                continue
            extent = min(hdr.extent, end - hit)
            self.code_object(self.blob.window(hit, extent), EMBEDDED, origin=hit, size=extent)
            found = True
            pos = hit + max(extent, 1)

    def target_strings(self, sections) -> None:
        from gfxgate.targets import AMD_TARGET_BYTES  # the AMD target grammar lives with the target model

        known = set(mach_table().machs)
        seen: dict[str, list[int]] = {}
        budget = MAX_SEARCH_BYTES
        for sec in sections:
            span = min(sec.size, budget)
            budget -= span
            if span <= 0:
                break
            self.touch(sec.offset, sec.offset + span)
            end = sec.offset + span
            for pos, piece, own in self.blob.chunks(sec.offset, end, overlap=32):
                # a match belongs to the piece it starts in; the overlap completes the ones at its end
                for match in AMD_TARGET_BYTES.finditer(piece, 0, min(len(piece), end - pos)):
                    if match.start() >= own:
                        break
                    name = match.group().decode()
                    if name in known:
                        seen.setdefault(name, [pos + match.start(), 0])[1] += 1
        ordered = sorted(seen.items(), key=lambda kv: target_key(kv[0]))
        self.strings = [TargetString(t, first, n) for t, (first, n) in ordered]


@functools.lru_cache(maxsize=1024)
def _norm(target_id: str) -> str:
    head, *features = target_id.split(":")
    return head + "".join(f":{f}" for f in sorted(features))


def scan_file(
    path: Path,
    *,
    kernels: bool = False,
    sha256: bool = False,
    cap: int = bnd.DEFAULT_DECOMPRESS_CAP,
    display: str | None = None,
    budget: Budget | None = None,
) -> FileReport:
    """Scan one regular file. Never raises for bad content; OS errors become a skipped entry.
    ``budget`` is shared by every file of one scan (a fresh one when not given)."""
    name = display or str(path)
    library = classify(Path(name))
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size == 0:
                return FileReport(name, OTHER, 0, 0, library=library)
            data = elf.FileData(handle.fileno(), size)
            try:
                return _scan_data(name, data, size, kernels, sha256, cap, library, budget or Budget())
            finally:
                data.close()
    except OSError as exc:
        return FileReport(name, SKIPPED, library=library, skipped=f"unreadable: {exc.strerror or exc}")


def scan_bytes(
    data: bytes,
    name: str = "<bytes>",
    *,
    kernels: bool = False,
    cap: int = bnd.DEFAULT_DECOMPRESS_CAP,
    budget: Budget | None = None,
) -> FileReport:
    """Scan an in-memory file (the fuzz tests use it); same rules as scan_file."""
    if not data:
        return FileReport(name, OTHER, 0, 0, library=classify(Path(name)))
    return _scan_data(name, data, len(data), kernels, False, cap, classify(Path(name)), budget or Budget())


def _scan_data(name, data, size, kernels, sha256, cap, library, budget: Budget) -> FileReport:
    blob = Blob(data)
    scan = _FileScan(blob, kernels, cap, budget)
    head = blob.read(0, 64)
    try:
        if head[:4] == elf.ELF_MAGIC:
            if head[4:6] == b"\x02\x01" and head[18:20] == b"\xe0\x00":  # 64-bit LE, EM_AMDGPU
                scan.kind = CODE_OBJECT
                scan.code_object(blob, IN_FILE, origin=0, size=size)
            else:
                scan.kind = HOST
                scan.host(size)
        elif head[:24] == bnd.BUNDLE_MAGIC:
            scan.kind = BUNDLE
            scan.bundle(blob, 0)
        elif head[:4] == bnd.CCOB_MAGIC:
            scan.kind = COMPRESSED_BUNDLE
            scan.compressed(blob, 0)
        elif head[:4] == kp.KPAK_MAGIC:
            scan.kind = KPACK
            scan.kpack_archive()
        elif head[:4] == nvf.MAGIC_BYTES:
            scan.kind = FATBIN
            scan.nv_fatbin(0, size)
    except _ScanLimit as exc:
        scan.error(str(exc))
    except MemoryError:
        scan.error("out of memory while scanning this file")
    except Exception as exc:  # noqa: BLE001 - a parser bug must not end the scan; the fuzz tests assert it never happens
        scan.error(f"internal error: {type(exc).__name__}: {exc}")
    kind = scan.kind
    digest = None
    if sha256:
        import hashlib

        hasher, hashed = hashlib.sha256(), 0
        for _, piece, own in blob.chunks(0, size):
            hasher.update(piece[:own])
            hashed += min(own, len(piece))
        blob.counter[0] += hashed
        if hashed == size:
            digest = hasher.hexdigest()
        else:  # pread, not mmap: a file cut under us is a short read, not SIGBUS
            scan.error(f"the file changed size during the scan ({hashed} of {size} bytes read); no sha256")
    objects = sorted(scan.objects, key=lambda c: (c.offset, c.inner_offset or 0, c.target))
    if library is not None and library.holds_code and library.target and objects:
        claimed = library.target.split(":")[0]
        held = sorted({c.processor for c in objects})
        if claimed not in held:
            scan.error(f"the name claims {library.target}, the code objects are for {', '.join(held)}")
    # Overlapping reads (a header read twice) are counted twice; no file is read more than whole.
    return FileReport(
        name,
        kind,
        size,
        min(blob.bytes_read, size),
        tuple(objects),
        tuple(scan.strings),
        library,
        tuple(scan.errors),
        digest,
        kpack=scan.kpack,
        cuda_code=tuple(scan.cuda),
    )


# -- walking ---------------------------------------------------------------------------------------------


def iter_files(paths: Iterable[Path]) -> Iterator[tuple[Path, str | None]]:
    """(path, None) for each regular file to scan, (path, reason) for each one skipped.

    Follows symlinks to files and folders once: a folder or file reached twice (a symlink loop, or
    a library alias such as ``libfoo.so`` → ``libfoo.so.1``) is reported as skipped, not rescanned.
    """
    seen_dirs: set[tuple[int, int]] = set()
    seen_files: dict[tuple[int, int], Path] = {}
    for root in paths:
        stack = [Path(root)]
        while stack:
            path = stack.pop()
            try:
                st = path.stat()
            except FileNotFoundError:
                yield path, ("broken symlink" if path.is_symlink() else "does not exist")
                continue
            except OSError as exc:
                yield path, f"cannot stat: {exc.strerror or exc}"
                continue
            key = (st.st_dev, st.st_ino)
            if stat.S_ISDIR(st.st_mode):
                if key in seen_dirs:
                    yield path, "folder already scanned (symlink loop or alias)"
                    continue
                seen_dirs.add(key)
                try:
                    children = sorted(os.listdir(path), reverse=True)
                except OSError as exc:
                    yield path, f"unreadable folder: {exc.strerror or exc}"
                    continue
                # real files before symlinks, so a library alias (libfoo.so -> libfoo.so.1.2) is
                # reported as the alias of the real file, not the other way round
                entries = [path / child for child in children]
                stack.extend(sorted(entries, key=lambda p: (not p.is_symlink(), p.name), reverse=False))
            elif stat.S_ISREG(st.st_mode):
                if key in seen_files:
                    yield path, f"same file as {seen_files[key]}"
                    continue
                seen_files[key] = path
                if not os.access(path, os.R_OK):
                    yield path, "unreadable: permission denied"
                    continue
                yield path, None
            else:
                yield path, "not a regular file (device, FIFO or socket)"


def scan_paths(
    paths: list[Path],
    *,
    kernels: bool = False,
    sha256: bool = False,
    jobs: int | None = None,
    cap: int = bnd.DEFAULT_DECOMPRESS_CAP,
    progress: Callable[[str], None] | None = None,
) -> ArtifactReport:
    """Scan files and folders; files run in a thread pool (pread, searches and hashing release the GIL).
    One :class:`Budget` bounds the work of all files and threads together."""
    jobs = jobs or min(8, (os.cpu_count() or 1) * 2)
    reports: list[FileReport] = []
    budget = Budget()

    def one(item: tuple[Path, str | None]) -> FileReport:
        path, reason = item
        if reason is not None:
            result = FileReport(str(path), SKIPPED, library=classify(path), skipped=reason)
        else:
            result = scan_file(path, kernels=kernels, sha256=sha256, cap=cap, budget=budget)
        if progress:
            progress(str(path))
        return result

    items = iter_files(paths)
    first = list(itertools.islice(items, 2))
    if jobs <= 1 or len(first) <= 1:  # one file: no pool to start (or import)
        reports = [one(item) for item in itertools.chain(first, items)]
    else:
        from concurrent.futures import ThreadPoolExecutor

        # Stream the walk: at most a few files per worker in flight, never the whole tree's futures.
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            pending: deque = deque()
            for item in itertools.chain(first, items):
                pending.append(pool.submit(one, item))
                if len(pending) >= jobs * 4:
                    reports.append(pending.popleft().result())
            reports += [future.result() for future in pending]
    reports.sort(key=lambda r: r.path)
    return ArtifactReport(tuple(str(p) for p in paths), tuple(reports), kernels, sha256)
