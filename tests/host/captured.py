"""Fixtures of the issue-41 replays of a captured machine (tests/host/test_captured_tree.py and
tests/doctor/test_hostile_doctor.py): a working folder, a clean environment, and a captured Vega 56 at v0.12.11."""

from __future__ import annotations

import hashlib
import os
import stat
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


def capture_state(folder: Path) -> dict[str, tuple]:
    """Every entry under ``folder`` (links not followed): type, inode, mode, size, mtime, link target, and for a
    regular file its content: its hash, "sparse" for a file with no data block at all (it reads as zeros), or
    "empty" for a file of size 0 (it holds nothing to hash: its size says its content).

    The check of a capture that lies beside the replay's watched working folder (tests/cli/test_replays.py
    ``replay`` hashes every file it watches, before and after): a capture of thousands of empty or sparse files
    would cost seconds of hashing there, the product's own run a fraction of one. Asserting the capture's state is
    the same after the run is as strong: every entry with the same type, inode, mode, size and mtime, no sparse
    file given a data block (still all zeros, as written), every other non-empty file with the same content hash."""
    out: dict[str, tuple] = {}
    pending = [("", str(folder))]
    while pending:  # os.scandir's entries: one lstat each, no path object per entry (60,000 entries here and there)
        prefix, parent = pending.pop()
        with os.scandir(parent) as entries:
            for entry in entries:
                name = prefix + entry.name
                st = entry.stat(follow_symlinks=False)
                content = None
                if stat.S_ISDIR(st.st_mode):
                    pending.append((name + "/", entry.path))
                elif stat.S_ISLNK(st.st_mode):
                    content = os.readlink(entry.path)
                elif stat.S_ISREG(st.st_mode):
                    if st.st_size == 0:
                        content = "empty"
                    elif st.st_blocks == 0:
                        content = "sparse"
                    else:
                        content = hashlib.sha256(Path(entry.path).read_bytes()).hexdigest()
                if stat.S_ISDIR(st.st_mode):
                    out[name] = (st.st_mode, st.st_ino, None, None, None)
                else:
                    out[name] = (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns, content)
    return out
