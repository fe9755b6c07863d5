"""Issue 28, defect 16 for ``timeline --live`` (tests/sources/test_hostile_sources.py replays it for ``history``): a
llama.cpp clone carrying 20,000 extra release-shaped tags, an ollama release naming a llama.cpp tag that does not
exist. Every rule reading ggml at every probed release looked the ref up and re-sorted every tag for its hint
(the issue: 10,000 tags 45 s and 539 MB, 30,000 over 120 s). Replayed with the issue-13 harness (< 5 s of CPU,
< 512 MB, nothing but the named output written)."""

from __future__ import annotations

import json

from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories
from tests.cli.test_replays import env, replay, work  # noqa: F401 - env, work: fixtures
from tests.sources.test_hostile_sources import live_env, ollama_with_many_llama_tags


def test_16_timeline_live_over_many_tags_orders_them_once(gfxgate_exe, work, env, upstream):
    ollama_with_many_llama_tags(work, upstream)
    run = replay(
        "16 timeline --live, 20,000 llama.cpp tags, an unknown LLAMA_CPP_VERSION",
        gfxgate_exe,
        [
            "timeline",
            "--live",
            "-t",
            "gfx900",
            "--every-tag",
            "--from",
            "v0.33.0",
            "--format",
            "json",
            "--offline",
            "--source",
            "ollama=ollama",
            "--source",
            "llama-cpp=llama.cpp.git",
        ],
        cwd=work,
        env=live_env(env, upstream),
        code=0,
    )
    timeline = json.loads(run.stdout)
    assert len(timeline["releases"]) == 40, timeline["releases"][:3]
