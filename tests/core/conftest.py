from __future__ import annotations

import pytest

from tests.conftest import shared_build
from tests.core.upstream_fixtures import (
    build_clr,
    build_fork,
    build_llama_cpp,
    build_ollama,
    build_rocblas,
    build_rocm_docs,
)


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
