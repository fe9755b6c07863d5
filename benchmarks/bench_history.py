"""Benchmark: `gfxgate history` of every layer for one target over ~100 ollama release tags.

Whole process (`python -m gfxgate history … --offline`), against a local ollama clone read in
place. "cold" starts with an empty facts cache (the git objects are local either way); "warm"
is the same command again, facts served from the cache. Bisection and --every-tag both measured.

    GFXGATE_SOURCE_OLLAMA=<ollama clone> python benchmarks/bench_history.py [--tags 100] [--to TAG]

Target: warm, bisection, < 10 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def release_window(count: int, last: str | None) -> list[str]:
    from gfxgate.history.walk import release_tags, tag_commits
    from gfxgate.sources.gitrepo import local_git_dir
    from pathlib import Path

    git_dir = local_git_dir(Path(os.environ["GFXGATE_SOURCE_OLLAMA"]))
    tags = release_tags(sorted(tag_commits(git_dir)), r"^v\d+\.\d+\.\d+$")
    end = tags.index(last) + 1 if last else len(tags)
    return tags[max(0, end - count) : end]


def run(args: list[str], cache: str) -> tuple[float, dict]:
    env = {**os.environ, "GFXGATE_CACHE_DIR": cache}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gfxgate", *args], capture_output=True, text=True, env=env, check=True)
    return time.perf_counter() - start, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tags", type=int, default=100)
    parser.add_argument("--to", default=None)
    parser.add_argument("--target", default="gfx900")
    opts = parser.parse_args()
    if "GFXGATE_SOURCE_OLLAMA" not in os.environ:
        sys.exit("set GFXGATE_SOURCE_OLLAMA to a local ollama clone")
    window = release_window(opts.tags, opts.to)
    base = ["history", "-t", opts.target, "--from", window[0], "--to", window[-1], "--offline", "--format", "json"]
    print(f"{len(window)} release tags {window[0]} … {window[-1]}, target {opts.target}, every layer")
    for label, extra in (("bisect", []), ("every tag", ["--every-tag"])):
        with tempfile.TemporaryDirectory(prefix="gfxgate-bench-") as cache:
            cold, data = run(base + extra, cache)
            warm, _ = run(base + extra, cache)
        flips = [(layer["id"], c["tag"]) for layer in data["layers"] for t in layer["targets"] for c in t["changes"]]
        print(
            f"{label:9}: cold {cold:.2f} s, warm {warm:.2f} s (target < 10 s), {data['range']['probed']} probes, "
            f"{len(flips)} changes"
        )
    for layer_id, tag in flips:
        print(f"  {layer_id:18} {tag}")


if __name__ == "__main__":
    main()
