"""Coupled pins (the ROCm version an ollama tag builds against chooses the ROCm docs ref) and `--ref NAME=latest`,
on fixture repositories. The fixture docs have rocm-5.5.1 … rocm-6.3.3, like the real mirror ends at rocm-6.3.3."""

from __future__ import annotations

from tests.gate.test_scan import cell, run, scan_json
from tests.upstream_fixtures import commit_tree, new_repo


def _ollama_with(tmp_path, dockerfile: str):
    repo = new_repo(tmp_path / "ollama")
    commit_tree(repo, {"Dockerfile": dockerfile}, "rocm version", tag="v0.31.0")
    return ["--source", f"ollama={tmp_path / 'ollama'}", "--ref", "ollama=v0.31.0"]


def test_the_rocm_version_of_the_tag_chooses_the_docs_ref(tmp_path, source_env, capsys):
    data = scan_json(
        capsys, "-t", "gfx90a", *_ollama_with(tmp_path, "ARG ROCMVERSION=6.1.1\nFROM rocm/dev:${ROCMVERSION}\n")
    )
    verdict = cell(data, "official-matrix", "gfx90a")
    assert verdict["evidence"][0]["where"].startswith("rocm-docs@rocm-6.1.1:")
    assert "[" not in verdict["summary"]  # read at the ref that was named: nothing to say
    assert any(n.startswith("rocm-docs: rocm-6.1.1 (chosen by ollama@v0.31.0:Dockerfile:1") for n in data["notes"])


def test_before_the_arg_the_runtime_stage_image_chooses_the_docs_ref(tmp_path, source_env, capsys):
    """ollama v0.1.21 … v0.1.28 name no ROCMVERSION: the runtime stage's ROCm image does (lines of v0.1.24's
    Dockerfile), not the rocm-5/rocm-6 build stages before it."""
    dockerfile = (
        "FROM --platform=linux/amd64 rocm/dev-centos-7:5.7.1-complete AS rocm-5-build-amd64\n"
        "FROM --platform=linux/amd64 rocm/dev-centos-7:6.0-complete AS rocm-6-build-amd64\n"
        "FROM --platform=linux/amd64 rocm/dev-centos-7:5.7.1-complete as runtime-rocm\n"
    )
    data = scan_json(capsys, "-t", "gfx900", *_ollama_with(tmp_path, dockerfile))
    assert cell(data, "official-matrix", "gfx900")["evidence"][0]["where"].startswith("rocm-docs@rocm-5.7.1:")
    assert (
        "rocm-docs: rocm-5.7.1 (chosen by ollama@v0.31.0:Dockerfile:3: "
        "FROM --platform=linux/amd64 rocm/dev-centos-7:5.7.1-complete as runtime-rocm)"
    ) in data["notes"], data["notes"]


def test_an_unreadable_docs_ref_is_replaced_and_said(tmp_path, source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", *_ollama_with(tmp_path, "ARG ROCMVERSION=7.2\n"))
    verdict = cell(data, "official-matrix", "gfx900")
    assert verdict["evidence"][0]["where"].startswith("rocm-docs@rocm-6.3.3:")
    assert "rocm-7.2.0 cannot be read here: read rocm-6.3.3 instead" in verdict["summary"]
    note = next(n for n in data["notes"] if n.startswith("rocm-docs:"))
    assert "ollama@v0.31.0:Dockerfile:1 (ARG ROCMVERSION=7.2) names rocm-7.2.0" in note


def test_an_explicit_docs_ref_wins(tmp_path, source_env, capsys):
    args = _ollama_with(tmp_path, "ARG ROCMVERSION=7.2.1\n")
    data = scan_json(capsys, "-t", "gfx900", *args, "--ref", "rocm-docs=rocm-6.1.1")
    verdict = cell(data, "official-matrix", "gfx900")
    assert verdict["evidence"][0]["where"].startswith("rocm-docs@rocm-6.1.1:") and "[" not in verdict["summary"]


def test_no_version_in_the_tag_keeps_the_pin(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.12.3")  # the fixture's Dockerfile names none
    assert cell(data, "official-matrix", "gfx900")["evidence"][0]["where"].startswith("rocm-docs@rocm-6.3.3:")
    assert any("names no version in Dockerfile" in n for n in data["notes"])


def test_unreachable_docs_fall_back_to_the_snapshot_and_say_so(source_env, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("GFXGATE_SOURCE_ROCM_DOCS", str(tmp_path / "no-such-clone"))
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=v0.30.0")  # builds against 7.2.1
    verdict = cell(data, "official-matrix", "gfx900")
    assert verdict["status"] == "blocked"
    assert "evidence from the embedded snapshot of rocm-docs@rocm-6.3.3" in verdict["summary"]
    assert "rocm-7.2.1" in verdict["summary"]
    # a source the user names explicitly is never replaced by the snapshot
    code, out, err = run(capsys, "scan", "-t", "gfx900", "--source", f"rocm-docs={tmp_path / 'no-such-clone'}")
    assert code != 0 and "does not exist" in err


def test_ref_latest_is_the_newest_release_tag(source_env, capsys):
    data = scan_json(capsys, "-t", "gfx900", "--ref", "ollama=latest")
    assert any(s["name"] == "ollama" and s["ref"] == "v0.32.15" for s in data["sources"])
    assert any(n.startswith("ollama: latest = v0.32.15 (the newest release tag") for n in data["notes"])
    docs = scan_json(capsys, "-t", "gfx900", "--ref", "rocm-docs=latest")
    assert cell(docs, "official-matrix", "gfx900")["evidence"][0]["where"].startswith("rocm-docs@rocm-6.3.3:")


def test_ref_latest_on_a_plain_folder_is_a_usage_error(source_env, capsys, tmp_path):
    (tmp_path / "folder").mkdir()
    code, _, err = run(
        capsys, "scan", "-t", "gfx900", "--source", f"ollama={tmp_path / 'folder'}", "--ref", "ollama=latest"
    )
    assert code == 2 and "needs a git repository" in err
