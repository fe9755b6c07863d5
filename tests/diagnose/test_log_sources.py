"""Every log source is checked to be a regular file (issue 13): a folder, FIFO or device named as a log — to
`diagnose`, `scan --log`, `sweep --server-log` — is one line and exit 6 at once, never a hang or an endless read;
standard input and journalctl are bounded too. Through the installed console script.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.cputime import cpu_time
from tests.diagnose import logs


def _special(tmp_path: Path, kind: str) -> tuple[str, str]:
    """(path, what the error calls it) of a real folder, FIFO (no writer) or device."""
    if kind == "folder":
        (tmp_path / "dir.log").mkdir()
        return str(tmp_path / "dir.log"), "a folder"
    if kind == "fifo":
        os.mkfifo(tmp_path / "fifo.log")
        return str(tmp_path / "fifo.log"), "a FIFO"
    return {"zero": "/dev/zero", "null": "/dev/null", "urandom": "/dev/urandom"}[kind], "a character device"


def _one_line(stderr: str) -> str:
    first, *rest = stderr.strip().splitlines()
    assert "Traceback" not in stderr and all(line.startswith("  hint:") for line in rest), stderr
    return first


@pytest.mark.parametrize("kind", ["folder", "fifo", "zero", "null", "urandom"])
@pytest.mark.parametrize("command", [["diagnose", "--no-upstream"], ["scan", "--target", "gfx900", "--log"]])
def test_a_log_that_is_not_a_regular_file_is_exit_6_at_once(gfxgate_exe, tmp_path, kind, command):
    path, what = _special(tmp_path, kind)
    # a process: a read that blocks (a FIFO without a writer) is cut by the timeout, not left hanging the suite
    with cpu_time() as spent:
        done = subprocess.run(
            [gfxgate_exe, *command, path], capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL
        )
    assert done.returncode == 6, done.stderr
    assert _one_line(done.stderr) == f"gfxgate: error: {path}: is {what}, not a regular file"
    assert spent.seconds < 5, spent.seconds  # CPU: nothing of an endless device was read


def test_one_fifo_among_good_logs_is_exit_6_and_no_report(gfxgate_cli, tmp_path):
    good = tmp_path / "s.log"
    good.write_text("\n".join(logs.ollama_0_12_3()) + "\n")
    fifo, _ = _special(tmp_path, "fifo")
    done = gfxgate_cli("diagnose", "--no-upstream", str(good), fifo, timeout=30)
    assert done.returncode == 6 and done.stdout == "" and "is a FIFO" in done.stderr


@pytest.mark.parametrize("source, code", [("/dev/zero", 6), ("/dev/null", 0), ("pipe", 0), ("file", 0)])
def test_standard_input(gfxgate_exe, gfxgate_cli, tmp_path, source, code):
    """`-` reads a pipe, a file or /dev/null (an empty log); an endless device is refused, not read forever."""
    data = ("\n".join(logs.ollama_0_12_3()) + "\n").encode()
    if source == "pipe":
        done = gfxgate_cli("diagnose", "--no-upstream", "-", input=data, timeout=30, text=False)
    else:
        if source == "file":
            (tmp_path / "s.log").write_bytes(data)
        with open(tmp_path / "s.log" if source == "file" else source, "rb") as stdin:
            done = subprocess.run(
                [gfxgate_exe, "diagnose", "--no-upstream", "-"], stdin=stdin, capture_output=True, timeout=30
            )
    assert done.returncode == code, done.stderr
    if code == 6:
        assert _one_line(done.stderr.decode()) == "gfxgate: error: standard input is a character device, not a log"
    elif source in ("pipe", "file"):
        assert b"discovery" in done.stdout


def test_journalctl_that_never_ends_is_stopped_at_the_limit(tmp_path, monkeypatch):
    """The limit bounds the read, not only the wait after it; stderr cannot fill a pipe and deadlock us."""
    from gfxgate.diagnose import reader
    from gfxgate.errors import InputError

    endless = tmp_path / "journalctl"  # prints one line, floods stderr past a pipe's 64 KiB, then never ends
    endless.write_text(
        "#!/bin/sh\necho 'Dec 02 17:00:00 host ollama[1]: hello'\nhead -c 200000 /dev/zero >&2\nexec sleep 300\n"
    )
    endless.chmod(0o755)
    monkeypatch.setattr(reader, "JOURNAL_TIMEOUT_S", 1.0)
    start = time.monotonic()
    with pytest.raises(InputError, match="did not finish within 1 s"):
        list(reader.read_journal("ollama", journalctl=str(endless)).batches)  # read as it is consumed
    assert time.monotonic() - start < 4
