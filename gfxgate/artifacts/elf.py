"""AMDGPU ELF facts from raw bytes: the only module that knows ELF layouts or touches pyelftools.

Everything here is a small function over a :class:`Blob` (a bounded, read-counting view of a mapped
file) returning named tuples: fixed layouts built straight from ``struct`` fields, created by the
thousand per library (on CPython 3.11 a frozen dataclass costs about five times a named tuple's
instructions to define, and more to build). The processor comes from ``e_flags`` (EF_AMDGPU_MACH),
decoded with the mach values of ``rules/targets.yaml`` (:func:`mach_table`); code object v2 keeps it in
an ``AMD`` note.
The hot path (ELF header, section table, notes) is plain ``struct`` over at most a few KiB; pyelftools
reads the dynamic section (DT_NEEDED), which is needed only for host libraries without device code.
Malformed input raises :class:`ArtifactFormatError`, never anything else.
"""

from __future__ import annotations

import functools
import os
import struct
from typing import NamedTuple

from gfxgate.errors import RuleError

ELF_MAGIC = b"\x7fELF"
EM_AMDGPU = 224
ELFOSABI_AMDGPU_HSA, ELFOSABI_AMDGPU_PAL, ELFOSABI_AMDGPU_MESA3D = 64, 65, 66
OSABI_NAMES = {ELFOSABI_AMDGPU_HSA: "hsa", ELFOSABI_AMDGPU_PAL: "pal", ELFOSABI_AMDGPU_MESA3D: "mesa3d"}
EHDR_SIZE = 64
MAX_NOTE_BYTES = 16 << 20  # a metadata note larger than this is not a real code object
MAX_SECTIONS = 65535
# limits per code object (budget.py: the totals per scan)
MAX_NOTE_SECTIONS = 64  # per code object (real ones have one or two)
MAX_NOTES = 4096  # per code object (real v2 objects have about five, v3+ one or two)
MAX_NAME = 4096  # bytes of one symbol or library name (mangled kernel names run to a few hundred)
MAX_SECTION_NAME = 256  # bytes of one section name (65,535 sections × this bounds a table without NUL)


class MachTable(NamedTuple):
    """What ``e_flags`` name: EF_AMDGPU_MACH value → processor, and the processors with the xnack / sramecc
    features (code object v2/v3 flags cannot tell "unsupported" from "off"). The facts are ``rules/targets.yaml``'s
    (processors, generic targets and the legacy processors gfxgate decodes but does not model), read once
    through the shipped-data cache."""

    names: dict[int, str]
    machs: dict[str, int]
    xnack: frozenset[str]
    sramecc: frozenset[str]


@functools.cache
def mach_table() -> MachTable:
    from gfxgate.datafiles import load_yaml
    from gfxgate.resources import rules_dir

    path = rules_dir() / "targets.yaml"
    data = load_yaml(path, "targets")
    entries = data["processors"] + data["generics"] + data.get("legacy", [])
    names = {e["mach"]: e["name"] for e in entries}
    machs = {e["name"]: e["mach"] for e in entries}
    if len(names) != len(entries) or len(machs) != len(entries):
        raise RuleError(f"{path}: a mach value or a processor name is listed twice")
    return MachTable(
        names=names,
        machs=machs,
        xnack=frozenset(e["name"] for e in entries if "xnack" in e.get("features", ())),
        sramecc=frozenset(e["name"] for e in entries if "sramecc" in e.get("features", ())),
    )


EF_AMDGPU_MACH = 0x0FF
EF_AMDGPU_FEATURE_XNACK_V3, EF_AMDGPU_FEATURE_SRAMECC_V3 = 0x100, 0x200
EF_AMDGPU_FEATURE_XNACK_V4, EF_AMDGPU_FEATURE_SRAMECC_V4 = 0x300, 0xC00
_V4_XNACK = {0x000: None, 0x100: "any", 0x200: "-", 0x300: "+"}
_V4_SRAMECC = {0x000: None, 0x400: "any", 0x800: "-", 0xC00: "+"}
NT_AMD_HSA_ISA_VERSION = 3
NT_AMDGPU_METADATA = 32

