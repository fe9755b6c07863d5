"""`gfxgate trace --env NAME` / env_reads(): where each repository reads an environment variable."""

from __future__ import annotations

import dataclasses

import pytest

from gfxgate.errors import UsageError
from gfxgate.trace import env_reads, search_env
from tests.trace import fixtures as fx
from tests.trace.helpers import line_of


def _by_kind(reads):
    out = {}
    for read in reads:
        out.setdefault(read.kind, []).append(read)
    return out


def test_every_kind_of_read_with_its_line(sources):
    reads = env_reads(sources(), "HSA_OVERRIDE_GFX_VERSION")
    kinds = _by_kind(reads)
    assert set(kinds) == {"envconfig", "description", "runner-env", "getenv"}
    (definition,) = kinds["envconfig"]
    assert (definition.repo, definition.ref, definition.path) == ("ollama", "v0.17.5", "envconfig/config.go")
    assert definition.line == line_of(fx.ENVCONFIG_GO, 'String("HSA_OVERRIDE_GFX_VERSION")')
    (described,) = kinds["description"]
    assert described.meaning == "Override the gfx used for all detected AMD GPUs"
    assert described.line == line_of(fx.ENVCONFIG_GO, 'EnvVar{"HSA')
    (listed,) = kinds["runner-env"]
    assert listed.path == "discover/runner.go" and listed.function == "overrideWarnings"
    getenv = {(r.repo, r.path) for r in kinds["getenv"]}
    assert ("ollama", "discover/runner.go") in getenv  # Go os.Getenv
    assert ("ollama", "ml/backend/ggml/ggml/src/ggml-cuda/ggml-cuda.cu") in getenv  # C getenv
    assert ("ollama-python", "ollama/_client.py") in getenv  # Python os.getenv
    c_read = next(r for r in kinds["getenv"] if r.path.endswith(".cu"))
    assert c_read.function == "ggml_cuda_init" and 'getenv("HSA_OVERRIDE_GFX_VERSION")' in c_read.text
    # the test file and the log field are not reads
    assert not any(r.path.endswith("_test.go") for r in reads)
    assert len({(r.repo, r.path, r.line) for r in reads}) == len(reads)


def test_reads_are_frozen_records_for_other_modules(sources):
    read = env_reads(sources(), "GGML_CUDA_INIT")[0]
    assert {f.name for f in dataclasses.fields(read)} >= {"repo", "ref", "path", "line", "text", "kind"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.line = 1  # type: ignore[misc]
    kinds = _by_kind(env_reads(sources(), "GGML_CUDA_INIT"))
    assert kinds["env-set"][0].path == "ml/device.go"
    assert kinds["getenv"][0].text.startswith("if (std::getenv(")


def test_vendored_llama_cpp_is_searched_once(sources):
    search = search_env(sources(), "HSA_OVERRIDE_GFX_VERSION")
    assert any(repo == "llama.cpp" and "searched there" in why for repo, why in search.unavailable)
    after = search_env(sources(ollama="v0.30.0"), "HSA_OVERRIDE_GFX_VERSION")
    cpp = [r for r in after.reads if r.repo == "llama-cpp"]
    assert cpp and cpp[0].ref == "b100" and cpp[0].path == "ggml/src/ggml-cuda/ggml-cuda.cu"
    assert not after.unavailable


def test_unavailable_source_is_listed(sources, monkeypatch, tmp_path):
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(tmp_path / "missing"))
    search = search_env(sources(ollama="v0.30.0"), "HSA_OVERRIDE_GFX_VERSION")
    assert [repo for repo, _ in search.unavailable] == ["llama.cpp"]
    assert search.unavailable[0][1].startswith("source not available")
    assert any(r.kind == "envconfig" for r in search.reads)


def test_bad_name_is_a_usage_error(sources):
    with pytest.raises(UsageError):
        env_reads(sources(), "HSA OVERRIDE; rm")


def test_unknown_variable_gives_no_reads(sources):
    assert env_reads(sources(), "NO_SUCH_VARIABLE_ANYWHERE") == []
