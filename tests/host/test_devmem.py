"""host/devmem.py: amdgpu's sysfs VRAM counters read from a folder laid out as /sys/class/drm (cards, connectors,
garbage), and the note when no source is there."""

from __future__ import annotations

import shutil

import pytest

from gfxgate.host.devmem import device_memory


@pytest.fixture
def no_tools(monkeypatch):
    real = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: None if name in ("nvidia-smi", "rocm-smi") else real(name, *a, **k)
    )


def test_amdgpu_sysfs_counters(tmp_path, no_tools):
    for card, used, total in (("card0", str(512 << 20), str(8 << 30)), ("card1", "garbage", "1")):
        device = tmp_path / card / "device"
        device.mkdir(parents=True)
        (device / "mem_info_vram_used").write_text(used + "\n")
        (device / "mem_info_vram_total").write_text(total + "\n")
    (tmp_path / "card0-DP-1").mkdir()  # a connector, not a card
    assert device_memory(tmp_path) == {
        "devices": [{"source": "sysfs", "device": "card0", "used_mib": 512, "total_mib": 8192}],
        "notes": [],
    }


def test_no_source_is_a_note(tmp_path, no_tools):
    assert device_memory(tmp_path) == {
        "devices": [],
        "notes": ["no nvidia-smi, no rocm-smi, no amdgpu mem_info_vram_used in sysfs"],
    }
