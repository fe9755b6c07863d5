"""`gfxgate scan` end to end on real git repositories built by the tests."""

from __future__ import annotations

import json

import pytest

from tests.conftest import schema_validator
from gfxgate.cli import main


def run(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def scan_json(capsys, *args: str) -> dict:
    code, out, err = run(capsys, "scan", "--format", "json", *args)
    assert code == 0, err
    data = json.loads(out)
    schema_validator("matrix").validate(data)  # jsonschema.validate, its schema checked once per module
    return data


def cell(data: dict, layer: str, target: str) -> dict:
    row = next(layer_ for layer_ in data["layers"] if layer_["id"] == layer)
    return row["cells"][data["targets"].index(target)]


def test_gfx900_at_v0_17_5(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx1030", "--ref", "ollama=v0.17.5")
    cmake = cell(data, "cmake-filter", "gfx900")
    assert cmake["status"] == "override-required"
    assert "-DAMDGPU_TARGETS=gfx900" in cmake["summary"]
    assert cmake["evidence"][0]["where"] == "ollama@v0.17.5:CMakeLists.txt:17"  # line found at this tag (moved by 3)
    assert "list(FILTER AMDGPU_TARGETS INCLUDE" in cmake["evidence"][0]["text"]
    assert cell(data, "cmake-filter", "gfx1030")["status"] == "allowed"
    macros = cell(data, "source-macros", "gfx900")
    assert macros["status"] == "allowed"
    assert "GCN5" in macros["summary"] and "v_mul_i32_i24" in macros["summary"]
    wheres = [e["where"] for e in macros["evidence"]]
    assert "ollama@v0.17.5:ml/backend/ggml/ggml/src/ggml-cuda/vendors/hip.h:7" in wheres  # #define GCN5
    assert any(w.endswith("common.cuh:10") for w in wheres)  # the #elif defined(__gfx900__) branch
    discovery = cell(data, "discovery", "gfx900")
    assert discovery["status"] == "allowed" and "GGML_CUDA_INIT" in discovery["summary"]
    assert discovery["evidence"][0]["where"] == "ollama@v0.17.5:ml/device.go:5"
    assert cell(data, "release-packaging", "gfx900")["status"] == "blocked"
    assert cell(data, "release-packaging", "gfx1030")["status"] == "allowed"
    assert cell(data, "official-matrix", "gfx900")["status"] == "blocked"
    assert cell(data, "official-matrix", "gfx1030")["status"] == "allowed"
    assert cell(data, "rocblas-artifacts", "gfx900")["status"] == "not-scanned"
    assert cell(data, "runtime", "gfx900")["status"] == "not-measured"
    commits = {s["name"]: s["commit"] for s in data["sources"]}
    assert len(commits["ollama"]) == 40


def test_older_ref_allows_gfx900(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.12.3")
    assert cell(data, "cmake-filter", "gfx900")["status"] == "allowed"
    assert cell(data, "cmake-presets", "gfx900")["status"] == "allowed"
    disc = cell(data, "discovery", "gfx900")
    assert disc["status"] == "partial" and "TensileLibrary_lazy_gfx900.dat" in disc["summary"]
    assert cell(data, "release-packaging", "gfx900")["status"] == "allowed"


def test_xnack_feature_in_preset_list(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx906", "-t", "gfx906:xnack-", "-t", "gfx906:xnack+", "--ref", "ollama=v0.12.3")
    assert cell(data, "cmake-presets", "gfx906")["status"] == "partial"
    assert cell(data, "cmake-presets", "gfx906:xnack-")["status"] == "allowed"
    assert cell(data, "cmake-presets", "gfx906:xnack+")["status"] == "blocked"
    data = scan_json(capsys, "-t", "gfx90a", "--ref", "ollama=v0.17.5")
    assert cell(data, "cmake-presets", "gfx90a")["status"] == "allowed"  # xnack+ and xnack- both listed


def test_v0_30_resolves_llama_cpp(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx906", "--ref", "ollama=v0.30.0")
    macros = cell(data, "source-macros", "gfx906")
    assert macros["status"] == "allowed"
    assert macros["evidence"][0]["where"].startswith("llama-cpp@b1234:ggml/src/ggml-cuda/vendors/hip.h:")
    # in this llama.cpp gfx900 no longer derives GCN5 but keeps its dp4a branch
    gfx900 = cell(data, "source-macros", "gfx900")
    assert gfx900["status"] == "partial" and gfx900["summary"].startswith("no family macro")
    assert any("LLAMA_CPP_VERSION" in n for n in data["notes"])


def test_older_rocm_docs_layout(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx90a", "--ref", "rocm-docs=rocm-6.1.1")
    assert cell(data, "official-matrix", "gfx90a")["status"] == "allowed"
    gfx900 = cell(data, "official-matrix", "gfx900")
    assert gfx900["status"] == "blocked"
    assert "ROCm 6.1.0" in gfx900["summary"] and "tag names 6.1.1" in gfx900["summary"]


def test_rocm_5_markdown_support_tables(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "-t", "gfx906", "-t", "gfx1030", "--ref", "rocm-docs=rocm-5.7.1")
    gfx900 = cell(data, "official-matrix", "gfx900")
    assert gfx900["status"] == "blocked" and "not supported" in gfx900["summary"]
    assert gfx900["evidence"][0]["where"] == "rocm-docs@rocm-5.7.1:docs/release/gpu_os_support.md:7"
    assert cell(data, "official-matrix", "gfx906")["status"] == "allowed"
    assert "not listed" in cell(data, "official-matrix", "gfx1030")["summary"]
    older = scan_json(
        capsys, "-t", "gfx900", "-t", "gfx906", "--ref", "rocm-docs=rocm-5.5.1"
    )  # Linux: Supported/Unsupported
    assert cell(older, "official-matrix", "gfx900")["status"] == "blocked"
    assert cell(older, "official-matrix", "gfx906")["status"] == "allowed"


def test_fork_as_source(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={source_env / 'fork'}", "--ref", "ollama=v0.17.5")
    assert cell(data, "cmake-filter", "gfx900")["status"] == "allowed"
    assert cell(data, "cmake-presets", "gfx900")["status"] == "allowed"
    assert cell(data, "release-packaging", "gfx900")["status"] == "allowed"


def test_plain_folder_as_source(source_env, capsys, tmp_path):
    folder = tmp_path / "unpacked"
    import git

    git.Repo(source_env / "fork").git.archive("v0.17.5", o=str(tmp_path / "fork.tar"))
    import tarfile

    with tarfile.open(tmp_path / "fork.tar") as tar:
        tar.extractall(folder, filter="data")
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={folder}")
    assert cell(data, "cmake-filter", "gfx900")["status"] == "allowed"
    assert cell(data, "cmake-filter", "gfx900")["evidence"][0]["where"].startswith("ollama@worktree:CMakeLists.txt:")


def test_same_inputs_give_identical_output(source_env, capsys):
    first = run(capsys, "scan", "-t", "gfx900,gfx1030", "--live")
    second = run(capsys, "scan", "-t", "gfx900,gfx1030", "--live")
    assert first[0] == 0 and first[1] == second[1]


def test_unknown_target_is_usage_error(capsys):
    code, _, err = run(capsys, "scan", "-t", "gfx9001")
    assert code == 2 and "unknown GPU target" in err and "gfx900" in err


def test_unknown_tag_lists_nearest(source_env, capsys):
    code, _, err = run(capsys, "scan", "-t", "gfx900", "--ref", "ollama=v0.17.9", "--offline")
    assert code == 4
    assert "unknown tag" in err and "v0.17.5" in err


def test_unknown_source_name(source_env, capsys):
    code, _, err = run(capsys, "scan", "-t", "gfx900", "--ref", "olama=v0.17.5")
    assert code == 2 and "ollama" in err


def test_unreachable_remote_has_its_own_exit_code(capsys, monkeypatch):
    monkeypatch.setenv("GFXGATE_GIT_TIMEOUT", "20")
    code, out, err = run(capsys, "scan", "-t", "gfx900", "--live", "--source", "ollama=http://127.0.0.1:9/ollama.git")
    assert code == 5 and out == ""
    assert "cannot clone http://127.0.0.1:9/ollama.git" in err


def test_partial_clone_cache_and_offline(source_env, capsys, monkeypatch, _isolated_cache):
    url = (source_env / "ollama").as_uri()
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={url}")
    assert cell(data, "cmake-filter", "gfx900")["status"] == "override-required"
    clones = list((_isolated_cache / "repos").glob("ollama-*.git"))
    assert len(clones) == 1
    import subprocess

    cfg = subprocess.run(
        ["git", "--git-dir", str(clones[0]), "config", "remote.origin.partialclonefilter"],
        capture_output=True,
        text=True,
    )
    assert cfg.stdout.strip() == "blob:none"
    assert not list((_isolated_cache / "repos").glob(".*"))  # no temporary clone left behind
    # offline, blobs never fetched are reported as such, not guessed
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={url}", "--offline", "--ref", "ollama=v0.12.3")
    verdict = cell(data, "cmake-filter", "gfx900")
    assert verdict["status"] == "unknown" and "not in the local object database" in verdict["reason"]
    # once read online, the same tag works offline from the cache
    scan_json(capsys, "-t", "gfx900", "--source", f"ollama={url}", "--ref", "ollama=v0.12.3")
    data = scan_json(capsys, "-t", "gfx900", "--source", f"ollama={url}", "--offline", "--ref", "ollama=v0.12.3")
    assert cell(data, "cmake-filter", "gfx900")["status"] == "allowed"
    code, _, err = run(
        capsys, "scan", "-t", "gfx900", "--source", f"ollama={url}", "--offline", "--ref", "ollama=v9.9.9"
    )
    assert code == 4 and "--offline" in err


def test_offline_without_cache_is_network_error(source_env, capsys):
    url = (source_env / "ollama").as_uri()
    code, out, err = run(capsys, "scan", "-t", "gfx900", "--source", f"ollama={url}", "--offline")
    assert code == 5 and "and this run is offline (it clones nothing)" in err


def test_implicit_source_failure_is_an_unknown_cell(source_env, capsys, monkeypatch):
    # ollama v0.30 names llama.cpp, which is not reachable offline: its layers say why, the rest is decided
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", (source_env / "llama.cpp").as_uri())
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.30.0", "--offline")
    verdict = cell(data, "source-macros", "gfx900")
    assert verdict["status"] == "unknown"
    assert "LLAMA_CPP_VERSION names llama-cpp b1234" in verdict["reason"]
    presets = cell(data, "cmake-presets", "gfx900")
    assert presets["status"] == "blocked"
    assert presets["evidence"][0]["where"].startswith("ollama@v0.30.0:llama/server/CMakePresets.json:")


def test_snapshot_round_trip(source_env, capsys, tmp_path):
    snap = tmp_path / "snap.json"
    code, _, err = run(capsys, "snapshot", "build", "-o", str(snap))
    assert code == 0, err
    text = snap.read_text()
    assert str(source_env) not in text  # machine-independent: pinned URLs, not the mirror path
    live = run(capsys, "scan", "-t", "gfx900", "--format", "json", "--live")[1]
    offline = run(capsys, "scan", "-t", "gfx900", "--format", "json", "--snapshot", str(snap))[1]
    live_cells = [c for layer in json.loads(live)["layers"] for c in layer["cells"]]
    snap_cells = [c for layer in json.loads(offline)["layers"] for c in layer["cells"]]
    assert live_cells == snap_cells


def test_stale_snapshot_rule_becomes_unknown(source_env, capsys, tmp_path):
    snap = tmp_path / "snap.json"
    run(capsys, "snapshot", "build", "-o", str(snap))
    data = json.loads(snap.read_text())
    data["rules"]["ollama-llama-server-user-arch"]["digest"] = (
        "0" * 16
    )  # built from another rule definition (the pin's)
    snap.write_text(json.dumps(data))
    out = scan_json(capsys, "-t", "gfx900", "--snapshot", str(snap))
    verdict = cell(out, "cmake-filter", "gfx900")
    assert verdict["status"] == "unknown" and "snapshot build" in verdict["reason"]
    assert any("changed rules" in n for n in out["notes"])


def test_a_snapshot_rule_matched_without_facts_is_a_data_error(capsys, tmp_path):
    """A matched rule is evaluated on its facts: a snapshot with "facts": null there ended `scan` in an internal
    error (exit 70, TypeError in the matcher); the schema now requires them (exit 3, naming the file and the rule)."""
    from gfxgate.gate import snapshot

    data = json.loads(snapshot.default_path().read_text(encoding="utf-8"))
    rule_id = next(k for k, v in data["rules"].items() if v["state"] == "matched")
    data["rules"][rule_id]["facts"] = None
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(data), encoding="utf-8")
    code, out, err = run(capsys, "scan", "-t", "gfx900", "--format", "json", "--snapshot", str(snap))
    assert (code, out) == (3, "")
    assert err.startswith(f"gfxgate: error: {snap}: rules/{rule_id}/facts: None is not of type 'object'")


def test_an_undecided_cell_says_why_in_its_summary(gfxgate_cli):
    """At today's release the ggml rules read llama.cpp at the tag LLAMA_CPP_VERSION names, which the embedded
    snapshot could not read: the cell said 'unknown: unknown'; its summary now names the cause (the reason has all)."""
    import json

    data = json.loads(gfxgate_cli("scan", "-t", "gfx900", "--format", "json", check=True, timeout=60).stdout)
    cells = [c for layer in data["layers"] for c in layer["cells"] if c["status"] == "unknown"]
    assert cells, "the embedded snapshot has an unknown cell at today's release"
    for cell in cells:
        assert cell["summary"] != "unknown" and len(cell["summary"]) <= 140
        assert cell["summary"].rstrip("…")[:40] in cell["reason"]
