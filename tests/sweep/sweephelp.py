"""Helpers for the sweep tests: run the sweep in-process or as `python -m gfxgate`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.sweep.ollama_server import MODEL

REPO = Path(__file__).resolve().parents[2]


def run_inprocess(worklog: Path, endpoints: dict[str, str], retry: tuple[str, ...] = (), **plan_kw):
    """Run a sweep in this process (fast), resuming from the worklog; returns (summary, parsed worklog)."""
    from gfxgate.sweep.runner import Endpoint, SweepPlan, SweepRunner
    from gfxgate.sweep.worklog import WorklogWriter, read_worklog

    defaults = dict(models=(MODEL,), num_predict=4, timeout=3.0, probe_gpu=False)
    defaults.update(plan_kw)
    plan = SweepPlan(endpoints=tuple(Endpoint(n, u) for n, u in endpoints.items()), **defaults)
    finished = read_worklog(worklog, missing_ok=True).finished_cells(retry)
    with WorklogWriter(worklog) as writer:
        summary = SweepRunner(plan, writer).run(finished)
    return summary, read_worklog(worklog)


def gfxgate_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "gfxgate", *args]


def gfxgate_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("OLLAMA_HOST", None)
    env["NO_COLOR"] = "1"
    return env


def gfxgate(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the real CLI as a subprocess (stdout/stderr captured, i.e. piped, not a TTY)."""
    return subprocess.run(
        gfxgate_argv(*args), capture_output=True, text=True, timeout=timeout, cwd=REPO, env=gfxgate_env(), check=False
    )
