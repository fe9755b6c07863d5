"""Captured machines of issue 37: Arch's split packages, Debian sid's llama.cpp HIP backend, the official archive at
v0.32.15 with a Vega log on the CPU, and a step applier that follows doctor's steps on a copy of a tree.

The layouts follow the packages' own files: Arch's extra/ollama PKGBUILD (``package_ollama`` removes
usr/lib/ollama/rocm*, cuda*, vulkan*; ``package_ollama-rocm`` / ``-vulkan`` copy them back; no rocBLAS bundled, the
system's from extra/rocblas in /opt/rocm), pacman's local database entry (``%NAME%`` / ``%VERSION%`` blocks of
``/var/lib/pacman/local/<name>-<ver>-<rel>/desc``), and the real .deb contents of sid's libggml0-backend-hip and
librocblas4 (tests/debian.py), whose large files are hard-linked (or copied) into the tree, never committed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests.doctor.machines import machine

ARCH_VERSION = "0.32.15"  # the version these trees say pacman installed


def _desc(name: str, version: str) -> str:
    # pacman's local database format (lib/libalpm/be_local.c writes "%NAME%\nname\n\n%VERSION%\nver\n\n…")
    return f"%NAME%\n{name}\n\n%VERSION%\n{version}\n\n%BASE%\nollama\n\n%DESC%\nCreate, run and share large language models (LLMs)\n\n"


def arch(
    root: Path,
    card: str = "vega56",
    *,
    packages=("ollama",),
    built=None,
    rocm_targets=("gfx900", "gfx906", "gfx1030"),
    render_members: str = "ollama",
) -> Path:
    """An Arch machine with ``packages`` of the ollama split set installed (pacman: /usr/bin, /usr/lib/ollama,
    the unit in /usr/lib/systemd/system)."""
    machine(root, card, version=ARCH_VERSION, render_members=render_members)
    (root / "etc/os-release").write_text(
        'NAME="EndeavourOS"\nPRETTY_NAME="EndeavourOS"\nID="endeavouros"\nID_LIKE="arch"\n'
    )
    shutil.rmtree(root / "usr/local")
    unit = (root / "etc/systemd/system/ollama.service").read_text().replace("/usr/local/bin/ollama", "/usr/bin/ollama")
    (root / "etc/systemd/system/ollama.service").unlink()
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    (root / "usr/lib/systemd/system/ollama.service").write_text(unit)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/ollama").write_bytes(b"\x7fELF captured; never run\n")
    lib = root / "usr/lib/ollama"
    lib.mkdir(parents=True)
    for name in ("libggml-base.so", "libggml-cpu-haswell.so", "libggml-cpu-skylakex.so", "libggml-cpu-x64.so"):
        (lib / name).write_bytes(b"")
    manifest = json.loads((root / ".gfxgate-doctor/stat.json").read_text())
    manifest["probes"] = {}  # the version comes from pacman's database
    (root / ".gfxgate-doctor/stat.json").write_text(json.dumps(manifest))
    for package in packages:
        install_arch(root, package, built=built, rocm_targets=rocm_targets)
    return root


def install_arch(root: Path, package: str, *, built=None, rocm_targets=("gfx900", "gfx906", "gfx1030")) -> None:
    """What ``pacman -S package`` adds (the folders its PKGBUILD function copies)."""
    db = root / f"var/lib/pacman/local/{package}-{ARCH_VERSION}-1"
    db.mkdir(parents=True, exist_ok=True)
    (db / "desc").write_text(_desc(package, f"{ARCH_VERSION}-1"))
    lib = root / "usr/lib/ollama"
    if package == "ollama-vulkan":
        (lib / "vulkan").mkdir(exist_ok=True)
        (lib / "vulkan/libggml-vulkan.so").write_bytes(b"")
    elif package == "ollama-rocm":
        (lib / "rocm_v7_2").mkdir(exist_ok=True)
        hip = lib / "rocm_v7_2/libggml-hip.so"
        if built is not None:
            shutil.copy(built.hip_so("libggml-hip-arch.so", archs=rocm_targets), hip)
        else:
            hip.write_bytes(b"")
        install_arch(
            root, "rocblas", built=built, rocm_targets=rocm_targets
        )  # ollama-rocm depends on hipblas → rocblas
    elif package == "rocblas":
        blas = root / "opt/rocm/lib/rocblas/library"
        blas.mkdir(parents=True, exist_ok=True)
        (root / "opt/rocm/.info").mkdir(parents=True, exist_ok=True)
        (root / "opt/rocm/.info/version").write_text("6.4.3\n")
        import msgpack

        for target in rocm_targets:
            (blas / f"TensileLibrary_lazy_{target}.dat").write_bytes(msgpack.packb({"library": {"type": "Hardware"}}))
            if built is not None:
                shutil.copy(built.code_object(target), blas / f"Kernels.so-000-{target}.hsaco")


def link_or_copy(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy(src, dest)


def debian(root: Path, sid_tree: Path, card: str = "vega56") -> Path:
    """A Debian machine with sid's llama.cpp HIP backend: libggml-hip.so and librocblas4's gfx900 files and lazy
    catalogs from the real .deb contents (``sid_tree``: tests.debian.foreign_packages), hard-linked."""
    machine(root, card, version="0", render_members="ollama")
    shutil.rmtree(root / "usr/local")
    (root / "etc/systemd/system/ollama.service").unlink()
    manifest = json.loads((root / ".gfxgate-doctor/stat.json").read_text())
    manifest["probes"] = {}
    (root / ".gfxgate-doctor/stat.json").write_text(json.dumps(manifest))
    hip = "usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so"
    link_or_copy(sid_tree / hip, root / hip)
    (root / "usr/bin").mkdir(parents=True, exist_ok=True)
    (root / "usr/bin/llama-server").write_bytes(b"\x7fELF captured; never run\n")
    (root / "usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-cpu-haswell.so").write_bytes(b"")
    blas = next((sid_tree / "usr/lib/x86_64-linux-gnu/rocblas").glob("*/library"))
    for entry in blas.iterdir():
        if entry.name.startswith("TensileLibrary_lazy_") or re.search(r"_gfx900\.(co|hsaco|dat)$", entry.name):
            link_or_copy(entry, root / blas.relative_to(sid_tree) / entry.name)
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True)
    for package in ("libggml0-backend-hip", "librocblas4"):
        (info / f"{package}:amd64.list").write_text("")
    return root


def follow(root: Path, steps: list[dict], packages: dict) -> list[str]:
    """Apply doctor's steps to the tree at ``root`` as a person would: delete a drop-in line (``sed -i 'Nd'``), add
    what `systemctl edit` asks for, join a group (``usermod -aG``), install a package (``packages[name](root)``).
    Returns the commands it could not follow (a build, a download): the caller says which are expected."""
    skipped = []
    for step in steps:
        if step.get("done"):
            continue
        commands = list(step["commands"])
        i = 0
        while i < len(commands):
            cmd = commands[i]
            saved = re.match(r"# add, in the editor \(saved as (\S+)\):", cmd)
            if saved:
                target = root / saved.group(1).lstrip("/")
                target.parent.mkdir(parents=True, exist_ok=True)
                old = target.read_text() if target.exists() else ""
                target.write_text(old + ("" if old.endswith("\n") or not old else "\n") + commands[i + 1] + "\n")
                i += 2
                continue
            sed = re.fullmatch(r"sudo sed -i '(\d+)d' (\S+)", cmd)
            group = re.fullmatch(r"sudo usermod -aG (\S+) (\S+)", cmd.split(" && ")[0])
            install = re.fullmatch(r"sudo (?:pacman -S|apt install) (.+)", cmd)
            if sed:
                path = root / sed.group(2).lstrip("/")
                lines = path.read_text().splitlines(keepends=True)
                del lines[int(sed.group(1)) - 1]
                path.write_text("".join(lines))
            elif group:
                etc = root / "etc/group"
                text = re.sub(
                    rf"^({re.escape(group.group(1))}:[^:]*:[^:]*:)(.*)$",
                    lambda m: m.group(1) + ",".join(filter(None, [m.group(2), group.group(2)])),
                    etc.read_text(),
                    flags=re.M,
                )
                etc.write_text(text)
            elif install:
                for name in install.group(1).split():
                    if name in packages:
                        packages[name](root)
                    else:
                        skipped.append(f"install {name}")
            elif cmd.startswith(("sudo systemctl", "#")) or cmd.startswith("[Service]"):
                pass
            else:
                skipped.append(cmd)
            i += 1
    return skipped


def doctor_json(exe: str, root: Path, *args: str) -> dict:
    done = exe("doctor", "--root", str(root), "--format", "json", *args, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)
