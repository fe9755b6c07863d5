"""The in-process command line (``tests/inprocess.py``, the ``gfxgate_cli`` fixture) answers what the installed
script answers, call after call, and leaves this process as it found it (issue 40)."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.inprocess import gfxgate

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log"

COMMANDS = [
    ("scan", "-t", "gfx900"),
    ("scan", "-t", "gfx1031", "--format", "json"),
    ("targets", "gfx900"),
    ("diagnose", str(LOG), "--no-upstream"),
    ("diagnose", str(LOG), "--no-upstream", "--format", "json"),
    ("targets", "gfx9999"),  # an unknown target: an error line and its exit code
    ("scan", "--no-such-option"),  # click's usage error
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a)[:40])
def test_two_calls_in_a_row_answer_what_the_installed_script_answers(gfxgate_exe, args):
    script = subprocess.run([gfxgate_exe, *args], capture_output=True, text=True, timeout=120)
    first, second = gfxgate(*args), gfxgate(*args)
    for result in (first, second):
        assert (result.returncode, result.stdout, result.stderr) == (script.returncode, script.stdout, script.stderr)
    assert first.args == ["gfxgate", *args]


def test_a_call_leaves_the_environment_folder_streams_signals_and_logging_as_they_were(tmp_path, monkeypatch):
    monkeypatch.setenv("GFXGATE_TEST_MARK", "kept")
    environ, cwd, streams = dict(os.environ), os.getcwd(), (sys.stdin, sys.stdout, sys.stderr)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE)}
    root = list(logging.getLogger().handlers)
    result = gfxgate("targets", "gfx900", env={"PATH": os.environ["PATH"], "GFXGATE_DEBUG": "1"}, cwd=tmp_path)
    assert result.returncode == 0 and "gfx900" in result.stdout
    assert dict(os.environ) == environ and os.getcwd() == cwd and (sys.stdin, sys.stdout, sys.stderr) == streams
    assert {s: signal.getsignal(s) for s in handlers} == handlers
    assert logging.getLogger().handlers == root


def test_env_is_the_whole_environment_and_cwd_the_folder_as_for_a_subprocess(tmp_path):
    cache = tmp_path / "cache"
    log = tmp_path / "ollama.log"
    log.write_bytes(LOG.read_bytes())
    env = {**os.environ, "GFXGATE_CACHE_DIR": str(cache)}
    inproc = gfxgate("diagnose", "ollama.log", "--no-upstream", env=env, cwd=tmp_path)
    assert inproc.returncode == 0, inproc.stderr
    assert "GFXGATE_CACHE_DIR" in os.environ and os.environ["GFXGATE_CACHE_DIR"] != str(cache)
    assert cache.is_dir()  # the command used the environment it was given


def test_input_is_stdin_and_bytes_come_back_as_bytes():
    result = gfxgate("diagnose", "-", "--no-upstream", input=LOG.read_text(encoding="utf-8"), text=False)
    assert result.returncode == 0, result.stderr
    assert isinstance(result.stdout, bytes) and b"gfx" in result.stdout


def test_the_example_of_docs_testing_md_runs(gfxgate_cli, tmp_path):
    """The example of docs/testing.md's "Running a command in a test", run as the test it shows."""
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    marker = "<!-- check: tested-by tests/test_inprocess.py -->\n```python\n"
    source = page[page.index(marker) + len(marker) :].split("```", 1)[0]
    scope: dict = {}
    exec(compile(source, "docs/testing.md", "exec"), scope)  # noqa: S102 - the page's own example
    [test] = [value for name, value in scope.items() if name.startswith("test_")]
    test(gfxgate_cli, tmp_path)