_EHDR = struct.Struct("<16sHHIQQQIHHHHHH")


class ArtifactFormatError(Exception):
    """A file or an embedded object is malformed; ``offset`` says where (absolute in the file)."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class FileData:
    """An open file seen as a sequence of bytes: every access is a ``pread``.

    ``pread`` of a few bytes costs a fraction of a first touch of a mapped page (measured: 777 header
    reads of librocsparse take 0.25 ms with pread, 2.2 ms through a fresh mmap), and a file truncated
    under us gives a short read instead of SIGBUS, which is why bulk searches and hashing read chunks
    too instead of mapping the file.
    """

    CHUNK = 4 << 20

    def __init__(self, fd: int, size: int) -> None:
        self.fd, self.size = fd, size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, item: slice) -> bytes:
        return os.pread(self.fd, item.stop - item.start, item.start)

    def chunks(self, start: int, end: int, overlap: int = 0):
        """(offset, bytes, own) pieces covering [start, end): the first ``own`` bytes are the piece's own,
        up to ``overlap`` more repeat the start of the next. A file that shrank under us just ends early."""
        pos = start
        while pos < end:
            own = min(self.CHUNK, end - pos)
            piece = os.pread(self.fd, own + overlap, pos)
            if not piece:
                return
            yield pos, piece, own
            if len(piece) < own:
                return
            pos += own

    def find(self, needle: bytes, start: int, end: int) -> int:
        for pos, piece, _ in self.chunks(start, end, len(needle) - 1):
            hit = piece.find(needle, 0, min(len(piece), end - pos))
            if hit >= 0:
                return pos + hit
        return -1

    def prefetch(self, offset: int, n: int) -> None:
        """Ask the kernel to start reading a range we are about to read (many small reads then overlap)."""
        try:
            os.posix_fadvise(self.fd, offset, n, os.POSIX_FADV_WILLNEED)
        except (AttributeError, OSError):
            pass

    def close(self) -> None:
        pass


class Blob:
    """A bounded window over bytes or a :class:`FileData` that counts what it hands out (``bytes_read``).

    Every read is clamped to the window, so a crafted offset can never read outside the file.
    """

    __slots__ = ("data", "start", "end", "counter")

    def __init__(self, data, start: int = 0, end: int | None = None, counter: list[int] | None = None) -> None:
        self.data = data
        self.start = start
        self.end = len(data) if end is None else min(end, len(data))
        self.counter = counter if counter is not None else [0]

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def bytes_read(self) -> int:
        return self.counter[0]

    def read(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (relative to the window); short at the end, empty past it."""
        if offset < 0 or n <= 0 or offset >= self.end - self.start:  # (not self.size: a call per read)
            return b""
        lo = self.start + offset
        hi = min(lo + n, self.end)
        self.counter[0] += hi - lo
        if type(self.data) is FileData:  # the hot path (a header per code object): one pread, no slice object
            return os.pread(self.data.fd, hi - lo, lo)
        return bytes(self.data[lo:hi])

    def exact(self, offset: int, n: int, what: str) -> bytes:
        out = self.read(offset, n)
        if len(out) != n:
            raise ArtifactFormatError(
                f"{what} runs past the end ({n} bytes at 0x{offset:x}, size 0x{self.size:x})",
                self.start + max(offset, 0),
            )
        return out

    def prefetch(self, offset: int, n: int) -> None:
        """Hint that ``n`` bytes at ``offset`` will be read soon (a no-op for bytes in memory)."""
        size = self.end - self.start
        if type(self.data) is FileData and 0 <= offset < size:
            self.data.prefetch(self.start + offset, min(n, size - offset))

    def window(self, offset: int, size: int) -> Blob:
        # one per code object: filled in directly (this window's end already lies within the data)
        lo = self.start + max(offset, 0)
        out = object.__new__(Blob)
        out.data, out.start, out.end, out.counter = self.data, lo, min(lo + max(size, 0), self.end), self.counter
        return out

    def find(self, needle: bytes, offset: int, end: int) -> int:
        """Offset (relative) of ``needle`` within [offset, end), or -1. Scans in C without copying."""
        hit = self.data.find(needle, self.start + offset, min(self.start + end, self.end))
        return -1 if hit < 0 else hit - self.start

    def chunks(self, offset: int, end: int, overlap: int = 0):
        """(relative offset, bytes-like, own) pieces covering [offset, end) of the window, for C-level
        searches (regexes, hashing) without mapping a file: see :meth:`FileData.chunks`."""
        lo, hi = self.start + max(offset, 0), min(self.start + end, self.end)
        if isinstance(self.data, FileData):
            for pos, piece, own in self.data.chunks(lo, hi, overlap):
                yield pos - self.start, piece, own
        elif lo < hi:
            yield lo - self.start, memoryview(self.data)[lo : min(hi + overlap, len(self.data))], hi - lo

    def stream(self) -> BlobStream:
        return BlobStream(self)


