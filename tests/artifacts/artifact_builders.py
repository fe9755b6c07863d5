"""Builders of real artifacts for the scanner tests and benchmarks (no fixtures here, so benchmarks can import it).

Code objects and HIP shared objects come from clang-19 (the AMDGPU backend); compressed bundles in the
formats clang-19 cannot write (CCOB v1/v3, zlib) wrap a real bundle per the spec. Debian packages are
downloaded once with ``apt-get download`` and kept under the user cache dir.
"""

from __future__ import annotations

import hashlib
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path


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
    root: Path
    clang: str

    def code_object(self, mcpu: str, *extra: str, name: str | None = None) -> Path:
        out = self.root / (name or f"k-{mcpu.replace(':', '_')}{'-'.join(extra)}.hsaco")
        if not out.exists():
            src = self.root / "k.cl"
            src.write_text(KERNEL_CL)
            run([self.clang, "-x", "cl", "-target", "amdgcn-amd-amdhsa", f"-mcpu={mcpu}", "-nogpulib", "-O2",
                 *extra, str(src), "-o", str(out)], self.root)
        return out

    def hip_so(self, name: str, *extra: str, archs=HIP_ARCHS, units: int = 1) -> Path:
        out = self.root / name
        if not out.exists():
            srcs = []
            for n in range(units):
                src = self.root / f"{name}-{n}.hip"
                src.write_text(KERNEL_HIP % {"n": n})
                srcs.append(str(src))
            run([self.clang, "-x", "hip", *(f"--offload-arch={a}" for a in archs), "-nogpulib", "-nogpuinc",
                 "-no-hip-rt", "-shared", "-fPIC", *extra, *srcs, "-o", str(out)], self.root)
        return out

    def device_bundle(self, name: str, *extra: str, archs=HIP_ARCHS) -> Path:
        out = self.root / name
        if not out.exists():
            src = self.root / f"{name}.hip"
            src.write_text(KERNEL_HIP % {"n": 0})
            run([self.clang, "-x", "hip", *(f"--offload-arch={a}" for a in archs), "--offload-device-only", "-c",
                 "-nogpulib", "-nogpuinc", *extra, str(src), "-o", str(out)], self.root)
        return out



def ccob(bundle: bytes, version: int, method: str) -> bytes:
    """A compressed offload bundle per clang/docs/ClangOffloadBundler.rst (what LLVM's writer emits)."""
    payload = zlib.compress(bundle, 9) if method == "zlib" else __import__("zstandard").ZstdCompressor().compress(bundle)
    digest = int.from_bytes(hashlib.md5(bundle).digest()[:8], "little")
    code = {"zlib": 0, "zstd": 1}[method]
    if version == 1:
        head = b"CCOB" + struct.pack("<HHIQ", 1, code, len(bundle), digest)
    elif version == 2:
        head = b"CCOB" + struct.pack("<HHIIQ", 2, code, 24 + len(payload), len(bundle), digest)
    else:
        head = b"CCOB" + struct.pack("<HHQQQ", 3, code, 32 + len(payload), len(bundle), digest)
    return head + payload


def _debian_cache() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("gfxgate-tests")) / "debian"


def debian_package(name: str, apt: str, dpkg: str) -> Path:
    """``apt-get download`` + ``dpkg -x`` once; the extracted tree is cached across sessions.

    Download and extraction go to private temporary names first and are renamed into place, so two
    test sessions sharing the cache never see half a package.
    """
    import os
    import tempfile

    cache = _debian_cache()
    tree = cache / name
    if (tree / ".complete").exists():
        return tree
    debs = cache / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    found = sorted(debs.glob(f"{name}_*.deb"))
    if not found:
        with tempfile.TemporaryDirectory(dir=debs) as tmp:
            run([apt, "download", name], Path(tmp))
            for deb in Path(tmp).glob("*.deb"):
                os.replace(deb, debs / deb.name)
        found = sorted(debs.glob(f"{name}_*.deb"))
    assert found, f"apt-get download {name} produced no .deb"
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=cache))
    run([dpkg, "-x", str(found[-1]), str(staging)], cache)
    (staging / ".complete").write_text(found[-1].name)
    if tree.exists() and not (tree / ".complete").exists():
        shutil.rmtree(tree, ignore_errors=True)  # a tree left half-written by an older, interrupted run
    try:
        os.rename(staging, tree)
    except OSError:  # another session finished first
        shutil.rmtree(staging, ignore_errors=True)
    return tree


def shared_object(tree: Path, stem: str) -> Path:
    hits = sorted(p for p in tree.rglob(f"{stem}.so*") if p.is_file() and not p.is_symlink())
    assert hits, f"no {stem}.so in {tree}"
    return hits[-1]


