"""Small upstream-shaped repositories, built with GitPython at test time (our own files, not upstream's)."""

from __future__ import annotations

import json
from pathlib import Path

import git

from tests.gitrepos import commit_tree, new_repo  # noqa: F401 - re-exported for the core tests

CMAKE = """cmake_minimum_required(VERSION 3.21)
project(Ollama C CXX)

set(WINDOWS_AMDGPU_TARGETS_EXCLUDE_REGEX "^gfx(908|90a|1200|1201):xnack[+-]$"
    CACHE STRING
    "Regular expression describing AMDGPU_TARGETS not supported on Windows."
)

check_language(HIP)
if(CMAKE_HIP_COMPILER)
    # the default list comes from the HIP package; ollama trims it
    if(NOT AMDGPU_TARGETS)
        find_package(hip REQUIRED)
        list(FILTER AMDGPU_TARGETS INCLUDE REGEX "{regex}")
    endif()

    if(WIN32 AND WINDOWS_AMDGPU_TARGETS_EXCLUDE_REGEX)
        list(FILTER AMDGPU_TARGETS EXCLUDE REGEX ${{WINDOWS_AMDGPU_TARGETS_EXCLUDE_REGEX}})
    endif()
endif()
"""

OLD_REGEX = "^gfx(900|94[012]|101[02]|1030|110[012])$"
NEW_REGEX = "^gfx(94[012]|101[02]|1030|110[012]|120[01])$"


def presets(targets: str) -> str:
    return json.dumps(
        {
            "version": 3,
            "configurePresets": [
                {"name": "Default", "binaryDir": "build"},
                {"name": "ROCm", "inherits": ["Default"], "cacheVariables": {"CMAKE_HIP_PLATFORM": "amd"}},
                {"name": "ROCm 6", "inherits": ["ROCm"], "cacheVariables": {"AMDGPU_TARGETS": targets}},
                {"name": "ROCm 6 child", "inherits": ["ROCm 6"]},
            ],
        },
        indent=2,
    )


HIP_H = """#pragma once
#include <hip/hip_runtime.h>

#define cudaMalloc hipMalloc

#if defined(__gfx900__) || defined(__gfx906__)
#define GCN5
#endif // defined(__gfx900__) || defined(__gfx906__)

#if defined(__gfx803__)
#define GCN4
#endif

#if defined(GCN5) || defined(GCN4)
#define GCN
#endif

#if defined(__gfx90a__)
#define CDNA2
#endif

#if defined(CDNA2)
#define CDNA
#endif

#if defined(__gfx1030__) || defined(__gfx1031__)
#define RDNA2
#endif

#if defined(__GFX11__)
#define RDNA3
#endif
"""

COMMON_CUH = """#pragma once
#include "vendors/hip.h"

static __device__ __forceinline__ int ggml_cuda_dp4a(const int a, const int b, int c) {
#if defined(GGML_USE_HIP)
#if defined(CDNA) || defined(RDNA2) || defined(__gfx906__)
    c = __builtin_amdgcn_sdot4(a, b, c, false);
#elif defined(RDNA3)
    c = __builtin_amdgcn_sudot4( true, a, true, b, c, false);
#elif defined(__gfx900__)
    asm("v_mul_i32_i24 %0, %1, %2" : "+v"(c) : "v"(a), "v"(b));
#else
    const int8x4_t va = reinterpret_cast<const int8x4_t&>(a);
    c += va[0];
#endif
    return c;
#else
    return __dp4a(a, b, c);
#endif // defined(GGML_USE_HIP)
}
"""

AMD_COMMON_GO = """package discover

import (
	"path/filepath"
	"strings"
)

func GetSupportedGFX(libDir string) ([]string, error) {
	var ret []string
	files, err := filepath.Glob(filepath.Join(libDir, "rocblas", "library", "TensileLibrary_lazy_gfx*.dat"))
	if err != nil {
		return nil, err
	}
	for _, file := range files {
		ret = append(ret, strings.TrimSuffix(filepath.Base(file), ".dat"))
	}
	return ret, nil
}

func check(gfx string, supported []string) string {
	return fmt.Sprintf("amdgpu is not supported (supported types:%s)", supported)
}
"""

DEVICE_GO = """package ml

// AddInitValidation sets the variables that make the runner initialise devices deeply.
func (d DeviceInfo) AddInitValidation(env map[string]string) {
	env["GGML_CUDA_INIT"] = "1" // force deep initialization to trigger crash on unsupported GPUs
}
"""

DOCKERFILE = """FROM base AS rocm-6
RUN cmake --preset 'ROCm 6' && cmake --build --preset 'ROCm 6'
RUN rm -f dist/lib/ollama/rocm/rocblas/library/*gfx90[06]*
"""

MATRIX_RST = """Compatibility matrix
====================

.. csv-table::
      :header: "ROCm Version", "{v1}", "6.2.0"
      :stub-columns: 1

      :doc:`Architecture <x>`,CDNA3,CDNA3
      ,RDNA2,RDNA2
      ,.. _gpu-support-compatibility-matrix:,,
      :doc:`GPU / LLVM target <rocm-install-on-linux:reference/system-requirements>`,gfx1100,gfx1100
      ,gfx1030,gfx1030
      ,gfx942,gfx942 [#mi300_620]_
      ,gfx90a,gfx90a
      ,,
      FRAMEWORK SUPPORT,.. _framework-support-compatibility-matrix:,
"""

