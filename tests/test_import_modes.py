"""The test tree is a package: every folder has ``__init__.py`` and helpers are imported as ``tests.x.y``, so the
README's ``python3 -m pytest`` (pytest's default prepend import mode) and ``--import-mode=importlib`` (which puts no
test folder on ``sys.path``) collect the same tests. Checked by one collection-only run in a subprocess (seconds),
not by running the suite twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collect(*options: str) -> set[str]:
    """The test ids a collection-only run finds. Plain asserts: which modules import and which tests they hold is
    the claim, not the rewritten assert statements (rewriting every module's asserts was 5 of the 8 s of CPU). No
    entry-point plugin but pytest-xdist (whose hooks tests/conftest.py implements): which modules import is not about
    hypothesis's or anyio's plugin, which scanned or imported more at each start."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "--assert=plain",
            "-p",
            "xdist.plugin",
            *options,
            "tests",
        ],
        cwd=REPO,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, f"collection failed ({' '.join(options)}):\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    return {line for line in run.stdout.splitlines() if "::" in line}


def test_every_test_folder_is_a_package():
    folders = {p.parent for p in (REPO / "tests").rglob("*.py") if "__pycache__" not in p.parts}
    missing = sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file())
    assert missing == []


def test_importlib_mode_collects_the_same_tests(request):
    importlib_ids = collect("--import-mode=importlib")
    session_ids = {item.nodeid for item in request.session.items}
    # Whatever this session runs, importlib mode collects it too.
    assert session_ids - importlib_ids == set()
    option = request.config.option
    whole_suite = (
        option.importmode == "prepend"
        and not option.keyword
        and not option.markexpr
        and not request.config.getoption("deselect")
        and {i.split("::")[0] for i in session_ids} == {i.split("::")[0] for i in importlib_ids}
    )
    # ... and nothing more: equal when this session is the README's run of every file (else a prepend-mode
    # collection of the same tree is the reference).
    reference = session_ids if whole_suite else collect("--import-mode=prepend")
    assert importlib_ids == reference
    assert len(importlib_ids) > 500
