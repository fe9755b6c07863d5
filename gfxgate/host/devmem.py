"""The memory the machine's GPUs hold right now, from the tools and files that say it: ``nvidia-smi``, ``rocm-smi``
and amdgpu's sysfs (``mem_info_vram_used``). Each source that is absent is skipped; one that fails becomes a note.

The sweep samples it while a cell's server holds its model (after the answer, before the server stops), beside the
server's own buffer lines: the tools see everything on the device (other processes too), the log sees this server's
buffers only.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from gfxgate.host.probes import run_tool

SAMPLE_TIMEOUT_S = 10.0
DRM = Path("/sys/class/drm")
MIB = 1 << 20


def device_memory(drm: Path = DRM) -> dict[str, Any]:
    """``{"devices": [{"source", "device", "used_mib", "total_mib"}, …], "notes": [...]}``."""
    devices: list[dict[str, Any]] = []
    notes: list[str] = []
    if shutil.which("nvidia-smi"):
        _nvidia(devices, notes)
    if shutil.which("rocm-smi"):
        _rocm(devices, notes)
    _sysfs(drm, devices, notes)
    if not devices and not notes:
        notes.append("no nvidia-smi, no rocm-smi, no amdgpu mem_info_vram_used in sysfs")
    return {"devices": devices, "notes": notes}


def _nvidia(devices: list[dict[str, Any]], notes: list[str]) -> None:
    rc, out, problem = run_tool(
        ("nvidia-smi", "--query-gpu=index,name,memory.used,memory.total", "--format=csv,noheader,nounits"),
        SAMPLE_TIMEOUT_S,
    )
    if problem or rc is None:
        notes.append(problem or "nvidia-smi did not answer")
        return
    for line in out.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4 and parts[2].isdigit() and parts[3].isdigit():
            devices.append(
                {
                    "source": "nvidia-smi",
                    "device": f"GPU{parts[0]}",
                    "name": parts[1],
                    "used_mib": int(parts[2]),
                    "total_mib": int(parts[3]),
                }
            )


def _rocm(devices: list[dict[str, Any]], notes: list[str]) -> None:
    rc, out, problem = run_tool(("rocm-smi", "--showmeminfo", "vram", "--json"), SAMPLE_TIMEOUT_S)
    if problem or rc is None:
        notes.append(problem or "rocm-smi did not answer")
        return
    try:
        cards = json.loads(out)
    except ValueError:
        notes.append("rocm-smi --json answered no JSON")
        return
    for card, fields in cards.items() if isinstance(cards, dict) else ():
        if not isinstance(fields, dict):
            continue
        used, total = fields.get("VRAM Total Used Memory (B)"), fields.get("VRAM Total Memory (B)")
        if str(used).isdigit() and str(total).isdigit():
            devices.append(
                {
                    "source": "rocm-smi",
                    "device": str(card),
                    "used_mib": int(str(used)) // MIB,
                    "total_mib": int(str(total)) // MIB,
                }
            )


def _sysfs(drm: Path, devices: list[dict[str, Any]], notes: list[str]) -> None:
    try:
        cards = sorted(p for p in drm.glob("card[0-9]*") if "-" not in p.name)
    except OSError:
        return
    for card in cards:
        used, total = _number(card / "device" / "mem_info_vram_used"), _number(card / "device" / "mem_info_vram_total")
        if used is not None and total is not None:
            devices.append({"source": "sysfs", "device": card.name, "used_mib": used // MIB, "total_mib": total // MIB})


def _number(path: Path) -> int | None:
    try:
        with open(path, "rb") as handle:
            text = handle.read(64).strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
