from __future__ import annotations

import pytest

from tests.prcheck.conftest import history_upstream  # noqa: F401 - fixture: the synthetic upstream, built once


@pytest.fixture(scope="session")
def timeline_upstream(history_upstream):  # noqa: F811 - the fixture imported above
    """The synthetic ollama-shaped upstream of the history tests (release tags that flip, move and drift): the very
    repositories of tests/prcheck (tests/prcheck/upstream.py builds them once a run; no test writes to them)."""
    return history_upstream


@pytest.fixture
def timeline_env(timeline_upstream, monkeypatch):
    for name, path in timeline_upstream.items():
        monkeypatch.setenv(name, str(path))
    return timeline_upstream