class BlobStream:
    """A read-only file object over a Blob, for pyelftools (which wants ``seek``/``read``/``tell``)."""

    def __init__(self, blob: Blob) -> None:
        self.blob, self.pos = blob, 0

    def seek(self, pos: int, whence: int = 0) -> int:
        self.pos = pos if whence == 0 else (self.pos + pos if whence == 1 else self.blob.size + pos)
        return self.pos

    def tell(self) -> int:
        return self.pos

    def read(self, n: int = -1) -> bytes:
        n = self.blob.size - self.pos if n is None or n < 0 else n
        out = self.blob.read(self.pos, n)
        self.pos += len(out)
        return out


class ElfHeader(NamedTuple):
    """The fields of an ELF header gfxgate uses."""

    elf_class: int  # 1 = 32-bit, 2 = 64-bit
    little_endian: bool
    osabi: int
    abiversion: int
    e_type: int
    machine: int
    flags: int
    shoff: int
    shentsize: int
    shnum: int
    phoff: int
    phentsize: int
    phnum: int

    @property
    def is_amdgpu(self) -> bool:
        return self.machine == EM_AMDGPU and self.elf_class == 2 and self.little_endian

    @property
    def extent(self) -> int:
        """Bytes the image spans (section header table last, as every AMDGPU linker lays it out)."""
        return max(EHDR_SIZE, self.shoff + self.shnum * self.shentsize, self.phoff + self.phnum * self.phentsize)


class CodeObjectHeader(NamedTuple):
    """What ``e_flags`` (or, for code object v2, the ISA note) says about an AMDGPU code object."""

    processor: str  # "gfx906", "gfx9-generic", or "mach 0x99" for values we do not know
    mach: int
    xnack: str | None  # "+", "-", "any" or None (processor has no such feature)
    sramecc: str | None
    code_object_version: int | None  # 2…6 for HSA code objects, None for PAL/Mesa
    osabi: str
    generic_version: int | None
    flags: int
    extent: int
    target: str  # canonical LLVM target id, see canonical_target()


def canonical_target(processor: str, sramecc: str | None, xnack: str | None) -> str:
    """Processor, then ``:sramecc±`` and ``:xnack±`` for on/off settings only (alphabetical, as LLVM)."""
    out = processor
    for name, value in (("sramecc", sramecc), ("xnack", xnack)):
        if value in ("+", "-"):
            out += f":{name}{value}"
    return out


def parse_header(blob: Blob, offset: int = 0) -> ElfHeader:
    raw = blob.exact(offset, EHDR_SIZE, "ELF header")
    if raw[:4] != ELF_MAGIC:
        raise ArtifactFormatError("no ELF magic", blob.start + offset)
    ident = raw[:16]
    elf_class, data = ident[4], ident[5]
    if elf_class != 2 or data != 1:
        # 32-bit or big-endian: only the machine matters (it is not AMDGPU); decode what we can.
        fmt = "<" if data == 1 else ">"
        e_type, machine = struct.unpack_from(fmt + "HH", raw, 16)
        return ElfHeader(elf_class, data == 1, ident[7], ident[8], e_type, machine, 0, 0, 0, 0, 0, 0, 0)
    (_, e_type, machine, _, _, phoff, shoff, flags, _, phentsize, phnum, shentsize, shnum, _) = _EHDR.unpack(raw)
    return ElfHeader(
        2, True, ident[7], ident[8], e_type, machine, flags, shoff, shentsize, shnum, phoff, phentsize, phnum
    )


