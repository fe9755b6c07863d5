"""Helpers for the sweep tests: run the sweep in-process, the command line in process, or `python -m gfxgate`."""

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
    """Run the CLI in process (tests/inprocess.py: stdout/stderr captured, not a TTY); ``gfxgate_argv`` with
    ``gfxgate_env`` starts it as a process where a test needs one (signals, a terminal)."""
    from tests.inprocess import gfxgate as in_process

    return in_process(*args, cwd=REPO, env=gfxgate_env(), timeout=timeout)
