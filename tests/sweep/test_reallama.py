"""The real-llama.cpp fixture itself: sid's llama-server runs here on the CPU set and on lavapipe."""

from __future__ import annotations

import subprocess

import pytest

from tests.reallama import reallama, reallama_vulkan, tiny_llama  # noqa: F401

pytestmark = pytest.mark.slow


def test_sid_llama_server_runs_through_its_own_loader(reallama):
    proc = subprocess.run([*reallama.command("cpu"), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "version:" in (proc.stdout + proc.stderr)


def test_tiny_model_is_a_llama_gguf(reallama, tmp_path):
    import gguf

    reader = gguf.GGUFReader(str(tiny_llama(tmp_path / "m.gguf", n_layer=2)))
    arch = reader.fields["general.architecture"]
    assert bytes(arch.parts[arch.data[0]]).decode() == "llama"
    assert sum(1 for t in reader.tensors if t.name.startswith("blk.1.")) == 9


def test_vulkan_set_sees_lavapipe(reallama_vulkan):
    """ggml-vulkan lists lavapipe (a CPU-type Vulkan device) because the command sets GGML_VK_VISIBLE_DEVICES."""
    proc = subprocess.run(
        [*reallama_vulkan.command("vulkan"), "--list-devices"], capture_output=True, text=True, timeout=300
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "Vulkan0" in text and "llvmpipe" in text, text
