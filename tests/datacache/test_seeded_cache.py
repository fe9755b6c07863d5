"""The cache folder a test starts with (tests/cacheseed.py, tests/conftest.py ``_isolated_cache``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gfxgate import datacache
from tests.cacheseed import files


def _cache() -> Path:
    return Path(os.environ["GFXGATE_CACHE_DIR"])


def test_a_test_starts_with_a_copy_of_the_runs_seed(_cache_seed, gfxgate_cli):
    cache = _cache()
    assert _cache_seed and all(seed.parent != cache for seed in _cache_seed)  # a copy, never the seed itself
    assert sorted(p.name for p in files(cache)) == sorted(p.name for p in _cache_seed)
    for seed in _cache_seed:
        assert (cache / seed.name).read_bytes() == seed.read_bytes()
    assert datacache.cache_file().name in {p.name for p in _cache_seed}  # the rules cache is in it
    # what a user's second run sees: a scan stores nothing new
    before = {p.name: p.read_bytes() for p in files(cache)}
    assert gfxgate_cli("scan", "-t", "gfx900", "--offline").returncode == 0
    assert {p.name: p.read_bytes() for p in files(cache)} == before


@pytest.mark.empty_cache
def test_a_test_of_the_cache_itself_starts_empty(gfxgate_cli):
    cache = _cache()
    assert list(cache.iterdir()) == []
    assert gfxgate_cli("scan", "-t", "gfx900", "--offline").returncode == 0
    assert datacache.cache_file().is_file()  # a first run writes it
