"""Helpers shared by the benchmark scripts (run as scripts: this folder is on sys.path)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def wall(args: list[str], repeat: int = 5) -> float:
    """Median wall time of `python -m gfxgate ARGS` over ``repeat`` runs (whole process, start-up included)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gfxgate", *args], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)
