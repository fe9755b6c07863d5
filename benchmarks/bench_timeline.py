"""Benchmark: `gfxgate timeline` over every ollama release and the default targets vs. `gfxgate history` once per target.

Both whole processes (`python -m gfxgate … --offline`) against a local ollama clone read in place, in the same
run, sharing one facts cache. "cold" starts with an empty cache; "warm" repeats the command with the cache the
cold run filled. The baseline is what a person would otherwise run: `history -t T` for every target, one after
the other (each reads its tags from the same cache).

    GFXGATE_SOURCE_OLLAMA=<ollama clone> python benchmarks/bench_timeline.py [--targets gfx900,gfx1030]

Target: warm timeline over all releases and targets in seconds, not minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def run(args: list[str], cache: str) -> tuple[float, str]:
    env = {**os.environ, "GFXGATE_CACHE_DIR": cache}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gfxgate", *args], capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", default=None, help="comma-separated (default: the timeline's default targets)")
    opts = parser.parse_args()
    if "GFXGATE_SOURCE_OLLAMA" not in os.environ:
        sys.exit("set GFXGATE_SOURCE_OLLAMA to a local ollama clone")
    from gfxgate.timeline.snapshot import default_targets

    targets = opts.targets.split(",") if opts.targets else default_targets()
    timeline = ["timeline", "--live", "--offline", "--format", "json"] + [a for t in targets for a in ("-t", t)]
    with tempfile.TemporaryDirectory(prefix="gfxgate-bench-") as cache:
        cold, out = run(timeline, cache)
        warm, _ = run(timeline, cache)
        data = json.loads(out)
        hist_cold = sum(run(["history", "-t", t, "--offline", "--format", "json"], cache)[0] for t in targets)
    with tempfile.TemporaryDirectory(prefix="gfxgate-bench-") as cache:
        hist_first = sum(run(["history", "-t", t, "--offline", "--format", "json"], cache)[0] for t in targets)
        hist_warm = sum(run(["history", "-t", t, "--offline", "--format", "json"], cache)[0] for t in targets)
    cells = sum(len(t["cells"]) for t in data["targets"])
    print(
        f"{len(targets)} targets × {data['range']['tags']} releases ({data['range']['from']} … {data['range']['to']}), "
        f"{data['range']['probed']} probed, {cells} cells"
    )
    print(f"timeline: cold {cold:.2f} s, warm {warm:.2f} s")
    print(
        f"history once per target: empty cache {hist_first:.2f} s, warm {hist_warm:.2f} s "
        f"(after the timeline filled the cache: {hist_cold:.2f} s)"
    )
    print(f"warm timeline vs warm history per target: {hist_warm / warm:.1f}× faster")


if __name__ == "__main__":
    main()
