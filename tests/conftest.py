"""Shared fixtures: an isolated gfxgate cache, and a builder of real git repositories with tags."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parents[1]
# Files of this checkout that commands write when asked to (pins bump, snapshot build, samples, goldens): the tests
# write only temporary copies, and the session fails when one of these changed while it ran.
GUARDED = ("rules", "samples", "tests/prcheck/golden")
_GUARD = pytest.StashKey[dict]()


def _guarded_files() -> dict[str, tuple[int, int, int]]:
    found = {}
    for folder in GUARDED:
        for path in (CHECKOUT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                st = path.stat()
                found[path.relative_to(CHECKOUT).as_posix()] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return found


def pytest_sessionstart(session):
    session.config.stash[_GUARD] = _guarded_files()


def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(_GUARD, None)
    if before is None:
        return
    after = _guarded_files()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(f"checkout files written during the test run (tests must use temporary copies): "
                                f"{', '.join(changed)}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


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
