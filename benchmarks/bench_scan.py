"""Benchmark: `gfxgate scan` wall time, 1 target vs 8 targets, snapshot and live (warm cache).

Baseline in the same run: evaluating 8 targets by re-running extraction per target (what a
naive per-target scan would do) vs. the engine's extract-once / evaluate-per-target design.

    python benchmarks/bench_scan.py                       # snapshot mode only
    GFXGATE_SOURCE_OLLAMA=<clone> GFXGATE_SOURCE_ROCM_DOCS=<clone> python benchmarks/bench_scan.py --live
"""

from __future__ import annotations

import sys
import time

from benchlib import wall

TARGETS8 = "gfx803,gfx900,gfx906,gfx908,gfx90a,gfx1030,gfx1100,gfx1201"


def in_process(live: bool) -> tuple[float, float]:
    from gfxgate.gate.engine import build_matrix, collect_facts
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.sources.resolve import SourceSet, load_pins
    from gfxgate.targets import catalog

    cat, rules, pins = catalog(), default_rules(), load_pins()
    targets = [cat.parse(t) for t in TARGETS8.split(",")]
    start = time.perf_counter()
    sources = SourceSet(pins, offline=True)
    facts = collect_facts(rules, sources)
    build_matrix(rules, facts, targets, cat)
    once = time.perf_counter() - start
    start = time.perf_counter()
    for target in targets:  # baseline: extract again for every target
        sources = SourceSet(pins, offline=True)
        build_matrix(rules, collect_facts(rules, sources), [target], cat)
    per_target = time.perf_counter() - start
    return once, per_target


def main() -> None:
    live = "--live" in sys.argv
    mode = ["--live", "--offline"] if live else []
    one = wall(["scan", "-t", "gfx900", "--format", "json", *mode])
    eight = wall(["scan", "-t", TARGETS8, "--format", "json", *mode])
    print(f"{'live' if live else 'snapshot'} scan, 1 target : {one:.3f} s (target < 1.0 s)")
    print(f"{'live' if live else 'snapshot'} scan, 8 targets: {eight:.3f} s (target < 1.5 s)")
    if live:
        once, per_target = in_process(live)
        print(
            f"in-process 8 targets: extract once {once:.3f} s vs extract per target {per_target:.3f} s "
            f"({per_target / once:.1f}x)"
        )


if __name__ == "__main__":
    main()
