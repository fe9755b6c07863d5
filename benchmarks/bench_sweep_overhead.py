"""The llama-server sweep's own cost per cell, beside the inference it measures.

    python benchmarks/bench_sweep_overhead.py [--repeat 5] [--num-predict 32] [--backends cpu,vulkan]

Runs ``gfxgate sweep``'s runner in process against Debian sid's real llama-server (the tests' fixture:
tests/reallama.py; downloaded once into the user cache; Vulkan needs lavapipe, ``mesa-vulkan-drivers``) on the
tiny random llama model, num_gpu 0,1,2,-1 × repeats, and reports medians per backend set of:

* spawn       — ``Popen`` of the server command
* health wait — spawn → ``/health`` 200 (the server's start-up and model load, plus ≤ 20 ms poll granularity);
  "poll lag" is the part after the log's own ``model loaded`` time stamp (llama.cpp's ``M.SS.mmm.uuu``)
* completion  — the ``/completion`` request (llama.cpp's prompt + eval time is inside it)
* stop        — SIGTERM → exit
* bookkeeping — everything else in the cell: reading and parsing the log, the record, the fsync'd append
* cell        — the whole cell as the progress hook sees it

Warm Mesa shader cache (one untimed warm-up sweep first).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from gfxgate.sweep.llamaserver import LlamaServerEndpoint, model_labels  # noqa: E402
from gfxgate.sweep.runner import NoProgress, SweepPlan, SweepRunner  # noqa: E402
from gfxgate.sweep.worklog import WorklogWriter, read_worklog  # noqa: E402
from tests.reallama import prepare  # noqa: E402


class Clock(NoProgress):
    def __init__(self) -> None:
        self.cells: dict[str, float] = {}
        self._t = 0.0

    def run_started(self, cell) -> None:
        self._t = time.perf_counter()

    def run_finished(self, cell, record) -> None:
        self.cells[record["run_id"]] = time.perf_counter() - self._t


STAMP = re.compile(r"^(\d+)\.(\d\d)\.(\d{3})\.(\d{3}) I .*llama_server: model loaded")


def loaded_at(log: Path) -> float | None:
    """Seconds from the server's start to its 'model loaded' line, by llama.cpp's own clock."""
    for line in log.read_text(errors="replace").splitlines():
        match = STAMP.match(line)
        if match:
            m, sec, ms, us = (int(g) for g in match.groups())
            return m * 60 + sec + ms / 1e3 + us / 1e6
    return None


def sweep(endpoints, model: Path, repeat: int, num_predict: int, folder: Path) -> tuple[list, Clock]:
    plan = SweepPlan(
        endpoints=tuple(LlamaServerEndpoint(name, tuple(argv), model_labels([model])) for name, argv in endpoints),
        models=(),
        num_gpus=(0, 1, 2, -1),
        repeats=repeat,
        num_predict=num_predict,
        timeout=600.0,
        probe_gpu=False,
    )
    worklog = folder / f"w-{time.monotonic_ns()}.jsonl"
    clock = Clock()
    with WorklogWriter(worklog) as writer:
        SweepRunner(plan, writer, clock).run()
    return list(read_worklog(worklog).runs), clock


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--num-predict", type=int, default=32)
    parser.add_argument("--backends", default="cpu,vulkan")
    args = parser.parse_args()
    llama = prepare()
    endpoints = [(name, llama.command(name)) for name in args.backends.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        sweep(endpoints, llama.model, 1, 4, Path(tmp))  # warm-up: shader cache, page cache
        runs, clock = sweep(endpoints, llama.model, args.repeat, args.num_predict, Path(tmp))
        loaded = {r.run_id: loaded_at(Path(r.get("server_log"))) for r in runs}
    print(f"{len(runs)} cells, num_gpu 0,1,2,-1 × {args.repeat}, num_predict {args.num_predict}; medians in ms\n")
    print(
        "| backend set | spawn | health wait (poll lag) | completion (llama.cpp prompt+eval) | stop | bookkeeping | cell | overhead share |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, _ in endpoints:
        mine = [r for r in runs if r.endpoint == name]
        assert all(r.ok for r in mine), [(r.run_id, r.get("error")) for r in mine if not r.ok]

        def med(values):
            return statistics.median(values) * 1000

        spawn = med(r.get("overhead")["spawn_s"] for r in mine)
        health = med(r.get("overhead")["health_wait_s"] for r in mine)
        lag = med(r.get("overhead")["health_wait_s"] - loaded[r.run_id] for r in mine)
        completion = med(r.get("overhead")["completion_s"] for r in mine)
        inner = med((r.get("durations_ns")["prompt_eval"] + r.get("durations_ns")["eval"]) / 1e9 for r in mine)
        stop = med(r.get("overhead")["stop_s"] for r in mine)
        cell = med(clock.cells[r.run_id] for r in mine)
        book = med(
            clock.cells[r.run_id]
            - sum(r.get("overhead")[k] for k in ("spawn_s", "health_wait_s", "completion_s", "stop_s"))
            for r in mine
        )
        share = 100 * (spawn + lag + stop + book) / cell
        print(
            f"| {name} | {spawn:.1f} | {health:.0f} ({lag:.0f}) | {completion:.0f} ({inner:.0f}) | {stop:.1f} | {book:.1f} | {cell:.0f} | {share:.1f} % |"
        )
    print(
        "\noverhead share = (spawn + poll lag + stop + bookkeeping) / cell; the rest of the health wait is the server's own start-up and load."
    )


if __name__ == "__main__":
    main()
