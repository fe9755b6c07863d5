"""Builders of real artifacts for the scanner tests and benchmarks (no fixtures here, so benchmarks can import it).

Code objects and HIP shared objects come from clang-19 (the AMDGPU backend); compressed bundles in the
formats clang-19 cannot write (CCOB v1/v3, zlib) wrap a real bundle per the spec. Debian packages come from
the shared helper ``tests/debian.py`` (``apt-get download`` once, kept under the user cache dir).
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tests.debian import debian_package  # noqa: F401 - re-exported for the conftest and the benchmarks


KERNEL_CL = """
__kernel void add(__global float *a, __global const float *b) { a[0] += b[0]; }
__kernel void scale(__global float *a, float s) { a[1] *= s; }
"""
# A HIP translation unit that needs no HIP headers or runtime: it declares what the launch needs itself.
KERNEL_HIP = """
#define __global__ __attribute__((global))
typedef struct { unsigned x, y, z; } dim3;
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm, void *stream);
extern "C" int __hipPushCallConfiguration(dim3 g, dim3 b, unsigned long shm, void *stream);
extern "C" int __hipPopCallConfiguration(dim3 *g, dim3 *b, unsigned long *shm, void **stream);
__global__ void vadd_%(n)s(float *a, const float *b) { a[0] += b[0]; }
void launch_%(n)s(float *a, const float *b) { dim3 g = {1, 1, 1}; vadd_%(n)s<<<g, g, 0, 0>>>(a, b); }
"""
HIP_ARCHS = ("gfx900", "gfx906:xnack-")


def run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{proc.stderr}")


@dataclass
class Built:
    """Real GPU code compiled on first use into ``root`` and kept there. Safe when several processes share ``root``
    (pytest-xdist workers, tests/conftest.py shared_build): each writes its own sources and renames a finished
    output into place, so a reader never sees half a file and a second compile of the same output is harmless."""

    root: Path
    clang: str

    def _build(self, out: Path, sources: dict[str, str], argv: Callable[[list[str], str], list[str]]) -> Path:
        """Compile ``argv(source paths, output path)`` unless ``out`` exists; the sources are written and the output
        compiled under names with this process's id, and the output renamed into place when finished."""
        if out.exists():
            return out
        import os

        tag = f".{os.getpid()}"
        paths = []
        for name, text in sources.items():
            path = self.root / f"{tag}-{name}"
            path.write_text(text)
            paths.append(str(path))
        partial = out.with_name(f"{tag}-{out.name}")
        run(argv(paths, str(partial)), self.root)
        os.replace(partial, out)
        return out

    def code_object(self, mcpu: str, *extra: str, name: str | None = None) -> Path:
        out = self.root / (name or f"k-{mcpu.replace(':', '_')}{'-'.join(extra)}.hsaco")
        return self._build(
            out,
            {"k.cl": KERNEL_CL},
            lambda srcs, o: [
                self.clang,
                "-x",
                "cl",
                "-target",
                "amdgcn-amd-amdhsa",
                f"-mcpu={mcpu}",
                "-nogpulib",
                "-O2",
                *extra,
                *srcs,
                "-o",
                o,
            ],
        )

    def hip_so(self, name: str, *extra: str, archs=HIP_ARCHS, units: int = 1) -> Path:
        return self._build(
            self.root / name,
            {f"{name}-{n}.hip": KERNEL_HIP % {"n": n} for n in range(units)},
            lambda srcs, o: [
                self.clang,
                "-x",
                "hip",
                *(f"--offload-arch={a}" for a in archs),
                "-nogpulib",
                "-nogpuinc",
                "-no-hip-rt",
                "-shared",
                "-fPIC",
                *extra,
                *srcs,
                "-o",
                o,
            ],
        )

    def device_bundle(self, name: str, *extra: str, archs=HIP_ARCHS) -> Path:
        return self._build(
            self.root / name,
            {f"{name}.hip": KERNEL_HIP % {"n": 0}},
            lambda srcs, o: [
                self.clang,
                "-x",
                "hip",
                *(f"--offload-arch={a}" for a in archs),
                "--offload-device-only",
                "-c",
                "-nogpulib",
                "-nogpuinc",
                *extra,
                *srcs,
                "-o",
                o,
            ],
        )


def ccob(bundle: bytes, version: int, method: str) -> bytes:
    """A compressed offload bundle per clang/docs/ClangOffloadBundler.rst (what LLVM's writer emits)."""
    payload = (
        zlib.compress(bundle, 9) if method == "zlib" else __import__("zstandard").ZstdCompressor().compress(bundle)
    )
    digest = int.from_bytes(hashlib.md5(bundle).digest()[:8], "little")
    return _ccob_framed(payload, len(bundle), digest, version, method)


