from __future__ import annotations

import pytest

from tests.prcheck.upstream import build_upstream


@pytest.fixture(scope="session")
def history_upstream(tmp_path_factory):
    """Paths of the synthetic upstream repositories (built once per session)."""
    return build_upstream(tmp_path_factory.mktemp("prcheck-upstream"))


@pytest.fixture
def history_env(history_upstream, monkeypatch):
    """Point ollama and rocm-docs at the synthetic repositories, the way a lab mirror would."""
    for name, path in history_upstream.items():
        monkeypatch.setenv(name, str(path))
    return history_upstream
