from __future__ import annotations

import pytest

from tests.conftest import shared_build
from tests.prcheck.upstream import build_upstream


@pytest.fixture(scope="session")
def timeline_upstream(tmp_path_factory):
    """The synthetic ollama-shaped upstream of the history tests (release tags that flip, move and drift)."""
    return shared_build(tmp_path_factory, "timeline-upstream", build_upstream)


@pytest.fixture
def timeline_env(timeline_upstream, monkeypatch):
    for name, path in timeline_upstream.items():
        monkeypatch.setenv(name, str(path))
    return timeline_upstream
