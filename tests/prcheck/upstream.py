"""A synthetic ollama-shaped upstream whose release tags flip, move and drift (built with GitPython).

Commit dates are fixed so commit SHAs — and so the golden outputs — are the same on every machine.
The tags are created out of lexical order on purpose: v0.14.10 comes after v0.14.9. They sit in the eras of real ollama
whose constructs each commit has, so every gate rule's `versions` range sees them where it would see the real thing: the
rocBLAS allowlist of ollama v0.1.29 … v0.12.3 (v0.11.x, v0.12.x), the GGML_CUDA_INIT probe of v0.12.4 … v0.29.x (from
v0.13.0), CMake filter and presets (from v0.5.8).

| tag         | what changes                                                    | expected for gfx900                      |
|-------------|-----------------------------------------------------------------|------------------------------------------|
| v0.11.0     | filter keeps gfx900, rocBLAS allowlist, presets list gfx900     | filter allowed, discovery partial        |
| v0.11.1     | README only                                                     | nothing                                  |
| v0.12.0     | CMakeLists.txt lines move down by 3                             | evidence moves, status same              |
| v0.12.1-rc1 | filter drops gfx900 (a pre-release)                             | seen only with --prereleases             |
| v0.13.0     | filter drops gfx900; allowlist replaced by GGML_CUDA_INIT probe | filter regression, discovery improvement |
| v0.13.1     | ml/device.go moves to discover/device.go                        | evidence moves, status same              |
| v0.14.0     | Dockerfile deletes rocBLAS *gfx90[06]*                          | release-packaging regression             |
| v0.14.9     | presets drop gfx900                                             | cmake-presets regression                 |
| v0.14.10    | CMakeLists.txt no longer filters (rule stops matching)          | cmake-filter drift → unknown             |
"""

from __future__ import annotations

from pathlib import Path

import git

from tests.gitrepos import commit_tree

from tests.upstream_fixtures import (
    AMD_COMMON_GO,
    CMAKE,
    COMMON_CUH,
    DEVICE_GO,
    DOCKERFILE,
    GGML,
    HIP_H,
    MATRIX_RST,
    NEW_REGEX,
    OLD_REGEX,
    build_clr,
    build_rocblas,
    new_repo,
    presets,
)

DATE = "2025-01-{day:02d}T12:00:00+0000"
WITH_GFX900 = "gfx900;gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102;gfx906:xnack-"
WITHOUT_GFX900 = "gfx940;gfx941;gfx942;gfx1010;gfx1012;gfx1030;gfx1100;gfx1101;gfx1102"


def commit(repo: git.Repo, files: dict[str, str | None], message: str, day: int, tag: str | None = None) -> str:
    return commit_tree(repo, files, message, tag=tag, date=DATE.format(day=day))


def build_ollama_history(path: Path) -> git.Repo:
    repo = new_repo(path)
    commit(
        repo,
        {
            "README.md": "ollama fixture\n",
            "CMakeLists.txt": CMAKE.format(regex=OLD_REGEX),
            "CMakePresets.json": presets(WITH_GFX900),
            "discover/amd_common.go": AMD_COMMON_GO,
            "Dockerfile": "FROM base AS rocm-6\nRUN cmake --preset 'ROCm 6'\n",
            f"{GGML}/vendors/hip.h": HIP_H,
            f"{GGML}/common.cuh": COMMON_CUH,
        },
        "v0.11.0",
        1,
        tag="v0.11.0",
    )
    commit(repo, {"README.md": "ollama fixture, patch release\n"}, "v0.11.1", 2, tag="v0.11.1")
    commit(
        repo,
        {"CMakeLists.txt": "# moved a few lines\n\n\n" + CMAKE.format(regex=OLD_REGEX)},
        "v0.12.0",
        3,
        tag="v0.12.0",
    )
    new_cmake = "# moved a few lines\n\n\n" + CMAKE.format(regex=NEW_REGEX)
    commit(repo, {"CMakeLists.txt": new_cmake}, "v0.12.1-rc1", 4, tag="v0.12.1-rc1")
    commit(repo, {"discover/amd_common.go": None, "ml/device.go": DEVICE_GO}, "v0.13.0", 5, tag="v0.13.0")
    commit(
        repo,
        {"ml/device.go": None, "discover/device.go": DEVICE_GO.replace("package ml", "package discover")},
        "v0.13.1",
        6,
        tag="v0.13.1",
    )
    commit(repo, {"Dockerfile": DOCKERFILE}, "v0.14.0", 7, tag="v0.14.0")
    commit(repo, {"CMakePresets.json": presets(WITHOUT_GFX900)}, "v0.14.9", 8, tag="v0.14.9")
    commit(
        repo,
        {"CMakeLists.txt": "cmake_minimum_required(VERSION 3.21)\nproject(Ollama C CXX)\nadd_subdirectory(ml)\n"},
        "v0.14.10",
        9,
        tag="v0.14.10",
    )
    commit(repo, {"README.md": "work after the last release\n"}, "untagged", 10)
    return repo


