"""`gfxgate doctor` on NVIDIA machines (issue 38 item 4): captured trees with the driver's files as the kernel module
writes them (/proc/driver/nvidia/version: the proprietary and the open module's first line; gpus/<bus>/information),
sysfs's PCI id files, and CUDA runner folders holding real fat binaries — Debian's libggml-cuda.so (CUDA 12.4: sm_86/89
cubins, PTX for 50/61/70/75/80/90) as cuda_v12, and cuRAND 13's library (CUDA 13: 75 and up) standing in for a
cuda_v13 runner. Each NVIDIA GPU gets a target report like an AMD GPU's: the matrix (the same scan_matrix and decide
as `gfxgate scan`), the driver against the release's window, the folder Ollama picks, and the fix as steps."""

from __future__ import annotations

import os
import shutil

import pytest

from gfxgate.app.doctor import examine
from gfxgate.doctor.examine import DoctorRequest
from gfxgate.doctor.nvidia_machine import overlap_pick
from gfxgate.host import nvidia as host_nvidia
from gfxgate.host.rootfs import RootFS
from gfxgate.model import Status
from tests import nvidia_packages as nv
from tests.conftest import require_tool

# the first line of /proc/driver/nvidia/version as the modules write it: the proprietary module (R575, Debian 13)
# and the open module (R580; "Open Kernel Module for x86_64", then "Release Build (builder)")
PROPRIETARY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Wed Jun 25 18:40:52 UTC 2025\n"
    "GCC version:  gcc version 14.2.0 (Debian 14.2.0-19)\n"
)
OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  (dvs-builder@U16-I3-B03-4-3)  "
    "Thu Jan 23 22:50:36 UTC 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
)
INFO = (
    "Model: \t\t {model}\nIRQ:   \t\t 88\nGPU UUID: \t GPU-{uuid}\nVideo BIOS: \t 86.02.23.00.01\nBus Type: \t PCIe\n"
    "DMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n"
    "GPU Excluded:\t No\n"
)
# nvidia-smi's names (the driver's Model: line) and the PCI device ids pci.ids gives them
P40 = ("Tesla P40", "1b38")
V100 = ("Tesla V100-SXM2-16GB", "1db1")
A100 = ("NVIDIA A100-PCIE-40GB", "20f1")


@pytest.fixture(scope="module")
def libraries():
    return nv.debian_ggml_cuda(require_tool("apt-get"), require_tool("dpkg")), nv.curand(nv.CURAND_13)


def machine(
    tmp_path,
    libraries,
    driver: str,
    cards,
    *,
    module=PROPRIETARY,
    unit_env: dict[str, str] | None = None,
    folders=("cuda_v12", "cuda_v13"),
):
    root = tmp_path / "root"
    (root / "proc/driver/nvidia").mkdir(parents=True)
    (root / "proc/driver/nvidia/version").write_text(module.format(v=driver))
    for index, (model, device) in enumerate(cards):
        bus = f"0000:{0x3B + index:02x}:00.0"
        (root / f"proc/driver/nvidia/gpus/{bus}").mkdir(parents=True)
        (root / f"proc/driver/nvidia/gpus/{bus}/information").write_text(
            INFO.format(model=model, bus=bus, uuid=f"5e3f{index:04x}-0000-0000-0000-000000000000", minor=index)
        )
        pci = root / f"sys/bus/pci/devices/{bus}"
        pci.mkdir(parents=True)
        (pci / "vendor").write_text("0x10de\n")  # sysfs prints the ids as 0x%04x
        (pci / "device").write_text(f"0x{device}\n")
    for folder, lib in zip(folders, libraries):
        (root / "usr/lib/ollama" / folder).mkdir(parents=True)
        # a hard link (a copy across file systems): a captured tree's link out of its root is never followed (issue 41)
        try:
            os.link(lib, root / "usr/lib/ollama" / folder / "libggml-cuda.so")
        except OSError:
            shutil.copyfile(lib, root / "usr/lib/ollama" / folder / "libggml-cuda.so")
    unit = root / "etc/systemd/system/ollama.service"
    unit.parent.mkdir(parents=True)
    unit.write_text(
        "[Unit]\nDescription=Ollama Service\n\n[Service]\nExecStart=/usr/bin/ollama serve\nUser=ollama\n"
        "Group=ollama\n" + "".join(f'Environment="{k}={v}"\n' for k, v in (unit_env or {}).items())
    )
    return root


def doctor(root):
    return examine(DoctorRequest(root=root)).report


def rows(report):
    return {r.layer: r for r in report.rows}


