"""Opt-in: one tiny sweep against a real Ollama server named by OLLAMA_HOST (and OLLAMA_TEST_MODEL)."""

from __future__ import annotations

import os

import pytest
from tests.sweep.sweephelp import run_inprocess

pytestmark = pytest.mark.skipif(
    not os.environ.get("OLLAMA_HOST"), reason="set OLLAMA_HOST to run against a real Ollama"
)


def test_live_cpu_run(tmp_path):
    from gfxgate.sweep.runner import parse_endpoint

    endpoint = parse_endpoint(f"live={os.environ['OLLAMA_HOST']}")
    model = os.environ.get("OLLAMA_TEST_MODEL", "qwen3.5:2b")
    _, log = run_inprocess(
        tmp_path / "w.jsonl", {"live": endpoint.url}, models=(model,), num_gpus=(0,), num_predict=4, timeout=300
    )
    (run,) = log.runs
    assert run.outcome == "ok", run.record["error"]
    assert run.record["eval_count"] and run.record["server_version"]
