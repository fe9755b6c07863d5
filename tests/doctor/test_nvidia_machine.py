"""`gfxgate doctor` on NVIDIA machines (issue 38 item 4): captured trees with the driver's version file as the kernel
module writes it, /proc/driver/nvidia/gpus/*/information, and CUDA runner folders holding real fat binaries — Debian's
libggml-cuda.so (CUDA 12.4: sm_86/89 cubins, PTX for 50…90) as cuda_v12, and cuRAND 13's library (CUDA 13: 75 and up)
standing in for a cuda_v13 runner. The notes name the driver, each GPU's compute capability, what each runner's code
does for it, the folder Ollama's exact-match discovery can load, and this driver against the release's window."""

from __future__ import annotations

import os
import shutil

import pytest

from gfxgate.doctor.nvidia_machine import nvidia_notes
from gfxgate.host import nvidia as host_nvidia
from gfxgate.host.rootfs import RootFS
from tests import nvidia_packages as nv
from tests.conftest import require_tool

pytestmark = pytest.mark.slow

# the first line of /proc/driver/nvidia/version as the proprietary module writes it (R575 on Debian 13)
VERSION = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Wed Jun 25 18:40:52 UTC 2025\nGCC version:  gcc version 14.2.0 (Debian 14.2.0-19)\n"
INFO = "Model: \t\t {model}\nIRQ:   \t\t 88\nGPU UUID: \t GPU-5e3f\nVideo BIOS: \t 86.02.23.00.01\nBus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t {bus}\n"


@pytest.fixture(scope="module")
def libraries():
    return nv.debian_ggml_cuda(require_tool("apt-get"), require_tool("dpkg")), nv.curand(nv.CURAND_13)


def machine(tmp_path, libraries, driver: str, models: list[str]):
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(VERSION.format(v=driver))
    for index, model in enumerate(models):
        bus = f"0000:{0x3b + index:02x}:00.0"
        (root / f"proc/driver/nvidia/gpus/{bus}").mkdir(parents=True)
        (root / f"proc/driver/nvidia/gpus/{bus}/information").write_text(INFO.format(model=model, bus=bus))
    for folder, lib in zip(("cuda_v12", "cuda_v13"), libraries):
        (root / "usr/lib/ollama" / folder).mkdir(parents=True)
        # a hard link (a copy across file systems): a captured tree's link out of its root is never followed (issue 41)
        try:
            os.link(lib, root / "usr/lib/ollama" / folder / "libggml-cuda.so")
        except OSError:
            shutil.copyfile(lib, root / "usr/lib/ollama" / folder / "libggml-cuda.so")
    return RootFS(root)


def test_the_driver_the_cards_and_the_runners_are_read_from_the_tree(tmp_path, libraries):
    fs = machine(tmp_path, libraries, "580.95.05", ["Tesla P40"])
    assert host_nvidia.driver(fs) == host_nvidia.NvidiaDriver("580.95.05", 580, VERSION.format(v="580.95.05").splitlines()[0])
    assert host_nvidia.cards(fs) == [host_nvidia.NvidiaCard("Tesla P40", "0000:3b:00.0",
                                                            "/proc/driver/nvidia/gpus/0000:3b:00.0/information")]
    assert [(r.folder, r.libraries) for r in host_nvidia.runners(fs)] == [
        ("cuda_v12", ("usr/lib/ollama/cuda_v12/libggml-cuda.so",)), ("cuda_v13", ("usr/lib/ollama/cuda_v13/libggml-cuda.so",))]
    assert host_nvidia.driver(RootFS(tmp_path / "nowhere")) is None


def test_a_pascal_machine_names_its_runner_and_its_driver_window(tmp_path, libraries):
    notes = nvidia_notes(machine(tmp_path, libraries, "575.64.03", ["Tesla P40"]), [], {"OLLAMA_LLM_LIBRARY": "cuda_v12"})
    text = "\n".join(notes)
    assert "NVIDIA driver 575.64.03 (R575" in text
    assert "Tesla P40 (sm_61, compute capability 6.1) in /usr/lib/ollama/cuda_v12: runs sm_61 only through PTX JIT" in text
    assert "in /usr/lib/ollama/cuda_v13: does not run sm_61 at all" in text
    assert "Tesla P40: Ollama can load cuda_v12 (its code lists 610 exactly" in text
    assert "needs driver 570 or newer" in text and "this machine: R575 is inside the window" in text
    assert "OLLAMA_LLM_LIBRARY=cuda_v12 (the service's environment)" in notes


@pytest.mark.parametrize("driver, verdict", [("550.163.01", "R550 is below the floor 570"),
                                             ("590.44.01", "R590 is past R580, the last branch that supports this GPU")])
def test_a_driver_outside_the_window_is_said(tmp_path, libraries, driver, verdict):
    notes = nvidia_notes(machine(tmp_path, libraries, driver, ["Tesla P40"]), [], {})
    assert any(n.endswith(verdict + ": discovery drops the GPU") or n.endswith(verdict) for n in notes), notes


def test_a_mixed_pascal_and_ampere_machine_names_each_gpus_folder(tmp_path, libraries):
    notes = nvidia_notes(machine(tmp_path, libraries, "580.95.05", ["Tesla P40", "NVIDIA A100-PCIE-40GB"]), [], {})
    assert any(n.startswith("Tesla P40: Ollama can load cuda_v12") for n in notes)
    assert any(n.startswith("NVIDIA A100-PCIE-40GB: Ollama can load cuda_v13") for n in notes)
    assert any("NVIDIA A100-PCIE-40GB: driver window" in n and "R580 is inside the window" in n for n in notes)
