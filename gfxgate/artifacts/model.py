"""What the artifact scanner found, as frozen dataclasses (pure data: renderers and verdicts read it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any
import re

from gfxgate.artifacts.rocblas import LibraryFile
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, document, json_dataclass, json_field

# File kinds, decided by content (first bytes, ELF machine, sections), never by the name alone.
CODE_OBJECT = "code-object"  # a standalone AMDGPU ELF (.hsaco, .co, Kernels.so-…)
BUNDLE = "offload-bundle"  # a file that is an uncompressed clang offload bundle
COMPRESSED_BUNDLE = "compressed-bundle"  # a file that is a CCOB blob
HIP_HOST = "hip-host-elf"  # a host ELF with a .hip_fatbin section
CUDA_HOST = "cuda-host-elf"  # a host ELF with a .nv_fatbin section (libggml-cuda.so, libcublas.so)
FATBIN = "nv-fatbin"  # a file that is an NVIDIA fat binary container (.fatbin)
HOST_WITH_IMAGES = "host-elf-with-images"  # a host ELF carrying raw AMDGPU ELF images (libhsa-runtime64)
HOST = "host-elf"  # any other ELF
KPACK = "kpack-archive"  # a ROCm kpack archive (.kpack): code objects listed by a msgpack TOC
KPACK_HOST = "hip-host-kpack"  # a host ELF whose device code lives in kpack archives (HIPK wrappers, .rocm_kpack_ref)
OTHER = "other"  # not an ELF nor a bundle (e.g. a Tensile .dat catalog)
SKIPPED = "skipped"  # not scanned; ``skipped`` says why

# Containers a code object was found in.
IN_FILE, IN_BUNDLE, IN_COMPRESSED, EMBEDDED = "file", "bundle", "compressed-bundle", "embedded"
IN_KPACK = "kpack"  # in a kpack archive; ``entry_id`` is the library the TOC files it under


def target_key(target: str) -> tuple:
    """Sort target ids by processor generation (gfx803 < gfx900 < gfx90a < gfx1030), generics last."""
    match = re.match(r"gfx([0-9]{1,2})([0-9a-f]{2})(.*)$", target)
    if match:
        return (0, int(match[1]), int(match[2], 16), match[3])
    return (1, 0, 0, target)


def _sm_key(arch: str) -> tuple:
    digits = arch.removeprefix("sm_")
    return (0, int(digits), arch) if digits.isdigit() else (1, 0, arch)


@dataclass(frozen=True)
class CodeObject(JsonRecord):
    """One AMDGPU code object: its target as decoded from e_flags, and where it sits in the file."""

    target: str  # canonical target id, e.g. "gfx906:xnack-"; "mach 0x99" when the machine is unknown
    processor: str
    container: str  # IN_FILE, IN_BUNDLE, IN_COMPRESSED or EMBEDDED
    offset: int  # absolute file offset of the ELF; for a compressed bundle, of its CCOB header
    size: int
    code_object_version: int | None = None
    generic_version: int | None = None
    entry_id: str | None = None  # offload-bundle entry id, when in a bundle
    inner_offset: int | None = None  # offset inside the decompressed bundle
    kernels: tuple[str, ...] | None = None  # with --kernels
    confirmed: bool = True  # False: only the bundle entry id names the target (the ELF was unreadable)
    note: str = ""


@dataclass(frozen=True)
class CudaCode(JsonRecord):
    """One entry of an NVIDIA fat binary: a cubin (machine code for one sm_XX) or PTX (compiled by the driver at
    load for that compute capability and newer)."""

    arch: str  # "sm_61" (PTX: the compute_61 it was written for)
    kind: str  # "cubin", "ptx" or "kind N"
    offset: int  # absolute file offset of the entry header
    size: int  # payload bytes as stored
    container: int  # absolute file offset of the container (one per translation unit)
    compression: str | None = None  # "lz4", "zstd"
    version: str = ""  # PTX ISA version of a PTX entry, ELF ABI version of a cubin


@dataclass(frozen=True)
class TargetString(JsonRecord):
    """A target name seen as text in a host binary: weaker evidence than a code object."""

    target: str
    offset: int  # first occurrence
    count: int


@dataclass(frozen=True)
class KpackLibrary(JsonRecord):
    """The architectures a kpack archive's TOC holds for one library (its path relative to the install)."""

    binary: str
    archs: tuple[str, ...]


@dataclass(frozen=True)
class KpackInfo(JsonRecord):
    """kpack facts of one file: an archive's header and TOC, or a host binary's reference to archives."""

    role: str  # "archive" or "reference"
    version: int | None = None  # archive: format version
    group_name: str = ""
    arch_family: str = ""
    gfx_arches: tuple[str, ...] = ()  # archive: what the TOC header says it covers
    compression: str = ""  # archive: "none" or "zstd-per-kernel"
    libraries: tuple[KpackLibrary, ...] = ()  # archive: per library in its TOC
    kernel_name: str | None = None  # reference: the name the archives' TOC files this binary under
    search_paths: tuple[str, ...] = ()  # reference: where the runtime looks for the archives
    hipk_wrappers: int = 0  # reference: .hipFatBinSegment records with the HIPK magic
    hipf_wrappers: int = 0


@dataclass(frozen=True)
class FileError(JsonRecord):
    """A problem met in a file, with its offset when known."""

    message: str
    offset: int | None = None


