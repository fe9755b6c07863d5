"""The cache folder: GFXGATE_CACHE_DIR, else platformdirs' user cache dir (XDG on Linux)."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from gfxgate import resources


def test_gfxgate_cache_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert resources.cache_dir() == tmp_path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux rule")
def test_without_it_the_xdg_cache_home_is_used(monkeypatch):
    monkeypatch.delenv("GFXGATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert resources.cache_dir() == Path("/srv/cache/gfxgate") == Path(platformdirs.user_cache_dir("gfxgate"))
