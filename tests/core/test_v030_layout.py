"""The ollama >= v0.30 layout on fixture repositories: llama-server presets and the *_user_arch pass-through,
the Tensile-file, override and integrated-GPU checks of discovery, and the Vulkan backend row (each with a
negative case: the rule of the other era does not apply, or the construct is missing)."""

from __future__ import annotations

from tests.core.test_scan import cell, scan_json
from tests.core.upstream_fixtures import LOCAL_CMAKE, commit_tree, new_repo, server_presets


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
    commit_tree(repo, {"llama/server/CMakePresets.json": server_presets("gfx1030"),
                       "cmake/local.cmake": LOCAL_CMAKE.replace('set(_preset "${backend}_user_arch")', "")},
                "no switch", tag="v0.31.0")
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
    new = scan_json(capsys, "-t", "gfx900", "-t", "gfx1010", "-t", "gfx1100", "-t", "gfx1103", "--ref", "ollama=v0.30.0")
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
        prober = TagProber(load_pins(), default_rules(), "ollama", [cat.parse("gfx906")], cat,
                           sources={"ollama": str(source_env / "ollama")}, offline=True, cache=FactsCache(cache))
        status = prober.matrix_at("v0.30.0").cell("source-macros", "gfx906").status.value
        prober.cache.flush()
        return status

    assert macros_at_v030(str(source_env / "llama.cpp")) == "allowed"
    assert macros_at_v030(str(tmp_path / "no-llama-cpp")) == "unknown"