def mach_name(mach: int) -> str:
    return mach_table().names.get(mach, f"mach 0x{mach:x}")


def code_object_header(blob: Blob, offset: int = 0, budget=None) -> CodeObjectHeader:
    """Decode an AMDGPU code object's target from its first 64 bytes (v2: also its ISA note).

    This runs once per bundle entry (777 times for librocsparse), so it unpacks the header itself
    instead of going through :func:`parse_header`.
    """
    raw = blob.exact(offset, EHDR_SIZE, "ELF header")
    if raw[:4] != ELF_MAGIC:
        raise ArtifactFormatError("no ELF magic", blob.start + offset)
    if raw[4] != 2 or raw[5] != 1 or raw[18:20] != b"\xe0\x00":
        other = parse_header(blob, offset)
        raise ArtifactFormatError(
            f"not an AMDGPU ELF (e_machine {other.machine}, class {other.elf_class})", blob.start + offset
        )
    (_, e_type, machine, _, _, phoff, shoff, flags, _, phentsize, phnum, shentsize, shnum, _) = _EHDR.unpack(raw)
    hdr = (
        ElfHeader(2, True, raw[7], raw[8], e_type, machine, flags, shoff, shentsize, shnum, phoff, phentsize, phnum)
        if raw[7] == ELFOSABI_AMDGPU_HSA and raw[8] == 0
        else None
    )
    extent = max(EHDR_SIZE, shoff + shnum * shentsize, phoff + phnum * phentsize)
    if hdr is not None:  # code object v2: the processor is in a note, not in e_flags
        proc, xnack, sramecc = _v2_target(blob.window(offset, extent), hdr, budget)
        mach = mach_table().machs.get(proc, 0)
        target = canonical_target(proc, sramecc, xnack)
        return CodeObjectHeader(proc, mach, xnack, sramecc, 2, "hsa", None, flags, extent, target)
    proc, mach, xnack, sramecc, version, osabi, generic_version, target = _decode_flags(flags, raw[7], raw[8])
    return CodeObjectHeader(proc, mach, xnack, sramecc, version, osabi, generic_version, flags, extent, target)


@functools.lru_cache(maxsize=1024)
def _decode_flags(flags: int, osabi_byte: int, abiversion: int) -> tuple:
    """(processor, mach, xnack, sramecc, code object version, osabi, generic version, target id) from e_flags.

    Cached: a library holds hundreds of objects but only a handful of distinct flag words."""
    osabi = OSABI_NAMES.get(osabi_byte, f"osabi {osabi_byte}")
    version = abiversion + 2 if osabi_byte == ELFOSABI_AMDGPU_HSA and abiversion <= 4 else None
    mach = flags & EF_AMDGPU_MACH
    proc = mach_name(mach)
    if version is None or version == 3:
        table = mach_table()
        xnack = ("+" if flags & EF_AMDGPU_FEATURE_XNACK_V3 else "-") if proc in table.xnack else None
        sramecc = ("+" if flags & EF_AMDGPU_FEATURE_SRAMECC_V3 else "-") if proc in table.sramecc else None
    else:
        xnack = _V4_XNACK[flags & EF_AMDGPU_FEATURE_XNACK_V4]
        sramecc = _V4_SRAMECC[flags & EF_AMDGPU_FEATURE_SRAMECC_V4]
    generic_version = ((flags >> 24) & 0xFF or None) if version is not None and version >= 6 else None
    return proc, mach, xnack, sramecc, version, osabi, generic_version, canonical_target(proc, sramecc, xnack)


# -- notes ---------------------------------------------------------------------------------------------------