def build_rocm_docs_fixed(path: Path) -> git.Repo:
    repo = new_repo(path)
    commit(
        repo,
        {"docs/compatibility/compatibility-matrix.rst": MATRIX_RST.format(v1="6.3.3")},
        "docs",
        1,
        tag="rocm-6.3.3",
    )
    return repo


def build_upstream(root: Path) -> dict[str, Path]:
    """Build the fixtures under ``root``; the GFXGATE_SOURCE_<NAME> values that point gfxgate at them."""
    build_ollama_history(root / "ollama")
    build_rocm_docs_fixed(root / "rocm")
    build_clr(root / "clr")
    build_rocblas(root / "rocblas")
    return {
        "GFXGATE_SOURCE_OLLAMA": root / "ollama",
        "GFXGATE_SOURCE_ROCM_DOCS": root / "rocm",
        "GFXGATE_SOURCE_CLR": root / "clr",
        "GFXGATE_SOURCE_ROCBLAS": root / "rocblas",
    }


PINS_TOML = r"""# Pins of a project that follows ollama (test fixture; the shape of rules/pins.toml).

[sources.ollama]
url = "https://github.com/ollama/ollama.git"
ref = "{ollama}"          # the version we ship
release_tags = '^v\d+\.\d+\.\d+$'

[sources.ollama-python]
url = "https://github.com/ollama/ollama-python.git"
ref = "v0.6.1"
release_tags = '^v\d+\.\d+\.\d+$'

[sources.rocm-docs]
url = "https://github.com/ROCm/ROCm.git"
ref = "rocm-6.3.3"       # newest tag we can verify
release_tags = '^rocm-\d+\.\d+\.\d+$'

[sources.llama-cpp]
url = "https://github.com/ggml-org/llama.cpp.git"
ref = "b1234"
release_tags = '^b\d+$'

[sources.clr]
url = "https://github.com/ROCm/clr.git"
ref = "rocm-6.2.2"
release_tags = '^rocm-\d+\.\d+\.\d+$'

[sources.rocblas]
url = "https://github.com/ROCm/rocBLAS.git"
ref = "rocm-6.2.2"
release_tags = '^rocm-\d+\.\d+\.\d+$'

[sources.ollama-for-amd]
url = "https://github.com/likelovewant/ollama-for-amd.git"
ref = "v0.30.8"
release_tags = '^v\d+\.\d+\.\d+$'
beyond = true

[sources.therock]
url = "https://github.com/ROCm/TheRock.git"
ref = "therock-7.14"
release_tags = '^therock-\d+\.\d+$'
beyond = true

[layouts.ggml]
vendored_in = "ollama"
vendored_roots = ["ml/backend/ggml/ggml", "llama"]
version_file = "LLAMA_CPP_VERSION"
upstream = "llama-cpp"
upstream_root = "ggml"
"""


def pins_text(ollama: str) -> str:
    return PINS_TOML.replace("{ollama}", ollama)