@json_dataclass(frozen=True)
class FileReport(JsonRecord):
    """What one file holds: its kind, code objects, target names as text, errors, or why it was skipped."""

    path: str
    kind: str
    size: int = 0
    bytes_read: int = json_field(
        default=0,
        after={
            "targets": lambda f: f.target_counts(),
            "kernel_counts": lambda f: f.kernel_counts(),
            "cuda_targets": lambda f: f.cuda_counts(),
        },
    )
    code_objects: tuple[CodeObject, ...] = ()
    strings: tuple[TargetString, ...] = ()
    library: LibraryFile | None = None
    errors: tuple[FileError, ...] = ()
    sha256: str | None = None
    skipped: str | None = None  # reason, when kind is SKIPPED
    kpack: KpackInfo | None = None  # kpack archives and the host binaries that point at them
    cuda_code: tuple[CudaCode, ...] = ()  # NVIDIA fat binary entries (cubin / PTX per sm_XX), in file order

    @property
    def interesting(self) -> bool:
        """Worth listing in a report: GPU code, target names, a library name, an error or a skip."""
        return bool(
            self.code_objects
            or self.cuda_code
            or self.strings
            or self.library
            or self.errors
            or self.skipped
            or self.kpack
            or self.kind not in (HOST, OTHER)
        )

    def target_counts(self) -> dict[str, int]:
        return dict(sorted(Counter(c.target for c in self.code_objects).items(), key=lambda kv: target_key(kv[0])))

    def cuda_counts(self) -> dict[str, dict[str, int]]:
        """sm_XX -> {"cubin": n, "ptx": n} over this file's fat binary entries, by compute capability."""
        out: dict[str, dict[str, int]] = {}
        for c in self.cuda_code:
            row = out.setdefault(c.arch, {})
            row[c.kind] = row.get(c.kind, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: _sm_key(kv[0])))

    def kernel_counts(self) -> dict[str, int]:
        """target → kernels listed in its code objects' metadata (only objects read with --kernels)."""
        out: Counter = Counter()
        for c in self.code_objects:
            if c.kernels is not None:
                out[c.target] += len(c.kernels)
        return dict(sorted(out.items(), key=lambda kv: target_key(kv[0])))


@dataclass(frozen=True)
class ArtifactReport:
    """The scan of a list of paths: one FileReport per file met (sorted by path)."""

    paths: tuple[str, ...]
    files: tuple[FileReport, ...]
    kernels: bool = False
    sha256: bool = False
    notes: tuple[str, ...] = field(default=())

    @property
    def scanned(self) -> list[FileReport]:
        return [f for f in self.files if f.kind != SKIPPED]

    def cuda_counts(self) -> dict[str, dict[str, int]]:
        """sm_XX → {"cubin": n, "ptx": n, "files": n} over every file's NVIDIA fat binary entries."""
        out: dict[str, dict[str, int]] = {}
        for f in self.files:
            for arch, row in f.cuda_counts().items():
                mine = out.setdefault(arch, {"cubin": 0, "ptx": 0, "files": 0})
                mine["files"] += 1
                for kind, n in row.items():
                    mine[kind] = mine.get(kind, 0) + n
        return dict(sorted(out.items(), key=lambda kv: _sm_key(kv[0])))

    def target_counts(self) -> dict[str, dict[str, int]]:
        """target → {"code_objects": n, "files": n, "kernels": n} over every file."""
        out: dict[str, dict[str, int]] = {}
        for f in self.files:
            for target in {c.target for c in f.code_objects}:
                out.setdefault(target, {"code_objects": 0, "files": 0, "kernels": 0})["files"] += 1
            for c in f.code_objects:
                row = out[c.target]
                row["code_objects"] += 1
                row["kernels"] += len(c.kernels or ())
        return dict(sorted(out.items(), key=lambda kv: target_key(kv[0])))

    def kpack_libraries(self) -> dict[str, dict[str, list[str]]]:
        """library → its architectures over every kpack archive scanned, the archives, and the host files whose
        ``.rocm_kpack_ref`` names it (a reference to a library no scanned archive holds is listed with no arches)."""
        out: dict[str, dict[str, set[str]]] = {}

        def row(name: str) -> dict[str, set[str]]:
            return out.setdefault(name, {"archs": set(), "archives": set(), "referenced_by": set()})

        for f in self.files:
            if f.kpack is None:
                continue
            for lib in f.kpack.libraries:
                row(lib.binary)["archs"].update(lib.archs)
                row(lib.binary)["archives"].add(f.path)
            if f.kpack.role == "reference" and f.kpack.kernel_name:
                row(f.kpack.kernel_name)["referenced_by"].add(f.path)
        return {
            name: {
                "archs": sorted(r["archs"], key=target_key),
                "archives": sorted(r["archives"]),
                "referenced_by": sorted(r["referenced_by"]),
            }
            for name, r in sorted(out.items())
        }

    def to_json(self) -> dict[str, Any]:
        kinds = Counter(f.kind for f in self.files)
        return document(
            "artifacts",
            {
                "paths": list(self.paths),
                "options": {"kernels": self.kernels, "sha256": self.sha256},
                "summary": {
                    "files": len(self.files),
                    "by_kind": dict(sorted(kinds.items())),
                    "errors": sum(len(f.errors) for f in self.files),
                    "bytes_read": sum(f.bytes_read for f in self.files),
                    "size": sum(f.size for f in self.files),
                },
                "targets": self.target_counts(),
                "kpack": self.kpack_libraries(),
                "cuda_targets": self.cuda_counts(),
                "files": [f.to_json() for f in self.files if f.interesting],
                "notes": list(self.notes),
            },
        )
