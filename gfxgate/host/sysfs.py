"""GPUs from sysfs, no ROCm needed: KFD topology nodes, DRM cards (PCI vendor/device/revision, driver, VRAM/GTT),
NVIDIA's /proc/driver/nvidia, the amdgpu module; marketing names from libdrm's amdgpu.ids under the same root.

Kernel sources of the files: KFD ``drivers/gpu/drm/amd/amdkfd/kfd_topology.c`` (``properties``: one ``name value``
per line), amdgpu ``amdgpu_device.c`` / ``amdgpu_ttm.c`` (``mem_info_vram_total``, ``mem_info_gtt_total`` in bytes).
"""

from __future__ import annotations

import re

from gfxgate.host.rootfs import RootFS
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord
from gfxgate.targets import AMDGPU_IDS, catalog, read_amdgpu_ids

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
AMD, NVIDIA = 0x1002, 0x10DE
_DECIMAL = re.compile(r"-?[0-9]{1,20}")
_HEX = re.compile(r"(?:0[xX])?[0-9a-fA-F]{1,16}")


@dataclass(frozen=True)
class Gpu(JsonRecord):
    vendor: str  # "amd" | "nvidia" | "other"
    pci: str  # "1002:687f:c3"
    name: str  # marketing name
    name_source: str  # "amdgpu.ids", "gfxgate targets", "nvidia driver", "unknown"
    target: str | None = None  # gfx900 (from KFD gfx_target_version)
    integrated: bool | None = None
    vram_bytes: int | None = None
    gtt_bytes: int | None = None
    render_node: str | None = None  # /dev/dri/renderD128
    kfd_node: str | None = None  # the properties file the target comes from
    driver: str | None = None
    compute_units: int | None = None


def parse_properties(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.strip().partition(" ")
        if _DECIMAL.fullmatch(value.strip()):  # the kernel prints %u/%llu: ASCII digits, at most 20
            out[name] = int(value)
    return out


def gfx_name(version: int) -> str | None:
    """KFD's gfx_target_version (major*10000 + minor*100 + stepping) as an LLVM processor: 90012 -> gfx90c."""
    if version <= 0:
        return None
    major, minor, stepping = version // 10000, (version // 100) % 100, version % 100
    if minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def _hex(fs: RootFS, path: str) -> int | None:
    text = (fs.read_text(path, limit=64) or "").strip()
    return int(text, 16) if _HEX.fullmatch(text) else None


def _int(fs: RootFS, path: str) -> int | None:
    text = (fs.read_text(path, limit=64) or "").strip()
    return int(text) if _DECIMAL.fullmatch(text) else None


def _driver(fs: RootFS, device: str) -> str | None:
    for line in (fs.read_text(f"{device}/uevent", limit=64 << 10) or "").splitlines():
        if line.startswith("DRIVER="):
            return line.removeprefix("DRIVER=").strip()
    return None


def amdgpu_loaded(fs: RootFS) -> bool:
    # a file, not the folder: a capture holds what was read
    return (fs.read_text("/sys/module/amdgpu/initstate", limit=64) or "").strip() == "live" or "amdgpu " in (
        fs.read_text("/proc/modules") or ""
    )


def marketing_name(fs: RootFS, device: int, revision: int | None) -> str | None:
    for rel in AMDGPU_IDS:
        text = fs.read_text("/" + rel, limit=4 << 20)
        if text:
            ids = read_amdgpu_ids(text)
            return ids.get((device, revision or 0)) or next(
                (n for (d, _), n in sorted(ids.items()) if d == device), None
            )
    return None


def gpus(fs: RootFS) -> list[Gpu]:
    """Every GPU: AMD ones from KFD (target) joined to their DRM card by render minor; other DRM cards by vendor."""
    cat = catalog()
    out: list[Gpu] = []
    for node in fs.glob(KFD_NODES.lstrip("/") + "/*/properties"):
        props = parse_properties(fs.read_text(node, limit=64 << 10) or "")
        target = gfx_name(props.get("gfx_target_version", 0))
        if not props.get("simd_count") or target is None:
            continue  # a CPU node
        minor = props.get("drm_render_minor")
        device = f"/sys/class/drm/renderD{minor}/device" if minor else None
        vendor = (_hex(fs, f"{device}/vendor") if device else None) or props.get("vendor_id") or AMD
        dev_id = (_hex(fs, f"{device}/device") if device else None) or props.get("device_id")
        revision = _hex(fs, f"{device}/revision") if device else None
        name, source = None, "unknown"
        if dev_id is not None:
            name = marketing_name(fs, dev_id, revision)
            source = "amdgpu.ids" if name else source
        proc = cat.by_name.get(target)
        if name is None and proc is not None:
            name, source = (proc.products[0] if proc.products else target), "gfxgate targets"
        vram = _int(fs, f"{device}/mem_info_vram_total") if device else None
        gtt = _int(fs, f"{device}/mem_info_gtt_total") if device else None
        integrated = proc.integrated if proc is not None else None
        out.append(
            Gpu(
                "amd",
                f"{vendor:04x}:{(dev_id or 0):04x}" + (f":{revision:02x}" if revision is not None else ""),
                name or "unknown",
                source,
                target,
                integrated,
                vram,
                gtt if integrated else None,
                f"/dev/dri/renderD{minor}" if minor else None,
                node,
                _driver(fs, device) if device else None,
                props.get("simd_count", 0) // max(props.get("simd_per_cu", 4), 1),
            )
        )
    for card in fs.glob("sys/class/drm/card[0-9]*/device/vendor"):
        device = card.rsplit("/", 1)[0]
        if _hex(fs, card) != NVIDIA:
            continue
        dev_id = _hex(fs, f"{device}/device") or 0
        out.append(
            Gpu(
                "nvidia",
                f"{NVIDIA:04x}:{dev_id:04x}",
                _nvidia_name(fs) or "NVIDIA GPU",
                "nvidia driver" if _nvidia_name(fs) else "unknown",
                driver=_driver(fs, device),
            )
        )
    return out


def _nvidia_name(fs: RootFS) -> str | None:
    for info in fs.glob("proc/driver/nvidia/gpus/*/information"):
        for line in (fs.read_text(info, limit=64 << 10) or "").splitlines():
            if line.startswith("Model:"):
                return line.removeprefix("Model:").strip()[:200]
    return None