def _ccob_framed(payload: bytes, size: int, digest: int, version: int, method: str) -> bytes:
    """The CCOB header of ``version`` before ``payload`` (``size``: the bundle's, ``digest``: its truncated MD5)."""
    code = {"zlib": 0, "zstd": 1}[method]
    if version == 1:
        head = b"CCOB" + struct.pack("<HHIQ", 1, code, size, digest)
    elif version == 2:
        head = b"CCOB" + struct.pack("<HHIIQ", 2, code, 24 + len(payload), size, digest)
    else:
        head = b"CCOB" + struct.pack("<HHQQQ", 3, code, 32 + len(payload), size, digest)
    return head + payload


def shared_object(tree: Path, stem: str) -> Path:
    hits = sorted(p for p in tree.rglob(f"{stem}.so*") if p.is_file() and not p.is_symlink())
    assert hits, f"no {stem}.so in {tree}"
    return hits[-1]


# -- hostile variants of real files (issue 13): small files that cost CPU or memory to naive parsers --------

_SHDR = struct.Struct("<IIQQQQIIQQ")


def _with_section_table(image: bytes, table: bytes, count: int, shstrndx: int) -> bytes:
    """``image`` with a new section header table appended (e_shoff/e_shnum/e_shstrndx patched)."""
    shoff = len(image)
    out = bytearray(image + table)
    struct.pack_into("<Q", out, 0x28, shoff)
    struct.pack_into("<HH", out, 0x3C, count & 0xFFFF, shstrndx & 0xFFFF)
    return bytes(out)


def many_note_sections(code_object: bytes, sections: int = 1000, note_bytes: int = 1100 << 10) -> bytes:
    """A real clang code object turned into code object v2 (ABI version 0) whose section table lists
    ``sections`` SHT_NOTE sections that all cover the same ``note_bytes`` of empty 12-byte notes."""
    base = bytearray(code_object)
    base[8] = 0  # EI_ABIVERSION 0 with ELFOSABI_AMDGPU_HSA: code object v2, target read from the notes
    notes_at = len(base)
    body = bytes(base) + bytes(note_bytes)
    table = bytes(64) + b"".join(_SHDR.pack(0, 7, 0, 0, notes_at, note_bytes, 0, 0, 4, 0) for _ in range(sections))
    return _with_section_table(body, table, sections + 1, 0)


def many_sections_no_nul(host_elf: bytes, sections: int = 65535, strtab_bytes: int = 16 << 20) -> bytes:
    """A real host ELF whose new section table has ``sections`` entries and a section-name table of
    ``strtab_bytes`` without a single NUL (every name runs to the end of the table)."""
    strtab_at = len(host_elf)
    body = host_elf + b"A" * strtab_bytes
    rows = [bytes(64)] + [_SHDR.pack(0, 1, 0, 0, strtab_at, 16, 0, 0, 1, 0) for _ in range(sections - 2)]
    rows.append(_SHDR.pack(0, 3, 0, 0, strtab_at, strtab_bytes, 0, 0, 1, 0))
    return _with_section_table(body, b"".join(rows), sections, sections - 1)


def ccob_bomb(code_object: bytes, inflated: int = 256 << 20, version: int = 2) -> bytes:
    """A small zstd CCOB whose only device entry sits ``inflated`` bytes in: reading its header means
    inflating everything before it (a real code object at the end, zeros before).

    The bundle is hashed and compressed a piece at a time, never held whole (that cost a second of CPU and
    256 MB per bomb); it inflates to the same bytes as ``ccob(bundle, version, "zstd")`` of the whole bundle (a
    streamed zstd frame header is 3 bytes longer)."""
    import zstandard

    entry_id = b"hipv4-amdgcn-amd-amdhsa--gfx900"
    head = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", 1)
    offset = inflated - len(code_object)
    head += struct.pack("<QQQ", offset, len(code_object), len(entry_id)) + entry_id
    zeros, chunk = offset - len(head), bytes(1 << 20)
    pieces = [head, *(chunk[: min(len(chunk), zeros - at)] for at in range(0, zeros, len(chunk))), code_object]
    md5 = hashlib.md5()
    compressor = zstandard.ZstdCompressor().compressobj(size=inflated)
    payload = []
    for piece in pieces:
        md5.update(piece)
        payload.append(compressor.compress(piece))
    payload.append(compressor.flush())
    return _ccob_framed(b"".join(payload), inflated, int.from_bytes(md5.digest()[:8], "little"), version, "zstd")
