"""Whose GPU a log is about, and what that vendor's log may be advised: the one place diagnose decides a vendor.

A log names its devices (ggml's CUDA and HIP device lines, Ollama's ``inference compute``, Vulkan device names, the
backends it loaded); each device has a vendor, and a finding takes the vendor of its message (an AMD-only or
NVIDIA-only line), of its target (``gfx…`` or ``sm_…``), of the only vendor the log names, or of its own words
(``CUDA error`` in a log that names an NVIDIA GPU). An NVIDIA or Intel finding never gets AMD advice: the catalogue's
``vendor_remedies`` replace the remedy, and the workarounds that only act on AMD's stack (:data:`AMD_ONLY`) are left
out (``tests/diagnose/test_vendors.py`` holds every workaround whose setting names ROCm/HIP/HSA to this list).

NVIDIA's numbers stay small here (compute capability ``7.5`` / ``750`` ↔ ``sm_75``); the NVIDIA target model of
rules/targets.yaml (issue 38) owns the rest.
"""

from __future__ import annotations

import re

from gfxgate.lazyre import lazy_compile

AMD, NVIDIA, INTEL = "amd", "nvidia", "intel"
# rules/workarounds.yaml entries that act only on AMD's stack (HSA/ROCr/HIP variables, rocBLAS files, gfx builds,
# OLLAMA_LLM_LIBRARY=rocm): never advice for an NVIDIA or Intel GPU
AMD_ONLY = frozenset(
    {
        "hsa-override-9.0.0",
        "hsa-override-9.0.6",
        "hsa-override-10.3.0",
        "hsa-override-11.0.0",
        "hsa-enable-sdma-0",
        "build-amdgpu-targets",
        "build-rocm-compute-major-min",
        "copy-rocblas-tensile",
        "ggml-hip-no-vmm",
        "ollama-llm-library",
        "rocr-visible-devices",
        "hip-visible-devices",
        "ollama-for-amd-rocmlibs",  # the fork's rocBLAS replacement (docs/forks.md)
        "build-amdgpu-targets-windows",
        "copy-rocblas-tensile-windows",  # the Windows release's (docs/windows.md)
    }
)
# rules/workarounds.yaml entries that act only on NVIDIA's stack: never advice for an AMD or Intel GPU
NVIDIA_ONLY = frozenset({"build-cuda-architectures"})
# words of a remedy that only make sense for an NVIDIA GPU (the runner folders, its driver, its device variable)
NVIDIA_WORDS = lazy_compile(
    r"CUDA_VISIBLE_DEVICES|\bcuda_v1\d\b|OLLAMA_LLM_LIBRARY=cuda|NVIDIA driver|nvidia-smi|compute capability|"
    r"CMAKE_CUDA_ARCHITECTURES|libggml-cuda"
)
# words of a remedy that only make sense for an AMD GPU (a remedy without a vendor variant is checked with them)
AMD_WORDS = lazy_compile(r"HSA_|ROCR_|HIP_VISIBLE|\bROCm\b|rocBLAS|Tensile|libggml-hip|AMDGPU_TARGETS|\bgfx[0-9]")

_NVIDIA_NAME = lazy_compile(r"\b(?:NVIDIA|GeForce|Quadro|Tesla|RTX|GTX|TITAN)\b", re.IGNORECASE)
_INTEL_NAME = lazy_compile(r"\b(?:Intel|Iris|UHD Graphics|HD Graphics|Arc)\b|\bANV\b", re.IGNORECASE)
_AMD_NAME = lazy_compile(r"\b(?:AMD|Radeon|RADV|ATI)\b|\bgfx[0-9]", re.IGNORECASE)
_CC = lazy_compile(r"^(\d{1,2})\.(\d)$")


def name_vendor(name: str) -> str | None:
    """The vendor a device name says (``NVIDIA GeForce RTX 4070``, ``Intel(R) UHD Graphics 770``, ``Radeon RX 580``),
    or None (``llvmpipe``, ``Vulkan0``)."""
    if _NVIDIA_NAME.search(name):
        return NVIDIA
    if _INTEL_NAME.search(name):
        return INTEL
    if _AMD_NAME.search(name):
        return AMD
    return None


def backend_vendor(backend: str) -> str | None:
    """CUDA is NVIDIA's, ROCm/HIP AMD's, SYCL/oneAPI Intel's; Vulkan and the CPU are anyone's."""
    key = backend.lower()
    if key.startswith("cuda"):
        return NVIDIA
    if key.startswith(("rocm", "hip")):
        return AMD
    if key.startswith(("sycl", "oneapi", "level-zero")):
        return INTEL
    return None


def target_vendor(target: str | None) -> str | None:
    if not target:
        return None
    if target.startswith("sm_"):
        return NVIDIA
    if target.startswith("gfx"):
        return AMD
    return None


def gpu_vendor(name: str, target: str | None, backend: str) -> str | None:
    return target_vendor(target) or backend_vendor(backend) or name_vendor(name)


def capability_target(compute: str) -> str | None:
    """``sm_75`` for Ollama's ``compute=7.5`` (a CUDA device's compute capability), None for anything else."""
    match = _CC.match(compute)
    return f"sm_{int(match[1])}{int(match[2])}" if match else None


def arch_capability(arch: str) -> str:
    """``5.2`` for a CUDA arch number ``520`` / ``52`` (as ARCHS lists and ggml's error print them)."""
    number = int(arch)
    if number >= 100:
        number //= 10
    return f"{number // 10}.{number % 10}"


def arch_number(target: str) -> int | None:
    """``520`` for ``sm_52`` (ARCHS's unit)."""
    match = re.match(r"^sm_(\d+)(\d)$", target)
    return int(match[1]) * 100 + int(match[2]) * 10 if match else None


def line_vendor(text: str) -> str | None:
    """The vendor a failure line's own words name: ggml's ``CUDA error``/``ROCm error``, a CUDA/HIP kernel."""
    if "ROCm" in text or "HIP " in text or "hip" in text.split(":", 1)[0]:
        return AMD
    if "CUDA" in text or "cuda" in text:
        return NVIDIA
    return None


def finding_vendor(message_vendor: str | None, target: str | None, text: str, vendors: frozenset[str]) -> str | None:
    """Whose GPU a finding is about: its message's vendor, its target's, the log's only vendor, or its own words when
    the log names that vendor (an old HIP build also said ``CUDA error``: the words alone decide nothing)."""
    if message_vendor:
        return message_vendor
    if by_target := target_vendor(target):
        return by_target
    if len(vendors) == 1:
        return next(iter(vendors))
    words = line_vendor(text)
    return words if words in vendors else None


def advice_for(vendor: str | None, vendors: frozenset[str]) -> str | None:
    """The vendor whose advice a finding gets: its own, or, where it is not known, the non-AMD vendor of a log that
    names no AMD GPU (an NVIDIA + Intel laptop gets no HSA override either way)."""
    if vendor:
        return vendor
    if vendors and AMD not in vendors:
        return NVIDIA if NVIDIA in vendors else sorted(vendors)[0]
    return None
