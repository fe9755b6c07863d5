"""Small upstream-shaped repositories, built with GitPython at test time (our own files, not upstream's), and the
fixtures that serve them: ``upstream`` (their paths, built once per test run) and ``source_env`` (every pinned source
pointed at them). A folder whose tests use the fixtures imports them in its ``conftest.py`` (``tests/gate``,
``tests/sources``), a module in a folder without one in the module: ``from tests.upstream_fixtures import upstream  #
noqa: F401 - fixture``."""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from tests.conftest import shared_build
from tests.gitrepos import commit_tree, new_repo  # noqa: F401 - re-exported for the tests that build repositories

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


def presets(targets: str, *, vulkan: bool = False) -> str:
    vulkan_presets = [{"name": "Vulkan", "inherits": ["Default"]}] if vulkan else []
    return json.dumps(
        {
            "version": 3,
            "configurePresets": [
                {"name": "Default", "binaryDir": "build"},
                {"name": "ROCm", "inherits": ["Default"], "cacheVariables": {"CMAKE_HIP_PLATFORM": "amd"}},
                {"name": "ROCm 6", "inherits": ["ROCm"], "cacheVariables": {"AMDGPU_TARGETS": targets}},
                {"name": "ROCm 6 child", "inherits": ["ROCm 6"]},
                *vulkan_presets,
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


# -- the v0.30 layout: llama-server presets, cmake/local.cmake, discovery in discover/amd.go + runner.go --------------
def server_presets(targets: str) -> str:
    """llama/server/CMakePresets.json: a Linux ROCm preset with a default list, a *_user_arch one without, Vulkan."""
    return json.dumps(
        {
            "version": 3,
            "configurePresets": [
                {"name": "default", "binaryDir": "build", "hidden": True},
                {
                    "name": "rocm_v7_2_base",
                    "hidden": True,
                    "inherits": ["default"],
                    "cacheVariables": {"GGML_HIP": "ON"},
                },
                {
                    "name": "rocm_v7_2_linux",
                    "inherits": ["rocm_v7_2_base"],
                    "cacheVariables": {"AMDGPU_TARGETS": targets},
                },
                {"name": "rocm_v7_2_user_arch", "inherits": ["rocm_v7_2_base"]},
                {"name": "vulkan", "inherits": ["default"], "cacheVariables": {"GGML_VULKAN": "ON"}},
            ],
        },
        indent=2,
    )


LOCAL_CMAKE = """include(ExternalProject)

function(ollama_rocm_preset backend output)
    ollama_cache_arg_is_set(AMDGPU_TARGETS _has_amdgpu_targets)
    ollama_cache_arg_is_set(CMAKE_HIP_ARCHITECTURES _has_hip_arch)
    set(_preset "${backend}_linux")
    if(_has_amdgpu_targets OR _has_hip_arch)
        set(_preset "${backend}_user_arch")
    endif()
    set(${output} "${_preset}" PARENT_SCOPE)
endfunction()
"""

DEVELOPMENT_MD = """# Development

Narrow a ROCm build to your own GPU:

```shell
cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx1100
```
"""

AMD_GO = """package discover

func rocmGFXTargetOverride(value string) string {
	return "gfx" + value
}

// filterUnsupportedROCmDevices drops devices without TensileLibrary_lazy_<gfx>.dat.
func filterUnsupportedROCmDevices(devices []string, libDirs []string) []string {
	return devices
}
"""

RUNNER_GO = """package discover

var defaultIntegratedROCmGFXTargets = map[string]struct{}{
	"gfx1151": {},
}

func bootstrap(dir string) bool {
	if !envconfig.EnableVulkan(true) && strings.Contains(dir, "vulkan") {
		return false
	}
	return true
}

func filterIntegratedGPUs(devices []Device) []Device {
	for _, device := range devices {
		slog.Info("dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1", "id", device.ID)
	}
	return devices
}
"""

RUNNER_GO_OPT_IN = """package discover

func bootstrap(dir string) bool {
	if !envconfig.EnableVulkan() && strings.Contains(dir, "vulkan") {
		slog.Info("experimental Vulkan support disabled.  To enable, set OLLAMA_VULKAN=1")
		return false
	}
	return true
}
"""

DOCKERFILE_V030 = """ARG ROCMVERSION=7.2.1
FROM rocm/dev-almalinux-8:${ROCMVERSION}-complete AS base
FROM base AS llama-server-rocm_v7_2
RUN cmake -S llama/server --preset rocm_v7_2_linux
RUN rm -f dist/lib/ollama/rocm_v7_2/rocblas/library/*gfx90[06]*
FROM base AS llama-server-vulkan
RUN cmake -S llama/server --preset vulkan
FROM scratch AS amd64
COPY --from=llama-server-vulkan   dist/lib/ollama /lib/ollama/
"""

VULKAN_CPP = """#include "ggml-vulkan.h"

static vk_device_architecture get_device_architecture(const vk::PhysicalDevice& device) {
    if (props.vendorID == VK_VENDOR_ID_AMD) {
        if (!amd_shader_core_properties || !integer_dot_product) {
            return vk_device_architecture::OTHER;
        }
        if (subgroup.maxSubgroupSize == 64 && subgroup.minSubgroupSize == 64) {
            return vk_device_architecture::AMD_GCN;
        }
        if (subgroup.maxSubgroupSize == 64 && subgroup.minSubgroupSize == 32) {
            if (shader_core_props_amd.wavefrontsPerSimd == 20) {
                return vk_device_architecture::AMD_RDNA1;
            }
            return vk_device_architecture::AMD_RDNA2;
        }
    }
    return vk_device_architecture::OTHER;
}

static void pick(vk_device& device) {
    if (device->architecture == AMD_GCN) {
        use_wave64();
    }
}
"""


GGML = "ml/backend/ggml/ggml/src/ggml-cuda"
GGML_VULKAN = "ml/backend/ggml/ggml/src/ggml-vulkan/ggml-vulkan.cpp"


ENVCONFIG_GO = """package envconfig

// EnableVulkan turns on the experimental Vulkan backend.
var EnableVulkan = Bool("OLLAMA_VULKAN")
"""


def build_ollama(path: Path) -> git.Repo:
    """Tags: v0.12.3 (filter keeps gfx900, rocBLAS allowlist), v0.17.5 (filter drops it, deep-init probe,
    Dockerfile removes gfx90[06] rocBLAS files; lines moved; Vulkan built, shipped, opt-in), v0.30.0 (llama.cpp named in
    LLAMA_CPP_VERSION; llama-server presets with a *_user_arch pass-through; Tensile-file and integrated-GPU checks;
    Vulkan on by default), v0.32.15 (gfx1103 left the default list; LLAMA_CPP_VERSION b1300)."""
    repo = new_repo(path)
    commit_tree(
        repo,
        {
            "CMakeLists.txt": CMAKE.format(regex=OLD_REGEX),
            "CMakePresets.json": presets(
                "gfx900;gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx906:xnack-"
            ),
            "discover/amd_common.go": AMD_COMMON_GO,
            "Dockerfile": "FROM base AS rocm-6\nRUN cmake --preset 'ROCm 6'\n",
            f"{GGML}/vendors/hip.h": HIP_H,
            f"{GGML}/common.cuh": COMMON_CUH,
        },
        "v0.12.3",
        tag="v0.12.3",
    )
    commit_tree(
        repo,
        {
            "CMakeLists.txt": "# moved a few lines\n\n\n" + CMAKE.format(regex=NEW_REGEX),
            "discover/amd_common.go": None,
            "ml/device.go": DEVICE_GO,
            "Dockerfile": DOCKERFILE + "FROM scratch AS amd64\nCOPY --from=vulkan  dist/lib/ollama  /lib/ollama/\n",
            "CMakePresets.json": presets(
                "gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-",
                vulkan=True,
            ),
            "discover/runner.go": RUNNER_GO_OPT_IN,
            "envconfig/config.go": ENVCONFIG_GO,
            GGML_VULKAN: VULKAN_CPP,
        },
        "v0.17.5",
        tag="v0.17.5",
    )
    commit_tree(
        repo,
        {
            "CMakeLists.txt": "cmake_minimum_required(VERSION 3.21)\nproject(Ollama)\n",
            "CMakePresets.json": json.dumps({"version": 3, "configurePresets": [{"name": "MLX Metal"}]}),
            "llama/server/CMakePresets.json": server_presets("gfx908:xnack-;gfx942;gfx1030;gfx1100;gfx1103"),
            "cmake/local.cmake": LOCAL_CMAKE,
            "docs/development.md": DEVELOPMENT_MD,
            "discover/amd.go": AMD_GO,
            "discover/runner.go": RUNNER_GO,
            "Dockerfile": DOCKERFILE_V030,
            "LLAMA_CPP_VERSION": "b1234\n",
            f"{GGML}/vendors/hip.h": None,
            f"{GGML}/common.cuh": None,
            GGML_VULKAN: None,
        },
        "v0.30.0",
        tag="v0.30.0",
    )
    commit_tree(
        repo,
        {
            "llama/server/CMakePresets.json": server_presets("gfx908:xnack-;gfx942;gfx1030;gfx1100"),
            "LLAMA_CPP_VERSION": "b1300\n",
        },
        "v0.32.15",
        tag="v0.32.15",
    )
    return repo


def build_llama_cpp(path: Path) -> git.Repo:
    repo = new_repo(path)
    commit_tree(
        repo,
        {
            "include/llama.h": LLAMA_H,
            "ggml/src/ggml-cuda/vendors/hip.h": HIP_H.replace(
                "#if defined(__gfx900__) || defined(__gfx906__)", "#if defined(__gfx906__)"
            ),
            "ggml/src/ggml-cuda/common.cuh": COMMON_CUH,
            "ggml/src/ggml-vulkan/ggml-vulkan.cpp": VULKAN_CPP,
        },
        "b1234",
        tag="b1234",
    )
    commit_tree(repo, {"ggml/src/ggml-cuda/common.cuh": COMMON_CUH + "\n// b1300\n"}, "b1300", tag="b1300")
    return repo


def build_rocm_docs(path: Path) -> git.Repo:
    """rocm-6.1.1 labels the row "GFX Card" and has no column for its own version; rocm-6.3.3 as today."""
    repo = new_repo(path)
    commit_tree(repo, {"docs/release/gpu_os_support.md": SUPPORT_MD_55}, "docs 5.5", tag="rocm-5.5.1")
    commit_tree(repo, {"docs/release/gpu_os_support.md": SUPPORT_MD}, "docs 5.7", tag="rocm-5.7.1")
    old = (
        MATRIX_RST.format(v1="6.1.0")
        .replace("GPU / LLVM target", "GFX Card")
        .replace("gfx942 [#mi300_620]_", "gfx942 [#]_")
    )
    commit_tree(
        repo,
        {"docs/release/gpu_os_support.md": None, "docs/compatibility/compatibility-matrix.rst": old},
        "docs 6.1",
        tag="rocm-6.1.1",
    )
    commit_tree(
        repo, {"docs/compatibility/compatibility-matrix.rst": MATRIX_RST.format(v1="6.3.3")}, "docs", tag="rocm-6.3.3"
    )
    return repo


def repo_of_cases(path: Path, cases: dict[str, str | tuple[str, ...]]) -> git.Repo:
    """A repository with one commit per tag, each holding the files of rule cases of tests/rules/ (``RULE/REF``; several
    cases of the same ref merge, a later one's file replacing an earlier one's), annotations blanked: the real excerpts
    as a tree that a scan reads at its tag."""
    from tests.gate.rule_fixtures import FIXTURES, copy_case

    repo = new_repo(path)
    for tag, named in cases.items():
        files: dict[str, str] = {}
        for number, case in enumerate((named,) if isinstance(named, str) else named):
            folder = path.parent / f"{path.name}-case-{tag}-{number}"
            copy_case(FIXTURES / case, folder)
            files |= {
                str(p.relative_to(folder)): p.read_text(encoding="utf-8") for p in folder.rglob("*") if p.is_file()
            }
        commit_tree(repo, files, f"{path.name} {tag}", tag=tag)
    return repo


def build_clr(path: Path) -> git.Repo:
    """clr (the HIP runtime) at rocm-6.0.0 and rocm-6.2.2 (the pin): the supportedIsas_ excerpts of clr-supported-isas."""
    return repo_of_cases(path, {tag: f"clr-supported-isas/{tag}" for tag in ("rocm-6.0.0", "rocm-6.2.2")})


def build_rocblas(path: Path) -> git.Repo:
    """rocBLAS at rocm-5.7.1, rocm-6.0.0 and rocm-6.2.2 (the pin): the target-list excerpts of rocblas-tensile-targets."""
    return repo_of_cases(
        path, {tag: f"rocblas-tensile-targets/{tag}" for tag in ("rocm-5.7.1", "rocm-6.0.0", "rocm-6.2.2")}
    )


def build_fork(path: Path) -> git.Repo:
    """An ollama fork (in the style of ollama-for-amd) that keeps gfx900 in filter and presets."""
    repo = new_repo(path)
    commit_tree(
        repo,
        {
            "CMakeLists.txt": CMAKE.format(regex="^gfx(803|900|906|94[012]|101[02]|1030|110[012]|120[01])$"),
            "CMakePresets.json": presets("gfx803;gfx900;gfx906;gfx1030;gfx1100"),
            "ml/device.go": DEVICE_GO,
            "Dockerfile": "FROM base AS rocm-6\nRUN cmake --preset 'ROCm 6'\n",
            f"{GGML}/vendors/hip.h": HIP_H,
            f"{GGML}/common.cuh": COMMON_CUH,
        },
        "fork release",
        tag="v0.17.5",
    )
    return repo


@pytest.fixture(scope="session")
def upstream(tmp_path_factory):
    """Paths of the fixture upstream repositories (built once per test run)."""

    def build(root):
        build_ollama(root / "ollama")
        build_llama_cpp(root / "llama.cpp")
        build_rocm_docs(root / "rocm")
        build_clr(root / "clr")
        build_rocblas(root / "rocblas")
        build_fork(root / "fork")
        return root

    return shared_build(tmp_path_factory, "upstream", build)


@pytest.fixture
def source_env(upstream, monkeypatch):
    """Point every pinned source at the fixture repositories, the way a lab mirror would."""
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(upstream / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(upstream / "llama.cpp"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(upstream / "rocm"))
    monkeypatch.setenv("GFXGATE_SOURCE_CLR", str(upstream / "clr"))
    monkeypatch.setenv("GFXGATE_SOURCE_ROCBLAS", str(upstream / "rocblas"))
    return upstream
