"""Where Ollama, llama.cpp and ROCm are installed, one folder list for every command.

Ollama's install script (scripts/install.sh) puts the binary in /usr/local/bin (or /usr/bin) and its libraries in
``<prefix>/lib/ollama``: runner folders of each era (``rocm`` up to v0.29, ``rocm_v7_2`` from v0.30, ``vulkan``,
``cuda_v11``/``cuda_v12``/``cuda_v13``, ``cpu`` …), each with its ``libggml-*.so`` and, for ROCm, a bundled
``rocblas/library``. Only names and sizes are read here; the GPU code inside is read by the artifacts scanner.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath
from typing import TYPE_CHECKING
import fnmatch

from gfxgate.host.rootfs import RootFS
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord
from gfxgate.artifacts.rocblas import classify

if TYPE_CHECKING:  # annotations only
    from gfxgate.machine import MachineFacts

BIN_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/opt/ollama/bin")
LIB_DIRS = ("/usr/local/lib/ollama", "/usr/lib/ollama", "/opt/ollama/lib/ollama")
LLAMA_LIB_GLOBS = (
    "usr/lib/*/ggml/backends0/libggml-*.so",
    "usr/local/lib/libggml-*.so",
    "usr/lib/libggml-*.so",
    "usr/lib/*/libggml-*.so*",
)
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
    system_rocblas: tuple[str, ...] = ()  # rocBLAS library folders outside Ollama's (/opt/rocm, Debian's multiarch)

    def gpu_code_files(self) -> list[str]:
        """The files whose GPU code the artifacts scanner reads: every ROCm/HIP ggml library and rocBLAS folder."""
        out = []
        for install in self.ollama:
            for runner in install.runners:
                # a Windows runner's ggml-hip.dll is PE, which the artifacts reader does not read: not scanned
                out += [
                    f"{runner.path}/{lib}"
                    for lib in runner.libraries
                    if ("hip" in lib or "rocm" in lib) and not lib.endswith(".dll")
                ]
                if runner.rocblas:
                    out.append(runner.rocblas)
        out += [p for p in self.ggml_backends if "hip" in p.rsplit("/", 1)[-1]]
        if not any(r.rocblas for i in self.ollama for r in i.runners):
            out += list(self.system_rocblas)  # Arch's ollama-rocm and Debian's libggml-hip load the system rocBLAS
        return out


def _kind(name: str) -> str:
    for prefix in ("rocm", "vulkan", "cuda", "cpu"):
        if name.startswith(prefix):
            return prefix
    return "other"


def _rocblas(fs: RootFS, folder: str) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
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
        libs = tuple(
            e
            for e in entries
            if (e.startswith("libggml") and ".so" in e) or (e.startswith("ggml-") and e.endswith(".dll"))
        )  # the Windows runners' ggml-hip.dll
        rocblas = next(
            (f"{folder}/{sub}" for sub in ("rocblas/library", "library") if fs.is_dir(f"{folder}/{sub}")), None
        )
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


def package_version(fs: RootFS) -> tuple[str | None, str | None]:
    """Arch's package database: ``/var/lib/pacman/local/ollama-<ver>-<rel>/desc`` (``%VERSION%`` then the value)."""
    for desc in fs.glob("var/lib/pacman/local/ollama-[0-9]*/desc"):
        lines = (fs.read_text(desc) or "").splitlines()
        for number, line in enumerate(lines[:-1], 1):
            if line.strip() == "%VERSION%":
                match = re.match(r"(?:[0-9]+:)?([0-9]+\.[0-9]+\.[0-9]+)", lines[number].strip())
                if match:
                    return match.group(1), f"{desc}:{number + 1}: {lines[number].strip()[:40]}"
    return None, None


def _run_version(binary: str) -> str | None:
    # The smallest bounded call until gfxgate/host/proc.py (run_bounded) lands: argv list, no shell, 10 s.
    import subprocess

    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            timeout=10,
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin", "OLLAMA_HOST": os.environ.get("OLLAMA_HOST", "127.0.0.1:11434")},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return (done.stdout + done.stderr).decode("utf-8", "replace")[:4000]


