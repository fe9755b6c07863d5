"""The cache folder: gfxgate's own XDG lookup on Linux must agree with platformdirs, which it stands in for."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
import pytest

from gfxgate import resources

CASES = [
    {"XDG_CACHE_HOME": "/srv/cache", "HOME": "/home/ada"},
    {"XDG_CACHE_HOME": "/srv/cache/", "HOME": "/home/ada"},
    {"XDG_CACHE_HOME": "relative/cache", "HOME": "/home/ada"},  # not absolute: ignored, as the spec says
    {"XDG_CACHE_HOME": "", "HOME": "/home/ada/"},
    {"HOME": "/home/ada"},
    {"HOME": "/"},
    {"HOME": "relative-home"},
]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG shortcut exists only on Linux")
@pytest.mark.parametrize("env", CASES, ids=[str(sorted(c.items())) for c in CASES])
def test_the_xdg_lookup_matches_platformdirs(monkeypatch, env):
    for name in ("XDG_CACHE_HOME", "HOME", "GFXGATE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        expected = Path(platformdirs.user_cache_dir("gfxgate"))
    except RuntimeError:  # platformdirs cannot find a home: gfxgate falls back to it and says the same
        with pytest.raises(RuntimeError):
            resources.cache_dir()
        return
    assert resources.cache_dir() == expected


def test_gfxgate_cache_dir_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "/srv/cache")
    assert resources.cache_dir() == tmp_path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the XDG shortcut exists only on Linux")
def test_a_plain_scan_does_not_import_platformdirs(tmp_path):
    """The point of the shortcut: a scan from the embedded snapshot starts without platformdirs."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    env.update(XDG_CACHE_HOME=str(tmp_path))
    code = ("import sys; from gfxgate.cli import main\n"
            "try:\n    main(['scan', '-t', 'gfx900', '--format', 'json'])\n"
            "except SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
            "print('platformdirs' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == "False"
    assert any((tmp_path / "gfxgate").iterdir())  # the rules cache went where platformdirs would put it