SUPPORT_MD = """# GPU and OS support (Linux)

| Product Name | Architecture | [LLVM Target](https://www.llvm.org/docs/AMDGPUUsage.html#processors) |Support |
|:------------:|:------------:|:--------------------------------------------------------------------:|:-------:|
| AMD Instinct MI100   | CDNA   | gfx908 | ✅ |
| AMD Instinct MI50   | GCN5.1 | gfx906 | ✅ |
| AMD Instinct MI25   | GCN5.0 | gfx900 | ❌ |

| Name | Architecture |[LLVM Target](https://www.llvm.org/docs/AMDGPUUsage.html#processors) | Support|
|:----:|:------------:|:--------------------------------------------------------------------:|:-------:|
| AMD Radeon VII     | GCN5.1 | gfx906  | ✅ |
"""

SUPPORT_MD_55 = """| GPU | Architecture | SW Level | [LLVM Target](https://www.llvm.org/docs/AMDGPUUsage.html#processors) | Linux | Windows |
|:---:|:---:|:---:|:---:|:---:|:---:|
| AMD Instinct MI50 | Vega | Full | gfx906 | Supported | Unsupported |
| AMD Instinct MI25 | Vega | Full | gfx900 | Unsupported | Unsupported |
"""

LLAMA_H = """struct llama_model_params {
    int32_t n_gpu_layers; // number of layers to store in VRAM
};
"""


GGML = "ml/backend/ggml/ggml/src/ggml-cuda"


def build_ollama(path: Path) -> git.Repo:
    """Tags: v0.12.3 (filter keeps gfx900, rocBLAS allowlist), v0.17.5 (filter drops it, deep-init probe,
    Dockerfile removes gfx90[06] rocBLAS files; lines moved), v0.30.0 (llama.cpp named in LLAMA_CPP_VERSION)."""
    repo = new_repo(path)
    commit_tree(repo, {
        "CMakeLists.txt": CMAKE.format(regex=OLD_REGEX),
        "CMakePresets.json": presets("gfx900;gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx906:xnack-"),
        "discover/amd_common.go": AMD_COMMON_GO,
        "Dockerfile": "FROM base AS rocm-6\nRUN cmake --preset 'ROCm 6'\n",
        f"{GGML}/vendors/hip.h": HIP_H,
        f"{GGML}/common.cuh": COMMON_CUH,
    }, "v0.12.3", tag="v0.12.3")
    commit_tree(repo, {
        "CMakeLists.txt": "# moved a few lines\n\n\n" + CMAKE.format(regex=NEW_REGEX),
        "CMakePresets.json": presets("gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-"),
        "discover/amd_common.go": None,
        "ml/device.go": DEVICE_GO,
        "Dockerfile": DOCKERFILE,
    }, "v0.17.5", tag="v0.17.5")
    commit_tree(repo, {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.21)\nproject(Ollama)\n",
        "CMakePresets.json": presets("gfx1030"),
        "LLAMA_CPP_VERSION": "b1234\n",
        f"{GGML}/vendors/hip.h": None,
        f"{GGML}/common.cuh": None,
    }, "v0.30.0", tag="v0.30.0")
    return repo


def build_llama_cpp(path: Path) -> git.Repo:
    repo = new_repo(path)
    commit_tree(repo, {
        "include/llama.h": LLAMA_H,
        "ggml/src/ggml-cuda/vendors/hip.h": HIP_H.replace("#if defined(__gfx900__) || defined(__gfx906__)", "#if defined(__gfx906__)"),
        "ggml/src/ggml-cuda/common.cuh": COMMON_CUH,
    }, "b1234", tag="b1234")
    return repo


def build_rocm_docs(path: Path) -> git.Repo:
    """rocm-6.1.1 labels the row "GFX Card" and has no column for its own version; rocm-6.3.3 as today."""
    repo = new_repo(path)
    commit_tree(repo, {"docs/release/gpu_os_support.md": SUPPORT_MD_55}, "docs 5.5", tag="rocm-5.5.1")
    commit_tree(repo, {"docs/release/gpu_os_support.md": SUPPORT_MD}, "docs 5.7", tag="rocm-5.7.1")
    old = MATRIX_RST.format(v1="6.1.0").replace("GPU / LLVM target", "GFX Card").replace("gfx942 [#mi300_620]_", "gfx942 [#]_")
    commit_tree(repo, {"docs/release/gpu_os_support.md": None, "docs/compatibility/compatibility-matrix.rst": old}, "docs 6.1",
                tag="rocm-6.1.1")
    commit_tree(repo, {"docs/compatibility/compatibility-matrix.rst": MATRIX_RST.format(v1="6.3.3")}, "docs", tag="rocm-6.3.3")
    return repo


def build_fork(path: Path) -> git.Repo:
    """An ollama fork (in the style of ollama-for-amd) that keeps gfx900 in filter and presets."""
    repo = new_repo(path)
    commit_tree(repo, {
        "CMakeLists.txt": CMAKE.format(regex="^gfx(803|900|906|94[012]|101[02]|1030|110[012]|120[01])$"),
        "CMakePresets.json": presets("gfx803;gfx900;gfx906;gfx1030;gfx1100"),
        "ml/device.go": DEVICE_GO,
        "Dockerfile": "FROM base AS rocm-6\n",
        f"{GGML}/vendors/hip.h": HIP_H,
        f"{GGML}/common.cuh": COMMON_CUH,
    }, "fork release", tag="v0.17.5")
    return repo