def test_ollama_s_overlap_filter_is_ported_line_for_line():
    # discover/runner.go filterOverlapByLibrary: the newest folder that has every GPU keeps them all
    assert overlap_pick({"cuda_v12": {"a"}, "cuda_v13": {"a"}}) == {"a": "cuda_v13"}
    # Pascal + Ampere: cuda_v13 misses the Pascal GPU, so cuda_v12 keeps both
    assert overlap_pick({"cuda_v12": {"p40", "a100"}, "cuda_v13": {"a100"}}) == {"p40": "cuda_v12", "a100": "cuda_v12"}
    # anyMissing is never reset: once a folder misses a GPU the loop ends at the oldest folder, whatever it has
    assert overlap_pick({"cuda_v11": {"a"}, "cuda_v12": {"a", "b"}, "cuda_v13": {"a"}}) == {
        "a": "cuda_v11",
        "b": "cuda_v12",
    }
    assert overlap_pick({}) == {}


def test_the_driver_the_cards_and_the_runners_are_read_from_the_tree(tmp_path, libraries):
    fs = RootFS(machine(tmp_path, libraries, "580.95.05", [P40], module=OPEN))
    assert host_nvidia.driver(fs) == host_nvidia.NvidiaDriver(
        "580.95.05", 580, OPEN.format(v="580.95.05").splitlines()[0]
    )
    assert host_nvidia.cards(fs) == [
        host_nvidia.NvidiaCard(
            "Tesla P40",
            "0000:3b:00.0",
            "/proc/driver/nvidia/gpus/0000:3b:00.0/information",
            "GPU-5e3f0000-0000-0000-0000-000000000000",
        )
    ]
    assert host_nvidia.pci_device(fs, "0000:3b:00.0") == "10de:1b38"
    assert [(r.folder, r.libraries) for r in host_nvidia.runners(fs)] == [
        ("cuda_v12", ("usr/lib/ollama/cuda_v12/libggml-cuda.so",)),
        ("cuda_v13", ("usr/lib/ollama/cuda_v13/libggml-cuda.so",)),
    ]
    assert host_nvidia.driver(RootFS(tmp_path / "nowhere")) is None


def test_a_pascal_machine_is_a_target_report_with_its_driver_window_and_folder(tmp_path, libraries):
    report = doctor(machine(tmp_path, libraries, "575.64.03", [P40], unit_env={"OLLAMA_LLM_LIBRARY": "cuda_v12"}))
    (p40,) = report.targets
    assert (p40.target, p40.gpu) == ("sm_61", "Tesla P40")
    got = rows(p40)
    # the release's layers, as scan gives them, with the installed code read from the runner folders
    assert {"cuda-build", "cuda-packaging", "cuda-driver", "cuda-discovery", "installed-cuda-code"} <= set(got)
    assert "only through PTX JIT" in got["installed-cuda-code"].summary
    assert got["nvidia-driver"].status == Status.ALLOWED
    assert "driver 575.64.03 (R575) is inside the window R570 … R580" in got["nvidia-driver"].summary
    assert str(got["nvidia-driver"].evidence[0].location) == "/proc/driver/nvidia/version:1"
    assert got["cuda-runner"].status == Status.ALLOWED and "Ollama picks cuda_v12" in got["cuda-runner"].summary
    notes = {e.note for e in got["cuda-runner"].evidence}
    assert (
        "cuda_v13: its code does not list sm_61 exactly: Ollama skips the device (compute capability not in "
        "compiled architectures)" in notes
    )
    assert "OLLAMA_LLM_LIBRARY=cuda_v12" in got["environment"].summary
    assert "Ollama picks cuda_v12" in p40.answer and "R570 … R580" in p40.answer
    cuda = next(b for b in p40.backends if b.backend == "cuda")
    assert cuda.state == "runs"
    assert not any("no GPU in /sys/class/kfd" in n for n in report.notes)


@pytest.mark.parametrize(
    "driver, verdict",
    [
        ("550.163.01", "is below the floor 570: discovery drops the GPU"),
        ("590.44.01", "is past R580, the last branch that supports sm_61"),
    ],
)
def test_a_driver_outside_the_window_is_a_blocked_row_and_the_first_step(tmp_path, libraries, driver, verdict):
    (p40,) = doctor(machine(tmp_path, libraries, driver, [P40])).targets
    row = rows(p40)["nvidia-driver"]
    assert row.status == Status.BLOCKED and verdict in row.summary
    cuda = next(b for b in p40.backends if b.backend == "cuda")
    assert cuda.state == "needs steps"
    first = cuda.steps[0]
    assert first.workaround == "nvidia-driver" and first.origin == "machine"
    assert first.what.startswith("install an NVIDIA driver in R570 … R580")
    assert "nvidia-driver-580" in first.commands[0]
    if driver.startswith("550"):  # below cuda_v12's floor: no folder takes the GPU
        assert rows(p40)["cuda-runner"].status == Status.BLOCKED
    # --fail-on cuda: the CUDA backend does not run as the machine is
    assert examine(DoctorRequest(root=tmp_path / "root", fail_on=("cuda",))).failing == ("cuda",)


