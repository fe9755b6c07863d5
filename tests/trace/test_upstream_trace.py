"""Opt-in: the shipped trace rules against real clones.

Set GFXGATE_TEST_UPSTREAM to a folder holding clones named `ollama` (ollama/ollama) and `ollama-python`
(ollama/ollama-python); bare or partial clones work. Expected lines are looked up in the clones with
`git grep` at the tag, never stored here.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

UPSTREAM = os.environ.get("GFXGATE_TEST_UPSTREAM")
pytestmark = [pytest.mark.upstream, pytest.mark.skipif(not UPSTREAM, reason="set GFXGATE_TEST_UPSTREAM to run")]


def _grep_line(repo: str, tag: str, path: str, needle: str) -> int:
    root = Path(UPSTREAM) / repo
    out = subprocess.run(
        ["git", "-C", str(root), "-c", "safe.directory=*", "grep", "-n", "-F", "-e", needle, tag, "--", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.splitlines()[0].split(":")[2])


@pytest.fixture
def real(monkeypatch, tmp_path):
    from gfxgate.sources.resolve import SourceSet, load_pins

    root = Path(UPSTREAM)
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(root / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA_PYTHON", str(root / "ollama-python"))
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "cache"))
    if (root / "llama.cpp").exists():
        monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(root / "llama.cpp"))
    made = []

    def make(**refs):
        ss = SourceSet(load_pins().with_pin_set("study"), refs=refs, offline=True)  # the seed study's versions
        made.append(ss)
        return ss

    yield make
    for ss in made:
        ss.close()


def _trace(real, option, **refs):
    from gfxgate.trace import load_trace_rules, trace_option

    return trace_option(load_trace_rules().traces[option], real(**refs))


def test_num_gpu_at_the_seed_versions(real):
    result = _trace(real, "num_gpu")
    expect = {
        "client": ("ollama-python", "v0.6.1", "ollama/_types.py", "num_gpu: Optional[int]"),
        "cli-help": ("ollama", "v0.17.5", "cmd/interactive.go", "/set parameter num_gpu"),
        "server": ("ollama", "v0.17.5", "llm/server.go", "assignLayers(layers, gl, requireFull, s.options.NumGPU"),
        "runner-bridge": ("ollama", "v0.17.5", "llama/llama.go", "cparams.n_gpu_layers = C.int(params.NumGpuLayers)"),
        "llama-cpp": (
            "ollama",
            "v0.17.5",
            "llama/llama.cpp/include/llama.h",
            "int32_t n_gpu_layers; // number of layers",
        ),
    }
    assert [s.spec.id for s in result.stages if s.spec.summary] == list(expect)
    for stage_id, (repo, tag, path, needle) in expect.items():
        anchor = result.stage(stage_id).anchor
        assert anchor is not None, result.stage(stage_id).reason
        assert str(anchor.location) == f"{repo}@{tag}:{path}:{_grep_line(repo, tag, path, needle)}"
    assert result.stage("server").found[1].symbol == "assignLayers(requestedLayers)"
    assert result.stage("cli-help").meaning.meaning == "The number of layers to send to the GPU"
    assert result.stage("llama-cpp").anchor.meaning == "number of layers to store in VRAM"
    assert "not a number of GPUs" in result.conclusion


def test_num_gpu_at_v0_12_3_follows_what_is_there(real):
    result = _trace(real, "num_gpu", ollama="v0.12.3")
    assert result.stage("llama-cpp").anchor.location.ref == "v0.12.3"
    assert result.stage("runner-bridge").status == "found"
    assert result.conclusion and "number of layers to store in VRAM" in result.conclusion


def test_num_gpu_after_v0_30_reaches_the_flag(real):
    tags = subprocess.run(
        ["git", "-C", str(Path(UPSTREAM) / "ollama"), "-c", "safe.directory=*", "tag", "--list", "v0.3[0-9].*"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    releases = sorted((t for t in tags if "-rc" not in t), key=lambda t: tuple(int(x) for x in t[1:].split(".")))
    if not releases:
        pytest.skip("the ollama clone has no v0.30+ tag")
    result = _trace(real, "num_gpu", ollama=releases[-1])
    bridge = result.stage("runner-bridge")
    assert bridge.found and bridge.found[0].symbol.startswith("-ngl ")
    if not (Path(UPSTREAM) / "llama.cpp").exists():
        arg = next(h for h in bridge.hops if h.id == "llama-arg")
        assert arg.status == "missing" and arg.reason.startswith("source not available")


@pytest.mark.parametrize("option", ["num_ctx", "num_thread", "main_gpu", "use_mmap"])
def test_other_options_reach_llama_h(real, option):
    result = _trace(real, option)
    sink = result.stage("llama-cpp").anchor
    assert sink is not None and sink.location.path == "llama/llama.cpp/include/llama.h" and sink.meaning


def test_env_reads_hsa_override(real):
    from gfxgate.trace import env_reads

    reads = env_reads(real(), "HSA_OVERRIDE_GFX_VERSION")
    kinds = {r.kind for r in reads}
    assert {"envconfig", "runner-env", "description"} <= kinds
    definition = next(r for r in reads if r.kind == "envconfig")
    assert definition.line == _grep_line(
        "ollama", "v0.17.5", "envconfig/config.go", 'String("HSA_OVERRIDE_GFX_VERSION")'
    )