def _notes(blob: Blob, hdr: ElfHeader, budget=None):
    """(owner, type, desc bytes) of every note, read straight from the section table (bounded: per code
    object by the note-section and note limits of gfxgate.artifacts.budget, per scan by ``budget``)."""
    if hdr.shnum > MAX_SECTIONS or hdr.shentsize != 64:
        raise ArtifactFormatError(f"implausible section table ({hdr.shnum} × {hdr.shentsize})", blob.start)
    if budget is not None:
        budget.charge("section headers", hdr.shnum, blob.start)
    table = blob.exact(hdr.shoff, hdr.shnum * 64, "section header table")
    seen: set[tuple[int, int]] = set()
    count = 0
    for i in range(hdr.shnum):
        _, sh_type, _, _, sh_offset, sh_size, _, _, _, _ = struct.unpack_from("<IIQQQQIIQQ", table, i * 64)
        if sh_type != 7 or (sh_offset, sh_size) in seen:  # SHT_NOTE, each span once
            continue
        seen.add((sh_offset, sh_size))
        if len(seen) > MAX_NOTE_SECTIONS:
            raise ArtifactFormatError(
                f"more than {MAX_NOTE_SECTIONS} note sections (a per-code-object limit)", blob.start + hdr.shoff
            )
        if sh_size > MAX_NOTE_BYTES:
            raise ArtifactFormatError(f"note section of {sh_size} bytes", blob.start + sh_offset)
        data = blob.exact(sh_offset, sh_size, "note section")
        # 4-byte note alignment: the old HSA code objects mark .note align 8 yet pack notes on 4
        # (llvm-readelf-19 fails on them); AMDGPU v3+ notes are 4-aligned too.
        align = 4
        pos = 0
        while pos + 12 <= len(data):
            namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
            name_end = pos + 12 + namesz
            desc_start = name_end + (-namesz % align)
            desc_end = desc_start + descsz
            if desc_end > len(data):
                raise ArtifactFormatError("note runs past its section", blob.start + sh_offset + pos)
            count += 1
            if count > MAX_NOTES:
                raise ArtifactFormatError(
                    f"more than {MAX_NOTES} notes (a per-code-object limit)", blob.start + sh_offset + pos
                )
            if budget is not None and count % 256 == 0:
                budget.charge("notes", 256, blob.start + sh_offset + pos)
            owner = data[pos + 12 : name_end].rstrip(b"\0").decode("latin-1")
            yield owner, ntype, data[desc_start:desc_end], blob.start + sh_offset + pos
            pos = desc_end + (-descsz % align)


def _v2_target(blob: Blob, hdr: ElfHeader, budget=None) -> tuple[str, str | None, str | None]:
    for owner, ntype, desc, _ in _notes(blob, hdr, budget):
        # desc: u16 vendor_name_size, u16 arch_name_size, u32 major, u32 minor, u32 stepping, names
        if owner == "AMD" and ntype == NT_AMD_HSA_ISA_VERSION and len(desc) >= 16:
            return _v2_processor(*struct.unpack_from("<III", desc, 4))
    raise ArtifactFormatError("code object v2 without an NT_AMD_HSA_ISA_VERSION note", blob.start)


# Code object v2 spelled xnack-on parts as their own ISA stepping.
_V2_XNACK_ON = {(9, 0, 1): "gfx900", (9, 0, 3): "gfx902", (9, 0, 5): "gfx904", (9, 0, 7): "gfx906"}


def _v2_processor(major: int, minor: int, stepping: int) -> tuple[str, str | None, str | None]:
    if (major, minor, stepping) in _V2_XNACK_ON:
        proc, on = _V2_XNACK_ON[(major, minor, stepping)], True
    elif major > 99 or minor > 15 or stepping > 15:
        return f"isa {major}.{minor}.{stepping}", None, None
    else:
        proc, on = f"gfx{major}{minor:x}{stepping:x}", False
    table = mach_table()
    xnack = ("+" if on else "-") if proc in table.xnack else None
    sramecc = "-" if proc in table.sramecc else None
    return proc, xnack, sramecc