# The Windows installer's layout (OllamaSetup.exe installs per user): %LOCALAPPDATA%\Programs\Ollama holds ollama.exe
# and lib\ollama\<runner>\ (rocm_v7_1: ggml-hip.dll and the HIP SDK's rocblas\library); the server's log is
# %LOCALAPPDATA%\Ollama\server.log. A captured tree keeps them under Users/<name>/AppData/Local (docs/windows.md).
WINDOWS_INSTALL_GLOB = "Users/*/AppData/Local/Programs/Ollama"
WINDOWS_LOG_GLOB = "Users/*/AppData/Local/Ollama/server*.log"


def tree_os(fs: RootFS) -> str:
    """The OS a machine's tree is: "windows" for a captured Windows install (the installer's folder, no /usr or /etc),
    else "linux" (a live machine is the Linux this runs on)."""
    if fs.live:
        return "linux"
    windows = any(
        fs.is_dir(f"{folder}/lib/ollama") or fs.is_file(f"{folder}/ollama.exe")
        for folder in fs.glob(WINDOWS_INSTALL_GLOB)
    )
    return "windows" if windows and not (fs.is_dir("/usr") or fs.is_dir("/etc")) else "linux"


def windows_installs(fs: RootFS) -> Installs:
    """The Ollama installs of a captured Windows tree, each with its runner folders (version: from the logs)."""
    installs = []
    for folder in fs.glob(WINDOWS_INSTALL_GLOB):
        binary = f"{folder}/ollama.exe" if fs.is_file(f"{folder}/ollama.exe") else None
        lib = f"{folder}/lib/ollama" if fs.is_dir(f"{folder}/lib/ollama") else None
        if binary is None and lib is None:
            continue
        installs.append(OllamaInstall(binary, lib, None, None, tuple(runner_folders(fs, lib)) if lib else ()))
    return Installs(tuple(installs), (), (), (), ())


def windows_logs(fs: RootFS) -> list[str]:
    """The server logs of a captured Windows tree (server.log, and the rotated server-1.log …), as host paths."""
    return [real for path in fs.glob(WINDOWS_LOG_GLOB) if (real := fs.regular_file(path)) is not None]


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
        if version is None:
            version, where = package_version(fs)
        installs.append(OllamaInstall(binary, lib, version, where, tuple(runner_folders(fs, lib)) if lib else ()))
    servers = [f"{d}/llama-server" for d in dirs if fs.is_file(f"{d}/llama-server")]
    backends = sorted({p for g in LLAMA_LIB_GLOBS for p in fs.glob(g) if "/ollama/" not in p})
    rocm = []
    for folder in fs.glob("opt/rocm*"):
        version = (fs.read_text(f"{folder}/.info/version", limit=256) or "").strip()[:64]
        rocm.append((folder, version or "unknown"))
    containers = [f"{d}/{n}" for d in dirs for n in ("docker", "podman") if fs.is_file(f"{d}/{n}")]
    return Installs(
        tuple(installs),
        tuple(servers),
        tuple(backends),
        tuple(rocm),
        tuple(dict.fromkeys(containers)),
        tuple(system_rocblas(fs)),
    )


# where distributions put rocBLAS's Tensile library: ROCm's own prefix (AMD's packages, Arch's extra/rocblas with
# CMAKE_INSTALL_PREFIX=/opt/rocm) and Debian's librocblas4 (/usr/lib/<multiarch>/rocblas/<version>/library)
SYSTEM_ROCBLAS_GLOBS = ("opt/rocm*/lib/rocblas/library", "usr/lib/*/rocblas/*/library", "usr/lib/rocblas/library")


def system_rocblas(fs: RootFS) -> list[str]:
    """rocBLAS library folders outside Ollama's runner folders, that hold Tensile files."""
    out = []
    for pattern in SYSTEM_ROCBLAS_GLOBS:
        for folder in fs.glob(pattern):
            if fs.is_dir(folder) and any(e.startswith("TensileLibrary") for e in fs.listdir(folder)):
                out.append(folder)
    return list(dict.fromkeys(out))


def rocblas_lazy_targets(fs: RootFS, folder: str) -> tuple[str, ...]:
    """The targets with a ``TensileLibrary_lazy_<gfx>.dat`` in a rocBLAS library folder (what Ollama's discovery and
    rocBLAS's own loader look for first)."""
    return _rocblas(fs, folder)[1]