def test_a_volta_machine_on_the_open_module(tmp_path, libraries):
    (v100,) = doctor(machine(tmp_path, libraries, "580.95.05", [V100], module=OPEN)).targets
    assert (v100.target, v100.gpu) == ("sm_70", "Tesla V100-SXM2-16GB")
    got = rows(v100)
    assert "driver 580.95.05 (R580) is inside the window R550 … R580" in got["nvidia-driver"].summary
    assert "Ollama picks cuda_v12" in got["cuda-runner"].summary
    assert any("compute capability 7.0 (Volta" in n for n in v100.notes)


def test_a_mixed_pascal_and_ampere_machine_shares_one_folder(tmp_path, libraries):
    report = doctor(machine(tmp_path, libraries, "580.95.05", [P40, A100]))
    p40, a100 = report.targets
    assert (p40.target, a100.target) == ("sm_61", "sm_80")
    # the GPU list: one entry per bus, each with its own name and PCI id (sysfs's DRM cards do not say the name)
    assert [(g.name, g.pci, g.target) for g in report.gpus] == [
        ("Tesla P40", "10de:1b38", "sm_61"),
        ("NVIDIA A100-PCIE-40GB", "10de:20f1", "sm_80"),
    ]
    # cuda_v13 lists sm_80 but not sm_61, so filterOverlapByLibrary keeps cuda_v12 for both
    assert "Ollama picks cuda_v12" in rows(p40)["cuda-runner"].summary
    a100_runner = rows(a100)["cuda-runner"].summary
    assert "Ollama picks cuda_v12" in a100_runner and "several folders list it (cuda_v12, cuda_v13)" in a100_runner
    assert "the same folder as the Tesla P40" in a100_runner
    # the function's line at the release, found by the rule ollama-cuda-overlap-library (never stored in code)
    assert any(
        e.location.path == "discover/runner.go" and "func filterOverlapByLibrary" in e.text
        for e in rows(a100)["cuda-runner"].evidence
        if e.location
    )
    assert "no ceiling" in rows(a100)["cuda-driver"].summary
    assert "(R580) is inside the window R550 and newer" in rows(a100)["nvidia-driver"].summary


def test_a_folder_the_gpu_cannot_use_gives_the_switch(tmp_path, libraries):
    (p40,) = doctor(
        machine(tmp_path, libraries, "580.95.05", [P40], unit_env={"OLLAMA_LLM_LIBRARY": "cuda_v13"})
    ).targets
    assert rows(p40)["cuda-runner"].status == Status.BLOCKED
    cuda = next(b for b in p40.backends if b.backend == "cuda")
    step = next(s for s in cuda.steps if s.workaround == "ollama-llm-library")
    assert step.what.startswith("set OLLAMA_LLM_LIBRARY=cuda_v12")
    assert '[Service]\nEnvironment="OLLAMA_LLM_LIBRARY=cuda_v12"' in step.commands
    # the setting it replaces, where the unit sets it
    assert str(step.evidence[0].location) == "/etc/systemd/system/ollama.service:8"
    assert "set to 'cuda_v13'" in step.evidence[0].note


def test_no_folder_listing_the_gpu_gives_the_build_of_the_release(tmp_path, libraries):
    # only cuRAND 13 (75 and up) as cuda_v13: nothing lists 6.1, so the step is the build with this version's command
    (p40,) = doctor(machine(tmp_path, libraries[1:], "575.64.03", [P40], folders=("cuda_v13",))).targets
    assert rows(p40)["cuda-runner"].status == Status.BLOCKED
    cuda = next(b for b in p40.backends if b.backend == "cuda")
    build = next(s for s in cuda.steps if s.workaround == "build-cuda-architectures")
    assert "cmake -S llama/server --preset llama_cuda_v12_user_arch -DCMAKE_CUDA_ARCHITECTURES=61" in build.commands
    assert any(b.backend == "vulkan" and b.state == "runs" for b in p40.backends)


def test_nvidia_smi_s_answer_is_read_with_the_driver_s_bus_ids(tmp_path):
    # nvidia-smi --query-gpu=pci.bus_id,name,compute_cap,driver_version --format=csv,noheader (its 8-digit domain,
    # upper case) against /proc/driver/nvidia/gpus/0000:3b:00.0
    text = (
        "00000000:3B:00.0, Tesla P40, 6.1, 580.95.05\n00000000:AF:00.0, NVIDIA A100-PCIE-40GB, 8.0, 580.95.05\n"
        "No devices were found\n"
    )
    assert host_nvidia.parse_smi(text) == [
        host_nvidia.SmiGpu("0000:3b:00.0", "Tesla P40", "6.1", "580.95.05"),
        host_nvidia.SmiGpu("0000:af:00.0", "NVIDIA A100-PCIE-40GB", "8.0", "580.95.05"),
    ]
    assert host_nvidia.smi(RootFS(tmp_path)) == ([], None)  # a captured tree runs nothing