def kernel_names(blob: Blob, offset: int = 0, budget=None) -> tuple[str, ...]:
    """Kernel names: from the NT_AMDGPU_METADATA note (MessagePack, v3+), or the v2 kernel symbols."""
    import msgpack

    hdr = parse_header(blob, offset)
    image = blob.window(offset, hdr.extent)
    if hdr.osabi == ELFOSABI_AMDGPU_HSA and hdr.abiversion == 0:
        return _v2_kernel_symbols(image, hdr, budget)
    for owner, ntype, desc, off in _notes(image, hdr, budget):
        if owner != "AMDGPU" or ntype != NT_AMDGPU_METADATA:
            continue
        try:
            meta = msgpack.unpackb(
                desc,
                raw=False,
                strict_map_key=False,
                max_bin_len=len(desc),
                max_str_len=len(desc),
                max_array_len=1 << 16,
                max_map_len=1 << 16,
            )
        except Exception as exc:  # noqa: BLE001 - msgpack raises several unrelated types on crafted input
            raise ArtifactFormatError(f"bad msgpack in NT_AMDGPU_METADATA: {type(exc).__name__}", off) from None
        kernels = meta.get("amdhsa.kernels", []) if isinstance(meta, dict) else None
        if not isinstance(kernels, list):
            raise ArtifactFormatError("NT_AMDGPU_METADATA has no amdhsa.kernels list", off)
        names = [k.get(".name") for k in kernels if isinstance(k, dict)]
        return tuple(sorted(str(n) for n in names if n is not None))
    return ()


STT_AMDGPU_HSA_KERNEL = 10
MAX_SYMBOLS = 1 << 16


def _v2_kernel_symbols(blob: Blob, hdr: ElfHeader, budget=None) -> tuple[str, ...]:
    """Code object v2 marks kernels with symbol type STT_AMDGPU_HSA_KERNEL in ``.symtab``."""
    if hdr.shnum > MAX_SECTIONS or hdr.shentsize != _SHDR.size:
        raise ArtifactFormatError(f"implausible section table ({hdr.shnum} × {hdr.shentsize})", blob.start)
    if budget is not None:
        budget.charge("section headers", hdr.shnum, blob.start)
    table = blob.exact(hdr.shoff, hdr.shnum * _SHDR.size, "section header table")
    sections = [_SHDR.unpack_from(table, i * _SHDR.size) for i in range(hdr.shnum)]
    names = []
    for _, sh_type, _, _, sym_off, sym_size, link, _, _, entsize in sections:
        if sh_type != 2 or entsize != 24 or link >= len(sections):  # SHT_SYMTAB of Elf64_Sym
            continue
        if sym_size // 24 > MAX_SYMBOLS:
            raise ArtifactFormatError(f"symbol table of {sym_size // 24} entries", blob.start + sym_off)
        symbols = blob.exact(sym_off, sym_size - sym_size % 24, "symbol table")
        str_off, str_size = sections[link][4], sections[link][5]
        if budget is not None:
            budget.charge("string-table bytes", min(str_size, MAX_SHSTRTAB), blob.start + str_off)
        strings = blob.exact(str_off, min(str_size, MAX_SHSTRTAB), "symbol string table")
        for i in range(0, len(symbols), 24):
            st_name, st_info = struct.unpack_from("<IB", symbols, i)
            if st_info & 0xF == STT_AMDGPU_HSA_KERNEL and st_name < len(strings):
                names.append(_name_at(strings, st_name, MAX_NAME).decode("utf-8", "replace").lstrip("&"))
    return tuple(sorted(names))


# -- host ELF files ------------------------------------------------------------------------------------------


class Section(NamedTuple):
    """One entry of an ELF section header table, with its name resolved."""

    name: str
    type: str
    offset: int
    size: int
    flags: int
    addr: int = 0
    link: int = 0

    @property
    def writable(self) -> bool:
        return bool(self.flags & 0x1)

    @property
    def executable(self) -> bool:
        return bool(self.flags & 0x4)

    @property
    def allocated(self) -> bool:
        return bool(self.flags & 0x2)


class HostElf(NamedTuple):
    """A host ELF's machine and section table."""

    machine: str
    sections: tuple[Section, ...]

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


_SHDR = struct.Struct("<IIQQQQIIQQ")
SHT_NAMES = {
    0: "SHT_NULL",
    1: "SHT_PROGBITS",
    2: "SHT_SYMTAB",
    3: "SHT_STRTAB",
    4: "SHT_RELA",
    5: "SHT_HASH",
    6: "SHT_DYNAMIC",
    7: "SHT_NOTE",
    8: "SHT_NOBITS",
    9: "SHT_REL",
    11: "SHT_DYNSYM",
}
MAX_SHSTRTAB = 16 << 20


