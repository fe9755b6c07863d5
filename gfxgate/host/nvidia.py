"""An NVIDIA machine as files: the kernel driver's version, each GPU's model and bus, and the CUDA runner folders of an
Ollama install (``cuda_v12``, ``cuda_v13``, ``cuda_jetpack6``) with their ``libggml-cuda.so``.

Read through :class:`~gfxgate.host.rootfs.RootFS`, so a captured tree (``--root``) and a live machine are the same
input. ``/proc/driver/nvidia/version`` is written by the kernel module: ``NVRM version: NVIDIA UNIX x86_64 Kernel
Module  580.95.05  Tue Sep 23 …`` (the open modules say ``NVIDIA UNIX Open Kernel Module for x86_64  580.95.05 …``);
``/proc/driver/nvidia/gpus/<bus>/information`` has ``Model:`` and ``Bus Location:`` lines.
"""

from __future__ import annotations

import re
from typing import NamedTuple
import shutil

from gfxgate.host.rootfs import RootFS
from gfxgate.host.probes import run_tool

VERSION_FILE = "proc/driver/nvidia/version"
_VERSION = re.compile(r"Kernel Module(?: for [A-Za-z0-9_]+)?\s+(?P<version>[0-9]{3,4}(?:\.[0-9]+){1,2})\b")
RUNNER_DIR = re.compile(r"^cuda_(?:v[0-9]+|jetpack[0-9]+)$")
LIBRARY = re.compile(r"^libggml-cuda\.so(?:\.[0-9.]+)?$")


class NvidiaDriver(NamedTuple):
    version: str  # 580.95.05
    branch: int  # 580 (NVIDIA's R580)
    line: str  # the version file's line, as evidence


class NvidiaCard(NamedTuple):
    model: str  # "Tesla P40", as the driver names it
    bus: str  # "0000:3b:00.0"
    path: str  # the information file
    uuid: str | None = None  # "GPU-5e3f…" (``GPU UUID:``; CUDA_VISIBLE_DEVICES may name it)


class CudaRunner(NamedTuple):
    folder: str  # "cuda_v12"
    path: str  # /usr/lib/ollama/cuda_v12 (as the root names it)
    libraries: tuple[str, ...]  # its libggml-cuda.so files


def driver(fs: RootFS) -> NvidiaDriver | None:
    """The loaded kernel driver's version, or None without the NVIDIA module (or without a version line)."""
    text = fs.read_text(VERSION_FILE, limit=4096) or ""
    for line in text.splitlines():
        match = _VERSION.search(line)
        if match:
            version = match["version"]
            return NvidiaDriver(version, int(version.split(".")[0]), line.strip())
    return None


def cards(fs: RootFS) -> list[NvidiaCard]:
    out = []
    for info in sorted(fs.glob("proc/driver/nvidia/gpus/*/information")):
        fields = {}
        for line in (fs.read_text(info, limit=16384) or "").splitlines():
            key, _, value = line.partition(":")
            fields[key.strip()] = value.strip()
        if fields.get("Model"):
            out.append(
                NvidiaCard(
                    fields["Model"],
                    fields.get("Bus Location", info.split("/")[-2]),
                    info,
                    fields.get("GPU UUID") or None,
                )
            )
    return out


_PCI_HEX = re.compile(r"^(?:0x)?([0-9a-fA-F]{4})$")
PCI_IDS = ("usr/share/misc/pci.ids", "usr/share/hwdata/pci.ids")  # pciutils' / hwdata's list of PCI ids


def pci_device(fs: RootFS, bus: str) -> str | None:
    """``10de:1b38``: the vendor and device id of the PCI function at ``bus`` (``/sys/bus/pci/devices/<bus>/``)."""
    folder = f"sys/bus/pci/devices/{bus}"
    if not fs.exists(f"{folder}/device"):  # a tree with the DRM card only: the card whose uevent names the bus
        folder = next(
            (
                card.rsplit("/", 1)[0]
                for card in fs.glob("sys/class/drm/card[0-9]*/device/uevent")
                if f"PCI_SLOT_NAME={bus}" in (fs.read_text(card, limit=4096) or "").splitlines()
            ),
            folder,
        )
    ids = []
    for name in ("vendor", "device"):
        match = _PCI_HEX.match((fs.read_text(f"{folder}/{name}", limit=64) or "").strip())
        if match is None:
            return None
        ids.append(match[1].lower())
    return ":".join(ids)


def pci_name(fs: RootFS, pci: str) -> tuple[str, str] | None:
    """(the marketing name, the pci.ids path) of an NVIDIA device id, from the machine's pci.ids: the bracketed name
    of the device line (``<TAB>1b38  GP102GL [Tesla P40]`` -> ``Tesla P40``), else the chip; None without an entry."""
    vendor, _, device = pci.partition(":")
    for path in PCI_IDS:
        text = fs.read_text(path, limit=4 << 20, keep=False)  # 1.3 MB: not kept for --collect
        if not text:
            continue
        inside = False
        for line in text.splitlines():
            if not line or line.startswith("#"):
                continue
            if not line.startswith("\t"):
                inside = line[:4].lower() == vendor
                continue
            if inside and not line.startswith("\t\t") and line[1:5].lower() == device:
                name = line[5:].strip()
                bracket = re.search(r"\[([^]]+)\]", name)
                return (bracket[1] if bracket else name)[:200], "/" + path
        return None
    return None


def runners(fs: RootFS, lib_dirs: tuple[str, ...] = ("usr/lib/ollama", "usr/local/lib/ollama")) -> list[CudaRunner]:
    """The CUDA runner folders of the Ollama installs under ``lib_dirs`` (relative to the root), in name order."""
    out = []
    for base in lib_dirs:
        for name in sorted(fs.listdir(base)):
            folder = f"{base}/{name}"
            if RUNNER_DIR.match(name) and fs.is_dir(folder):
                libraries = tuple(f"{folder}/{f}" for f in sorted(fs.listdir(folder)) if LIBRARY.match(f))
                out.append(CudaRunner(name, "/" + folder, libraries))
    return out


SMI_QUERY = ("nvidia-smi", "--query-gpu=pci.bus_id,name,compute_cap,driver_version", "--format=csv,noheader")


class SmiGpu(NamedTuple):
    bus: str  # 0000:3b:00.0, as /proc/driver/nvidia/gpus names it
    name: str
    compute_cap: str  # "6.1"
    driver: str  # "580.95.05"


def parse_smi(text: str) -> list[SmiGpu]:
    """``nvidia-smi --query-gpu=pci.bus_id,name,compute_cap,driver_version --format=csv,noheader`` lines
    (``00000000:3B:00.0, Tesla P40, 6.1, 580.95.05``): the bus id as the driver's /proc folder names it."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 4 or not re.fullmatch(r"[0-9]{1,2}\.[0-9]", parts[2]):
            continue
        domain, _, rest = parts[0].lower().partition(":")
        bus = f"{int(domain, 16):04x}:{rest}" if re.fullmatch(r"[0-9a-f]{1,8}", domain) and rest else parts[0].lower()
        out.append(SmiGpu(bus, parts[1][:200], parts[2], parts[3]))
    return out


def smi(fs: RootFS) -> tuple[list[SmiGpu], str | None]:
    """What nvidia-smi says of this machine's GPUs (a live root with the tool only; a captured tree runs nothing):
    the GPUs, or none and why."""
    if not fs.live or shutil.which("nvidia-smi") is None:
        return [], None

    rc, out, problem = run_tool(SMI_QUERY)
    if rc != 0:
        return [], problem or f"nvidia-smi exited {rc}"
    return parse_smi(out), None
