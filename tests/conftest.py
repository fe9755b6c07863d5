"""Shared fixtures: an isolated gfxgate cache, and a builder of real git repositories with tags."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache folder; nothing touches the user's real cache or network."""
    cache = tmp_path_factory.mktemp("gfxgate-cache")
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(cache))
    for name in list(os.environ):
        if name.startswith("GFXGATE_SOURCE_"):
            monkeypatch.delenv(name)
    yield cache


def require_tool(name: str) -> str:
    """Path of a system tool the tests need; in CI (CI=true) its absence is a failure, not a skip."""
    import shutil

    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (.ci/run installs it with apt-get)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def clang19() -> str:
    return require_tool("clang-19")


def installed_gfxgate() -> str:
    """The console script installed with this interpreter (`pip install -e .` put it next to python)."""
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "gfxgate"
    if beside.is_file():
        return str(beside)
    found = shutil.which("gfxgate")
    if found is None:
        pytest.fail("the gfxgate console script is not installed (python3 -m pip install -e '.[test]')")
    return found


@pytest.fixture(scope="session")
def gfxgate_exe() -> str:
    return installed_gfxgate()