def _name_at(strings: bytes, offset: int, limit: int) -> bytes:
    """The NUL-terminated name at ``offset``, at most ``limit`` bytes (a table without NUL ends no name)."""
    if offset >= len(strings):
        return b""
    end = strings.find(b"\0", offset, offset + limit)
    return strings[offset : end if end >= 0 else offset + limit]


def host_elf(blob: Blob, budget=None) -> HostElf:
    """The section table of a 64-bit little-endian ELF, read with struct (one read for the table, one for
    the names): this is the hot path of every scan, and pyelftools builds an object per section."""
    hdr = parse_header(blob)
    if hdr.elf_class != 2 or not hdr.little_endian:
        return HostElf(f"e_machine {hdr.machine}", ())
    if hdr.shnum == 0:
        return HostElf(f"e_machine {hdr.machine}", ())
    if hdr.shnum > MAX_SECTIONS or hdr.shentsize != _SHDR.size:
        raise ArtifactFormatError(f"implausible section table ({hdr.shnum} × {hdr.shentsize})", blob.start + 40)
    if budget is not None:
        budget.charge("section headers", hdr.shnum, blob.start + hdr.shoff)
    table = blob.exact(hdr.shoff, hdr.shnum * _SHDR.size, "section header table")
    raw = [_SHDR.unpack_from(table, i * _SHDR.size) for i in range(hdr.shnum)]
    shstrndx = struct.unpack_from("<H", blob.exact(62, 2, "e_shstrndx"))[0]
    names = b""
    if shstrndx < len(raw):
        _, _, _, _, str_off, str_size, _, _, _, _ = raw[shstrndx]
        if str_size > MAX_SHSTRTAB:
            raise ArtifactFormatError(f"section name table of {str_size} bytes", blob.start + str_off)
        if budget is not None:
            budget.charge("string-table bytes", str_size, blob.start + str_off)
        names = blob.read(str_off, str_size)

    sections = []
    for name_off, sh_type, flags, addr, offset, size, link, _, _, _ in raw:
        name = _name_at(names, name_off, MAX_SECTION_NAME).decode("latin-1")
        sections.append(Section(name, SHT_NAMES.get(sh_type, f"0x{sh_type:x}"), offset, size, flags, addr, link))
    return HostElf(f"e_machine {hdr.machine}", tuple(sections))


MAX_DYNAMIC = 1 << 20  # bytes of .dynamic (real libraries: a few KB)


def needed_libraries(blob: Blob, info: HostElf | None = None, budget=None) -> tuple[str, ...]:
    """DT_NEEDED entries: the SHT_DYNAMIC section's Elf64_Dyn records, names from its linked string table.

    Read with struct over the section table already parsed (bounded like it), not pyelftools: pyelftools
    resolves every section name without a length limit, which a name table without NUL turns into
    gigabytes."""
    info = info if info is not None else host_elf(blob, budget)
    dynamic = next((s for s in info.sections if s.type == "SHT_DYNAMIC"), None)
    if dynamic is None or dynamic.size > MAX_DYNAMIC or dynamic.link >= len(info.sections):
        return ()
    strtab = info.sections[dynamic.link]
    if strtab.size > MAX_SHSTRTAB:
        raise ArtifactFormatError(f"dynamic string table of {strtab.size} bytes", blob.start + strtab.offset)
    if budget is not None:
        budget.charge("string-table bytes", strtab.size, blob.start + strtab.offset)
    records = blob.read(dynamic.offset, dynamic.size - dynamic.size % 16)
    strings = blob.read(strtab.offset, strtab.size)
    names = []
    for tag, value in struct.iter_unpack("<qQ", records):
        if tag == 0:  # DT_NULL
            break
        if tag == 1 and value < len(strings):  # DT_NEEDED
            names.append(_name_at(strings, value, MAX_NAME).decode("utf-8", "replace"))
    return tuple(names)
