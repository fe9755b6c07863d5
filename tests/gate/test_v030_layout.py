"""The ollama >= v0.30 layout on fixture repositories: llama-server presets and the *_user_arch pass-through,
the Tensile-file, override and integrated-GPU checks of discovery, and the Vulkan backend row (each with a
negative case: the rule of the other era does not apply, or the construct is missing)."""

from __future__ import annotations

import json

import pytest

from tests.gate.test_scan import cell, scan_json
from tests.upstream_fixtures import AMD_GO, LOCAL_CMAKE, RUNNER_GO, commit_tree, new_repo, server_presets


def test_user_arch_passthrough_gives_the_documented_configure_command(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx1030", "-t", "gfx1103", "--ref", "ollama=v0.30.0")
    gfx900 = cell(data, "cmake-filter", "gfx900")
    assert gfx900["status"] == "override-required"
    command = "cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx900"
    assert command in gfx900["summary"] and gfx900["remedy"].startswith(command)
    wheres = [e["where"] for e in gfx900["evidence"]]
    assert wheres[0].startswith("ollama@v0.30.0:llama/server/CMakePresets.json:")
    assert "ollama@v0.30.0:cmake/local.cmake:8" in wheres  # set(_preset "${backend}_user_arch")
    assert "ollama@v0.30.0:docs/development.md:6" in wheres
    assert cell(data, "cmake-filter", "gfx1030")["status"] == "allowed"
    assert cell(data, "cmake-filter", "gfx1103")["status"] == "allowed"  # in v0.30.0's default list
    # v0.32.15 dropped gfx1103 from the release preset: the presets block it, the pass-through still builds it
    later = scan_json(capsys, "-t", "gfx1103", "--ref", "ollama=v0.32.15")
    assert cell(later, "cmake-presets", "gfx1103")["status"] == "blocked"
    assert cell(later, "cmake-filter", "gfx1103")["status"] == "override-required"


def test_old_filter_rule_keeps_its_range(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.17.5")
    cmake = cell(data, "cmake-filter", "gfx900")
    assert cmake["evidence"][0]["where"].startswith("ollama@v0.17.5:CMakeLists.txt:")  # the old rule, not the new one
    assert "OLLAMA_LLAMA_BACKENDS" not in cmake["summary"]


def test_missing_user_arch_switch_is_an_unknown_with_its_reason(tmp_path, source_env, capsys):
    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        {
            "llama/server/CMakePresets.json": server_presets("gfx1030"),
            "cmake/local.cmake": LOCAL_CMAKE.replace('set(_preset "${backend}_user_arch")', ""),
        },
        "no switch",
        tag="v0.31.0",
    )
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={tmp_path / 'ollama'}", "--ref", "ollama=v0.31.0")
    cmake = cell(data, "cmake-filter", "gfx900")
    assert cmake["status"] == "unknown"
    assert "rule did not match at ollama@v0.31.0" in cmake["reason"] and "user-arch preset switch" in cmake["reason"]


def test_discovery_tensile_check_override_translation_and_integrated_gpus(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx1103", "-t", "gfx1151", "--ref", "ollama=v0.30.0")
    gfx900 = cell(data, "discovery", "gfx900")
    assert gfx900["status"] == "override-required"  # the release deletes gfx900's rocBLAS files
    assert "TensileLibrary_lazy_gfx900.dat" in gfx900["summary"] and "rocmGFXTargetOverride" in gfx900["summary"]
    assert "HSA_OVERRIDE_GFX_VERSION=9.0.6 makes the runtime report gfx906" in gfx900["remedy"]
    assert "TensileLibrary_lazy_gfx906.dat" in gfx900["remedy"]
    # the packaging remedy names the override too, so it says what that override loads (any layer's remedy does)
    packaging = cell(data, "release-packaging", "gfx900")
    assert "HSA_OVERRIDE_GFX_VERSION=9.0.6 makes the runtime report gfx906" in packaging["remedy"]
    apu = cell(data, "discovery", "gfx1103")
    assert apu["status"] == "override-required" and "OLLAMA_IGPU_ENABLE=1" in apu["remedy"]
    assert any(e["where"].startswith("ollama@v0.30.0:discover/runner.go:") for e in apu["evidence"])
    kept = cell(data, "discovery", "gfx1151")
    assert "kept by default" in kept["summary"] and kept["status"] != "override-required"
    # before v0.30 none of these rules applies
    old = scan_json(capsys, "-t", "gfx1103", "--ref", "ollama=v0.17.5")
    assert "OLLAMA_IGPU_ENABLE" not in cell(old, "discovery", "gfx1103")["summary"]


def test_vulkan_row_follows_the_versions(source_env, capsys):
    new = scan_json(
        capsys, "-t", "gfx900", "-t", "gfx1010", "-t", "gfx1100", "-t", "gfx1103", "--ref", "ollama=v0.30.0"
    )
    row = next(layer for layer in new["layers"] if layer["id"] == "vulkan")
    assert row["backends"] == ["vulkan"]
    gfx900 = cell(new, "vulkan", "gfx900")
    assert gfx900["status"] == "allowed" and "enabled by default" in gfx900["summary"]
    assert "classifies gfx900 (GCN5) as AMD_GCN" in gfx900["summary"]
    assert any(e["where"] == "llama-cpp@b1234:ggml/src/ggml-vulkan/ggml-vulkan.cpp:9" for e in gfx900["evidence"])
    assert "as AMD_RDNA1" in cell(new, "vulkan", "gfx1010")["summary"]
    # negative: this ggml-vulkan has no RDNA3 class, so gfx1100 gets the generic paths (no class is invented)
    assert "AMD_RDNA3 is not produced at this version" in cell(new, "vulkan", "gfx1100")["summary"]
    apu = cell(new, "vulkan", "gfx1103")
    assert apu["status"] == "override-required" and apu["remedy"] == "OLLAMA_IGPU_ENABLE=1 ollama serve"

    opt_in = cell(scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.17.5"), "vulkan", "gfx900")
    assert opt_in["status"] == "override-required" and "opt-in with OLLAMA_VULKAN=1" in opt_in["summary"]
    assert opt_in["remedy"] == "OLLAMA_VULKAN=1 ollama serve"
    assert any(e["where"] == "ollama@v0.17.5:discover/runner.go:5" for e in opt_in["evidence"])

    absent = cell(scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.12.3"), "vulkan", "gfx900")
    assert absent["status"] == "blocked" and absent["summary"].startswith("not built")
    assert "ollama@v0.12.3:CMakePresets.json" in [e["where"] for e in absent["evidence"]]  # searched, not found


def test_rocm_only_layers_say_so(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--live")
    backends = {layer["id"]: layer["backends"] for layer in data["layers"]}
    assert backends["release-packaging"] == ["rocm"] and backends["source-macros"] == ["rocm"]
    assert backends["vulkan"] == ["vulkan"] and "rocm" not in backends["vulkan"]


def test_history_cache_never_reuses_facts_read_from_another_source(source_env, tmp_path, monkeypatch):
    """ggml at v0.30+ comes from the llama.cpp that LLAMA_CPP_VERSION names: facts read from a folder given once must
    not answer a later walk in which llama.cpp cannot be read (the cache is keyed by the ollama commit only)."""
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.history.walk import FactsCache, TagProber
    from gfxgate.sources.resolve import load_pins
    from gfxgate.targets import catalog

    cat = catalog()
    cache = tmp_path / "facts"

    def macros_at_v030(llama_cpp: str) -> str:
        monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", llama_cpp)
        with TagProber(
            load_pins(),
            default_rules(),
            "ollama",
            [cat.parse("gfx906")],
            cat,
            sources={"ollama": str(source_env / "ollama")},
            offline=True,
            cache=FactsCache(cache),
        ) as prober:
            status = prober.matrix_at("v0.30.0").cell("source-macros", "gfx906").status.value
        prober.cache.flush()
        return status

    assert macros_at_v030(str(source_env / "llama.cpp")) == "allowed"
    assert macros_at_v030(str(tmp_path / "no-llama-cpp")) == "unknown"


# -- the v0.30.0 release candidates before the *_user_arch presets (lines as in ollama's own files at those tags) ----
DOCKERFILE_RC0 = """FROM rocm-7-deps AS llama-server-rocm
RUN --mount=type=cache,target=/root/.ccache \\
    cmake -S llama/server --preset rocm \\
        -DAMDGPU_TARGETS="gfx942;gfx1010;gfx1030;gfx1100;gfx1103;gfx908:xnack-;gfx90a:xnack+;gfx90a:xnack-" \\
        -DCMAKE_HIP_FLAGS="-parallel-jobs=4" \\
        && cmake --build build/llama-server-rocm -- -l $(nproc)
RUN rm -f dist/lib/ollama/rocm/rocblas/library/*gfx90[06]*
"""
DOCKERFILE_RC16 = """FROM rocm-7-deps AS llama-server-rocm
RUN --mount=type=cache,target=/root/.ccache \\
    cmake -S llama/server --preset rocm \\
        && cmake --build build/llama-server-rocm -- -l $(nproc)
"""
LOCAL_CMAKE_RC18 = """    elseif(_backend STREQUAL "rocm" OR _backend STREQUAL "rocm-windows")
        set(_amd_targets "${AMDGPU_TARGETS}")
        if(NOT _amd_targets)
            set(_amd_targets "${CMAKE_HIP_ARCHITECTURES}")
        endif()
"""
DEVELOPMENT_MD_RC18 = """```shell
# ROCm / HIP
cmake -B build-gpu . -DOLLAMA_LLAMA_SERVER_BACKENDS=rocm -DCMAKE_HIP_ARCHITECTURES=gfx1100
```
"""


def rc_presets(targets: str | None) -> str:
    """llama/server/CMakePresets.json of the candidates: one `rocm` preset, with or without a list."""
    rocm = {"name": "rocm", "inherits": ["default"], "cacheVariables": {"GGML_HIP": "ON"}}
    if targets:
        rocm["cacheVariables"]["AMDGPU_TARGETS"] = targets
    return json.dumps({"version": 3, "configurePresets": [{"name": "default", "hidden": True}, rocm]}, indent=2)


@pytest.fixture
def candidates(tmp_path):
    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        {"llama/server/CMakePresets.json": rc_presets(None), "Dockerfile": DOCKERFILE_RC0},
        "list on the configure command",
        tag="v0.30.0-rc0",
    )
    commit_tree(
        repo,
        {"llama/server/CMakePresets.json": rc_presets("gfx942;gfx1030;gfx1100"), "Dockerfile": DOCKERFILE_RC16},
        "list in the rocm preset",
        tag="v0.30.0-rc16",
    )
    commit_tree(
        repo,
        {"cmake/local.cmake": LOCAL_CMAKE_RC18, "docs/development.md": DEVELOPMENT_MD_RC18},
        "cmake/local.cmake takes a user list",
        tag="v0.30.0-rc18",
    )
    return tmp_path / "ollama"


def test_candidates_rc0_list_on_the_dockerfile_command(candidates, source_env, capsys):
    data = scan_json(
        capsys, "-t", "gfx900", "-t", "gfx1030", "--source", f"ollama={candidates}", "--ref", "ollama=v0.30.0-rc0"
    )
    build = cell(data, "cmake-filter", "gfx900")
    assert build["status"] == "override-required"
    assert (
        build["remedy"]
        == "cmake -S llama/server --preset rocm -DAMDGPU_TARGETS=gfx900 && cmake --build build/llama-server-rocm"
    )
    assert [e["where"] for e in build["evidence"]] == [
        "ollama@v0.30.0-rc0:Dockerfile:4",
        "ollama@v0.30.0-rc0:Dockerfile:3",
    ]
    assert build["evidence"][0]["text"].startswith('-DAMDGPU_TARGETS="gfx942;')  # the line of the list, not of `cmake`
    assert cell(data, "cmake-filter", "gfx1030")["status"] == "allowed"
    presets = cell(data, "cmake-presets", "gfx900")
    assert presets["status"] == "blocked" and "rocm + Dockerfile -DAMDGPU_TARGETS" in presets["summary"]
    assert cell(data, "cmake-presets", "gfx1030")["status"] == "allowed"


def test_candidates_rc16_and_rc18_lists_and_pass_through(candidates, source_env, capsys):
    rc16 = scan_json(
        capsys, "-t", "gfx900", "-t", "gfx1103", "--source", f"ollama={candidates}", "--ref", "ollama=v0.30.0-rc16"
    )
    build = cell(rc16, "cmake-filter", "gfx1103")  # left out of this preset's list: the command line passes it through
    assert build["status"] == "override-required" and "-DAMDGPU_TARGETS=gfx1103" in build["summary"]
    line = next(i for i, text in enumerate(rc_presets("gfx942").splitlines(), 1) if '"AMDGPU_TARGETS"' in text)
    assert [e["where"] for e in build["evidence"]] == [
        f"ollama@v0.30.0-rc16:llama/server/CMakePresets.json:{line}",
        "ollama@v0.30.0-rc16:Dockerfile:3",
    ]
    assert cell(rc16, "cmake-presets", "gfx1103")["status"] == "blocked"
    rc18 = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={candidates}", "--ref", "ollama=v0.30.0-rc18")
    build = cell(rc18, "cmake-filter", "gfx900")
    command = "cmake -B build-gpu . -DOLLAMA_LLAMA_SERVER_BACKENDS=rocm -DCMAKE_HIP_ARCHITECTURES=gfx900"
    assert build["remedy"] == f"{command} && cmake --build build-gpu"
    assert "ollama@v0.30.0-rc18:cmake/local.cmake:2" in [e["where"] for e in build["evidence"]]


def test_candidate_without_the_list_is_unknown_not_guessed(tmp_path, source_env, capsys):
    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        {"llama/server/CMakePresets.json": rc_presets(None), "Dockerfile": DOCKERFILE_RC16},
        "no list anywhere",
        tag="v0.30.0-rc3",
    )
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={tmp_path / 'ollama'}", "--ref", "ollama=v0.30.0-rc3")
    for layer in ("cmake-filter", "cmake-presets"):
        assert cell(data, layer, "gfx900")["status"] == "unknown"
        assert "no command line matching" in cell(data, layer, "gfx900")["reason"]


ENVCONFIG_GO_V030 = """package envconfig

var (
	// EnableVulkan controls Vulkan backend discovery.
	EnableVulkan = BoolWithDefault("OLLAMA_VULKAN")
	// EnableIntegratedGPU controls whether integrated GPUs may be selected.
	EnableIntegratedGPU = BoolWithDefault("OLLAMA_IGPU_ENABLE")
)
"""


def test_integrated_gpu_filter_before_its_log_line_named_the_variable(tmp_path, source_env, capsys):
    """v0.30.0-rc28 to -rc31 logged "dropping integrated GPU" without naming OLLAMA_IGPU_ENABLE: the filter is the
    same, and the evidence names the variable from envconfig; without that variable the rule does not decide."""
    repo = new_repo(tmp_path / "ollama")
    runner = RUNNER_GO.replace(
        "dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1", "dropping integrated GPU"
    )
    commit_tree(
        repo,
        {"discover/amd.go": AMD_GO, "discover/runner.go": runner, "envconfig/config.go": ENVCONFIG_GO_V030},
        "filterIntegratedGPUs, terse log line",
        tag="v0.30.0-rc28",
    )
    commit_tree(
        repo,
        {"envconfig/config.go": ENVCONFIG_GO_V030.replace('BoolWithDefault("OLLAMA_IGPU_ENABLE")', "nil")},
        "no switch",
        tag="v0.30.0-rc29",
    )
    source = ("--source", f"ollama={tmp_path / 'ollama'}")
    data = scan_json(capsys, "-t", "gfx1103", "-t", "gfx1030", *source, "--ref", "ollama=v0.30.0-rc28")
    apu = cell(data, "discovery", "gfx1103")
    assert apu["status"] == "override-required" and apu["remedy"] == "OLLAMA_IGPU_ENABLE=1 ollama serve"
    line = next(i for i, text in enumerate(ENVCONFIG_GO_V030.splitlines(), 1) if "OLLAMA_IGPU_ENABLE" in text)
    assert f"ollama@v0.30.0-rc28:envconfig/config.go:{line}" in [e["where"] for e in apu["evidence"]]
    # the Vulkan row has the same check (this fixture builds no Vulkan backend, so that row is blocked anyway)
    vulkan = cell(data, "vulkan", "gfx1103")
    assert f"ollama@v0.30.0-rc28:envconfig/config.go:{line}" in [e["where"] for e in vulkan["evidence"]]
    assert "drops only integrated GPUs" in cell(data, "discovery", "gfx1030")["summary"]
    later = scan_json(capsys, "-t", "gfx1103", *source, "--ref", "ollama=v0.30.0-rc29")
    assert "OLLAMA_IGPU_ENABLE" not in cell(later, "discovery", "gfx1103")["summary"]
