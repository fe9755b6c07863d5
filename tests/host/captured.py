"""Fixtures of the issue-41 replays of a captured machine (tests/host/test_captured_tree.py and
tests/doctor/test_hostile_doctor.py): a working folder, a clean environment, and a captured Vega 56 at v0.12.11."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.doctor.machines import machine


@pytest.fixture()
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture()
def env(_isolated_cache) -> dict:
    """The caller's environment without its GFXGATE_* settings; the cache is the test's own folder (tests/conftest.py
    ``_isolated_cache``: outside the watched working folder, and holding what the session seeds in it)."""
    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(_isolated_cache)
    out["NO_COLOR"] = "1"
    return out


@pytest.fixture()
def root(work) -> Path:
    return machine(work / "m", "vega56", version="0.12.11")
