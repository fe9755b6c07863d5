"""Fixtures for the sweep tests: real Ollama-API servers on 127.0.0.1 (see ollama_server.py)."""

from __future__ import annotations

import pytest

from tests.sweep.ollama_server import Behaviour, FakeOllama


@pytest.fixture
def ollama_server():
    """Start servers with ``ollama_server(mode=..., log_path=...)``; all are stopped after the test."""
    started: list[FakeOllama] = []

    def start(**behaviour) -> FakeOllama:
        server = FakeOllama(Behaviour(**behaviour)).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
