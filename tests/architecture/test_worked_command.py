"""ARCHITECTURE.md's worked example of a new command, run: ``worked_command/`` holds the use case
(``app/rocblas.py``) and the click module (``cli/rocblas.py``) the page tells a maintainer to write; a fresh process
puts the two folders on ``gfxgate.app.__path__`` and ``gfxgate.cli.__path__`` (what a module in those packages has
that these folders have not) and adds the ``COMMANDS`` line of step 4, then runs the console entry point. The
use-case rule of ``test_use_cases.py`` holds the new module as it holds the shipped ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.test_use_cases import check_imports, check_one_use_case
from tests.doctor.machines import machine

EXAMPLE = Path(__file__).resolve().parent / "worked_command"

_RUN = """
import sys
import gfxgate.app
import gfxgate.cli
gfxgate.app.__path__.append(sys.argv[1])
gfxgate.cli.__path__.append(sys.argv[2])
gfxgate.cli.COMMANDS["rocblas"] = ("gfxgate.cli.rocblas", "rocblas", "The rocBLAS / Tensile files an install has.")
from gfxgate.cli import main
main(sys.argv[3:])
"""


def _gfxgate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _RUN, str(EXAMPLE / "app"), str(EXAMPLE / "cli"), *args],
        cwd=cwd,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def install(tmp_path: Path) -> Path:
    """A captured machine's Ollama libraries: a ROCm runner with rocBLAS Tensile files for gfx1030 and gfx1100."""
    return machine(tmp_path / "machine", "rx6700xt", version="0.12.3") / "usr/local/lib/ollama"


def test_the_new_command_is_listed_and_answers(install, tmp_path):
    listed = _gfxgate("--help", cwd=tmp_path)
    assert listed.returncode == 0 and "rocblas      The rocBLAS / Tensile files an install has." in listed.stdout
    run = _gfxgate("rocblas", "-t", "gfx1030", str(install), "--format", "json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    files = {Path(f["path"]).name: f["library"]["target"] for f in data["files"]}
    assert files == {"TensileLibrary_lazy_gfx1030.dat": "gfx1030", "TensileLibrary_lazy_gfx1100.dat": "gfx1100"}
    cells = {(a["layer"], a["target"]): a["status"] for a in data["answers"]}
    assert cells[("rocblas-artifacts", "gfx1030")] == "partial"  # named for it; no code object confirms it


def test_the_new_command_fails_as_every_command_does(tmp_path):
    run = _gfxgate("rocblas", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("gfxgate: error: name at least one --target")
    run = _gfxgate("rocblas", "-t", "gfx9999", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 2 and "unknown GPU target 'gfx9999'" in run.stderr and "Traceback" not in run.stderr


def test_the_new_command_keeps_the_use_case_rule(monkeypatch):
    import gfxgate.app

    monkeypatch.setattr(gfxgate.app, "__path__", [*gfxgate.app.__path__, str(EXAMPLE / "app")])
    try:
        check_one_use_case("gfxgate.cli.rocblas", EXAMPLE / "cli" / "rocblas.py")
        check_imports("gfxgate.cli.rocblas", EXAMPLE / "cli" / "rocblas.py")
    finally:
        sys.modules.pop("gfxgate.app.rocblas", None)
