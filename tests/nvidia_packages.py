"""Real NVIDIA artifacts for the tests, installed by package name and cached (not pytest fixtures, so benchmarks can
import them):

* Debian sid contrib ``libggml0-backend-cuda`` (llama.cpp's CUDA backend, built by Debian with CUDA 12.4: cubins for
  sm_86/89, PTX for 50/61/70/75/80/90), through ``tests/debian.py``'s private apt tree (gpgv-checked by apt);
* PyPI wheels ``nvidia-curand-cu12`` (CUDA 12: sm_50/60/70… cubins) and ``nvidia-curand`` (CUDA 13: 75 and up), via
  ``pip download --no-deps`` of a pinned version, unpacked once;
* NVIDIA's ``cuobjdump`` from the ``nvidia-cuda-cuobjdump`` wheel of the [test] extra (runs without a GPU): the oracle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

CURAND_12 = ("nvidia-curand-cu12", "10.3.10.19")  # CUDA 12.9's cuRAND
CURAND_13 = ("nvidia-curand", "10.4.5.25")  # CUDA 13's cuRAND (no Maxwell/Pascal/Volta cubins)
DEBIAN_CUDA = "libggml0-backend-cuda"


def cache_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("gfxgate-tests"))


def wheel_tree(name: str, version: str) -> Path:
    """``pip download`` the wheel of ``name==version`` (no dependencies) and unpack it once; the tree is cached."""
    tree = cache_root() / "pypi" / f"{name}-{version}"
    if (tree / ".complete").exists():
        return tree
    tree.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=tree.parent) as tmp:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                "-d",
                tmp,
                f"{name}=={version}",
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        assert wheels, f"pip download {name}=={version} produced no wheel"
        staging = Path(tmp) / "tree"
        with zipfile.ZipFile(wheels[0]) as archive:
            archive.extractall(staging)
        (staging / ".complete").write_text(wheels[0].name + "\n")
        if tree.exists():
            shutil.rmtree(tree, ignore_errors=True)
        try:
            os.rename(staging, tree)
        except OSError:  # another session finished first
            pass
    return tree


def curand(which: tuple[str, str]) -> Path:
    hits = sorted(p for p in wheel_tree(*which).rglob("libcurand.so*") if p.is_file())
    assert hits, f"no libcurand.so in {which}"
    return hits[0]


def debian_ggml_cuda(apt: str, dpkg: str) -> Path:
    from tests.debian import foreign_packages

    tree = foreign_packages("sid", [DEBIAN_CUDA], apt, dpkg, ("main", "contrib"))
    hits = sorted(p for p in tree.rglob("libggml-cuda.so*") if p.is_file() and not p.is_symlink())
    assert hits, f"no libggml-cuda.so in {tree}"
    return hits[0]


def cuobjdump() -> Path | None:
    """NVIDIA's cuobjdump as the ``nvidia-cuda-cuobjdump`` wheel installs it next to this interpreter, if it is."""
    import importlib.util

    spec = importlib.util.find_spec("nvidia")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for hit in sorted(Path(folder).glob("*/bin/cuobjdump")):
            if os.access(hit, os.X_OK):
                return hit
    return None


def list_entries(tool: Path, path: Path) -> list[tuple[str, int, str]]:
    """``cuobjdump --list-elf --list-ptx PATH`` as (``ELF``/``PTX``, its number, ``sm_XX``) per line."""
    import re

    done = subprocess.run(
        [str(tool), "--list-elf", "--list-ptx", str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    out = []
    for line in done.stdout.splitlines():
        match = re.match(r"^(ELF|PTX) file\s+([0-9]+): .*\.(sm_[0-9]+[a-z]?)\.(?:cubin|ptx)$", line.strip())
        assert match, f"unexpected cuobjdump line: {line!r}"
        out.append((match[1], int(match[2]), match[3]))
    return out
