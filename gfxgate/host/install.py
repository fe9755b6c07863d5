"""Where Ollama, llama.cpp and ROCm are installed, one folder list for every command.

Ollama's install script (scripts/install.sh) puts the binary in /usr/local/bin (or /usr/bin) and its libraries in
``<prefix>/lib/ollama``: runner folders of each era (``rocm`` up to v0.29, ``rocm_v7_2`` from v0.30, ``vulkan``,
``cuda_v11``/``cuda_v12``/``cuda_v13``, ``cpu`` …), each with its ``libggml-*.so`` and, for ROCm, a bundled
``rocblas/library``. Only names and sizes are read here; the GPU code inside is read by the artifacts scanner.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from gfxgate.host.rootfs import RootFS
from gfxgate.serial import JsonRecord

BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/opt/ollama/bin")
LIB_DIRS = ("/usr/local/lib/ollama", "/usr/lib/ollama", "/opt/ollama/lib/ollama")
LLAMA_LIB_GLOBS = ("usr/lib/*/ggml/backends0/libggml-*.so", "usr/local/lib/libggml-*.so", "usr/lib/libggml-*.so",
                   "usr/lib/*/libggml-*.so*")
_VERSION = re.compile(r"(?:version is|version)\s+v?([0-9]+\.[0-9]+\.[0-9]+)")


@dataclass(frozen=True)
class RunnerFolder(JsonRecord):
    path: str
    kind: str  # "rocm", "vulkan", "cuda", "cpu", "other"
    libraries: tuple[str, ...]  # libggml-*.so names
    rocblas: str | None = None  # its rocblas/library folder
    tensile: tuple[tuple[str, int], ...] = ()  # (target, files naming it)
    lazy_catalogs: tuple[str, ...] = ()  # targets with TensileLibrary_lazy_<gfx>.dat (what Ollama's discovery checks)


@dataclass(frozen=True)
class OllamaInstall(JsonRecord):
    binary: str | None
    lib: str | None
    version: str | None
    version_from: str | None
    runners: tuple[RunnerFolder, ...] = ()


@dataclass(frozen=True)
class Installs(JsonRecord):
    ollama: tuple[OllamaInstall, ...]
    llama_server: tuple[str, ...]
    ggml_backends: tuple[str, ...]
    rocm: tuple[tuple[str, str], ...]  # (folder, version)
    containers: tuple[str, ...]  # docker / podman binaries

    def gpu_code_files(self) -> list[str]:
        """The files whose GPU code the artifacts scanner reads: every ROCm/HIP ggml library and rocBLAS folder."""
        out = []
        for install in self.ollama:
            for runner in install.runners:
                out += [f"{runner.path}/{lib}" for lib in runner.libraries if "hip" in lib or "rocm" in lib]
                if runner.rocblas:
                    out.append(runner.rocblas)
        out += [p for p in self.ggml_backends if "hip" in p.rsplit("/", 1)[-1]]
        return out


def _kind(name: str) -> str:
    for prefix in ("rocm", "vulkan", "cuda", "cpu"):
        if name.startswith(prefix):
            return prefix
    return "other"


def _rocblas(fs: RootFS, folder: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    from pathlib import PurePath

    from gfxgate.artifacts.rocblas import classify

    counts: dict[str, int] = {}
    lazy: list[str] = []
    for entry in fs.listdir(folder):
        info = classify(PurePath(folder, entry))
        if info is None or info.target is None:
            continue
        proc = info.target.split(":")[0]
        counts[proc] = counts.get(proc, 0) + 1
        if info.kind == "lazy-catalog" and info.library == "tensile":
            lazy.append(proc)
    return tuple(sorted(counts.items())), tuple(sorted(set(lazy)))


def runner_folders(fs: RootFS, lib: str) -> list[RunnerFolder]:
    out = []
    folders = [(lib, "top")] + [(f"{lib}/{e}", e) for e in fs.listdir(lib) if fs.is_dir(f"{lib}/{e}")]
    for folder, name in folders:
        entries = fs.listdir(folder)
        libs = tuple(e for e in entries if e.startswith("libggml") and ".so" in e)
        rocblas = next((f"{folder}/{sub}" for sub in ("rocblas/library", "library") if fs.is_dir(f"{folder}/{sub}")), None)
        if not libs and rocblas is None:
            continue
        tensile, lazy = _rocblas(fs, rocblas) if rocblas else ((), ())
        kind = _kind(name) if name != "top" else ("rocm" if any("hip" in x or "rocm" in x for x in libs) else "other")
        out.append(RunnerFolder(folder, kind, libs, rocblas, tensile, lazy))
    return out


def ollama_version(fs: RootFS, binary: str | None) -> tuple[str | None, str | None]:
    """The version ``ollama --version`` prints; live only (a captured tree's binary is never run): from the capture."""
    text = fs.probe("ollama --version")
    if text is None and fs.live and binary:
        text = _run_version(binary)
        if text is not None:
            fs.probes["ollama --version"] = text
    if text:
        match = _VERSION.search(text)
        if match:
            return match.group(1), f"`ollama --version`: {text.strip().splitlines()[-1][:120]}"
    return None, None


def _run_version(binary: str) -> str | None:
    # The smallest bounded call until gfxgate/host/proc.py (run_bounded) lands: argv list, no shell, 10 s.
    import subprocess

    try:
        done = subprocess.run([binary, "--version"], capture_output=True, timeout=10, stdin=subprocess.DEVNULL,
                              env={"PATH": "/usr/bin:/bin", "OLLAMA_HOST": os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")})
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout + done.stderr).decode("utf-8", "replace")[:4000]


def find(fs: RootFS, *, path_dirs: tuple[str, ...] = ()) -> Installs:
    dirs = tuple(dict.fromkeys((*path_dirs, *BIN_DIRS)))
    binaries: list[str | None] = [f"{d}/ollama" for d in dirs if fs.is_file(f"{d}/ollama")]
    libs = [d for d in LIB_DIRS if fs.is_dir(d)]
    installs = []
    for binary in binaries or [None]:
        prefix = binary.rsplit("/bin/", 1)[0] if binary else None
        lib = f"{prefix}/lib/ollama" if prefix and fs.is_dir(f"{prefix}/lib/ollama") else (libs[0] if libs else None)
        if binary is None and lib is None:
            continue
        version, where = ollama_version(fs, binary)
        installs.append(OllamaInstall(binary, lib, version, where, tuple(runner_folders(fs, lib)) if lib else ()))
    servers = [f"{d}/llama-server" for d in dirs if fs.is_file(f"{d}/llama-server")]
    backends = sorted({p for g in LLAMA_LIB_GLOBS for p in fs.glob(g) if "/ollama/" not in p})
    rocm = []
    for folder in fs.glob("opt/rocm*"):
        version = (fs.read_text(f"{folder}/.info/version", limit=256) or "").strip()[:64]
        rocm.append((folder, version or "unknown"))
    containers = [f"{d}/{n}" for d in dirs for n in ("docker", "podman") if fs.is_file(f"{d}/{n}")]
    return Installs(tuple(installs), tuple(servers), tuple(backends), tuple(rocm), tuple(dict.fromkeys(containers)))


GPU_CODE_DIRS = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/opt/rocm/lib")  # and the multiarch library folder


def gpu_code_dirs() -> list[Path]:
    """Where installed GPU code is searched by default (`gfxgate artifacts` without a PATH, `scan --installed
    default`): Ollama's folders, ROCm's, and the multiarch library folder — those that exist on this machine."""
    import sysconfig

    dirs = list(GPU_CODE_DIRS)
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(f"/usr/lib/{multiarch}")
    return [Path(d) for d in dirs if Path(d).is_dir()]
