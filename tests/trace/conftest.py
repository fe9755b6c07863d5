from __future__ import annotations

import pytest

from tests.conftest import shared_build
from tests.trace.fixtures import build_client, build_llama_cpp, build_ollama


@pytest.fixture(scope="session")
def trace_upstream(tmp_path_factory):
    """The fixture repositories, built once per test run."""

    def build(root):
        build_client(root / "ollama-python")
        build_ollama(root / "ollama")
        build_llama_cpp(root / "llama.cpp")
        return root

    return shared_build(tmp_path_factory, "trace-upstream", build)


@pytest.fixture
def trace_env(trace_upstream, monkeypatch, tmp_path):
    """Point the pinned sources at the fixtures (and the cache at a fresh folder)."""
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA", str(trace_upstream / "ollama"))
    monkeypatch.setenv("GFXGATE_SOURCE_OLLAMA_PYTHON", str(trace_upstream / "ollama-python"))
    monkeypatch.setenv("GFXGATE_SOURCE_LLAMA_CPP", str(trace_upstream / "llama.cpp"))
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "cache"))
    return trace_upstream


@pytest.fixture
def sources(trace_env):
    """A SourceSet factory: sources(ollama="v0.18.0", **{"ollama-python": "v0.5.0"}); without refs, the study's
    versions (pin set `study` of rules/pins.toml: the fixture repositories are at the seed's version)."""
    from gfxgate.sources.resolve import SourceSet, load_pins

    opened = []

    def make(**refs):
        ss = SourceSet(
            load_pins().with_pin_set("study"), refs={k.replace("_", "-"): v for k, v in refs.items()}, offline=True
        )
        opened.append(ss)
        return ss

    yield make
    for ss in opened:
        ss.close()
