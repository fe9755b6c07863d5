"""Benchmark: `gfxgate trace` over three repositories at the pins (warm cache), target < 2 s.

ollama-python, ollama and llama.cpp (vendored in ollama before v0.30, else the LLAMA_CPP_VERSION tag).
Also counts the files parsed (only those the `git grep` pre-filter finds, each once) against the files
under the hops' path globs that a parse-everything engine would have to parse.

    GFXGATE_SOURCE_OLLAMA=<clone> GFXGATE_SOURCE_OLLAMA_PYTHON=<clone> python benchmarks/bench_trace.py
    python benchmarks/bench_trace.py        # pinned URLs; run once online to warm the cache
"""

from __future__ import annotations

import time

from benchlib import wall

OPTIONS = ("num_gpu", "num_ctx", "num_thread", "main_gpu", "use_mmap")


def in_process() -> tuple[float, int, int]:
    """(seconds for all five options + one env search, files parsed, source files under the hops' globs)."""
    from gfxgate.sources.resolve import SourceSet, load_pins
    from gfxgate.trace import load_trace_rules, search_env, trace_option
    from gfxgate.trace.hops import HopContext
    from gfxgate.trace.syntax import language_of

    rules = load_trace_rules()
    start = time.perf_counter()
    sources = SourceSet(load_pins(), offline=True)
    ctx = HopContext(sources)
    for option in OPTIONS:
        trace_option(rules.traces[option], sources, ctx)
    search_env(sources, "HSA_OVERRIDE_GFX_VERSION", ctx=ctx)
    filtered, parsed = time.perf_counter() - start, ctx.cache.parsed
    sources.close()

    # what an engine without the pre-filter would parse: every source file under the hops' globs
    sources = SourceSet(load_pins(), offline=True)
    ctx = HopContext(sources)
    under_globs: set[tuple[str, str]] = set()
    for rule in rules.traces.values():
        for stage in rule.stages:
            for route in stage.routes:
                for hop in route.hops:
                    globs = [g for g in hop.params.get("paths", []) if "{" not in g]
                    try:
                        source = ctx.source(hop.repo)
                    except Exception:  # noqa: BLE001 - an unavailable source is skipped in both runs
                        continue
                    under_globs |= {
                        (source.name + getattr(source, "root", ""), p)
                        for p in ctx.files(source, globs)
                        if language_of(p)
                    }
    sources.close()
    return filtered, parsed, len(under_globs)


def main() -> None:
    for option in ("num_gpu",):
        wall(["trace", option, "--offline"], repeat=1)  # warm the cache
    one = wall(["trace", "num_gpu", "--offline", "--format", "json"])
    env = wall(["trace", "--env", "HSA_OVERRIDE_GFX_VERSION", "--offline", "--format", "json"])
    print(f"gfxgate trace num_gpu, whole process      : {one:.3f} s (target < 2.0 s)")
    print(f"gfxgate trace --env HSA_OVERRIDE_GFX_VERSION: {env:.3f} s")
    seconds, parsed, under_globs = in_process()
    print(
        f"in-process, 5 options + env search: {seconds:.3f} s; {parsed} files parsed, each once "
        f"(of {under_globs} source files under the hops' globs)"
    )


if __name__ == "__main__":
    main()