# -- layouts: which package or archive brought each backend's runner (rules/installs.yaml) ------------------------
def machine_facts(fs: RootFS) -> MachineFacts:
    """The machine's runner facts for the answer (:class:`gfxgate.machine.MachineFacts`, runs left empty): each
    recognised layout's backends, installed or not, with what installs a missing one. A machine where no layout is
    recognised gives no runner facts (nothing is called missing)."""
    from gfxgate.datafiles import load_yaml
    from gfxgate.machine import MachineFacts, RunnerFact
    from gfxgate.resources import rules_dir

    data = load_yaml(rules_dir() / "installs.yaml", "installs")
    layouts: list[str] = []
    runners: list[RunnerFact] = []
    for layout in data["layouts"]:
        if not any(fs.glob(p.lstrip("/")) for p in layout["recognise"]):
            continue
        if layout["id"] == "docker" and layouts:
            continue  # docker beside a native install: the native runners decide
        if layout["id"] == "official" and "arch" in layouts:
            continue  # Arch's /usr/lib/ollama is not the archive's /usr/local/lib/ollama
        libs = [lib for pattern in layout["lib"] for lib in fs.glob(pattern.lstrip("/")) if fs.is_dir(lib)]
        if not libs and layout["lib"]:
            continue  # no library folder (a release that unpacks its runners at run time, a moved prefix): not judged
        layouts.append(layout["id"])
        for backend, spec in layout["backends"].items():
            found = sorted(
                {f"{lib}/{name}" for lib in libs for glob in spec["runner"] for name in _matching(fs, lib, glob)}
            )
            installed = bool(found) or (layout["id"] == "docker")
            runners.append(
                RunnerFact(
                    backend,
                    layout["id"],
                    installed,
                    tuple(found),
                    spec["package"],
                    tuple(spec["install"]),
                    layout["evidence"],
                )
            )
    distro = os_release(fs)
    driver = next((data.get("vulkan_drivers", {})[d] for d in distro if d in data.get("vulkan_drivers", {})), None)
    pin = data.get("pin", {})
    before = next((pin.get("before", {})[lay] for lay in layouts if lay in pin.get("before", {})), None)
    if before is not None:
        packages = [
            r.package for r in runners if r.installed and r.layout in layouts and r.package.startswith("ollama")
        ]
        before = (
            before.replace("{packages}", " ".join(sorted(set(packages), key=lambda p: (p == "ollama", p))))
            if packages
            else None
        )
    return MachineFacts(tuple(layouts), tuple(runners), (), distro, driver, pin.get("install"), before)


def os_release(fs: RootFS) -> tuple[str, ...]:
    """``ID`` then the ``ID_LIKE`` words of /etc/os-release (else /usr/lib/os-release), lower case."""
    text = fs.read_text("/etc/os-release") or fs.read_text("/usr/lib/os-release") or ""
    values = {}
    for line in text.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            values[key.strip()] = value.strip().strip("\"'").lower()
    return tuple(w for w in dict.fromkeys([values.get("ID", ""), *values.get("ID_LIKE", "").split()]) if w)


def _matching(fs: RootFS, lib: str, pattern: str) -> list[str]:
    """Entries of ``lib`` matching ``pattern`` (fnmatch); a folder counts only when it is not empty."""
    out = []
    for entry in fs.listdir(lib):
        if fnmatch.fnmatchcase(entry, pattern) and (not fs.is_dir(f"{lib}/{entry}") or fs.listdir(f"{lib}/{entry}")):
            out.append(entry)
    return out


# and the multiarch library folder; /opt/rocm/.kpack: TheRock's kpack archives beside lib/ (docs/kpack.md), where
# the host libraries' .rocm_kpack_ref markers point (``../.kpack/<group>-<family>.kpack``)
GPU_CODE_DIRS = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/opt/rocm/lib", "/opt/rocm/.kpack")


def gpu_code_dirs() -> list[Path]:
    """Where installed GPU code is searched by default (`gfxgate artifacts` without a PATH, `scan --installed
    default`): Ollama's folders, ROCm's, and the multiarch library folder — those that exist on this machine."""
    import sysconfig

    dirs = list(GPU_CODE_DIRS)
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(f"/usr/lib/{multiarch}")
    return [Path(d) for d in dirs if Path(d).is_dir()]
