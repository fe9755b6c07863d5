"""The systemd journal, read through ``journalctl``: the one reader behind ``diagnose --journal-unit`` (a stream)
and the sweep's journald window of a run (its lines).

``journalctl`` runs with an argument list (the unit is checked to be a unit name, so it can never be an option),
in its own process group (``host.proc``), and the whole read is bounded by a timeout, not only the wait after it:
at the limit the group is killed, which ends the read. stderr goes to a temporary file, so a chatty journalctl
cannot fill a pipe and deadlock the reader.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import signal
import tempfile
import threading
from typing import IO, Iterator

from gfxgate.host import proc

UNIT_RE = re.compile(r"[\w@.:-]+")
MAX_ERROR_BYTES = 4096


class JournalError(Exception):
    """journalctl is missing, could not run, failed or ran past its limit; the caller decides what that means
    (an input error for ``diagnose``, a note in the sweep's worklog)."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.missing = missing  # journalctl is not on PATH


def journal_argv(
    unit: str, *, since: str | None = None, until: str | None = None, journalctl: str = "journalctl"
) -> list[str]:
    """``journalctl -u UNIT [--since S] [--until U] -o short-iso --no-pager -q``."""
    argv = [journalctl, "-u", unit]
    if since:
        argv += ["--since", since]
    if until:
        argv += ["--until", until]
    return argv + ["-o", "short-iso", "--no-pager", "-q"]


@contextlib.contextmanager
def open_journal(
    unit: str, *, timeout: float, since: str | None = None, until: str | None = None, journalctl: str = "journalctl"
) -> Iterator[IO[bytes]]:
    """journalctl's stdout as a binary stream, read within ``timeout`` seconds; raises :class:`JournalError`
    (also after the block: the limit expired, or journalctl exited with a failure status)."""
    if not UNIT_RE.fullmatch(unit):
        raise JournalError(f"bad unit name {unit!r}")
    exe = shutil.which(journalctl)
    if exe is None:
        raise JournalError(f"{journalctl} is not installed (not on PATH)", missing=True)
    expired = threading.Event()
    with tempfile.TemporaryFile() as errors:
        try:
            process = proc.spawn(
                journal_argv(unit, since=since, until=until, journalctl=exe),
                stdout=proc.PIPE,
                stderr=errors,
                die_with_parent=True,
            )
        except OSError as exc:
            raise JournalError(f"{journalctl} could not run: {exc.strerror or exc}") from None

        def stop() -> None:  # the whole read is bounded: killing the group ends it
            expired.set()
            process.signal_group(signal.SIGKILL)

        timer = threading.Timer(timeout, stop)
        timer.start()
        try:
            with process:
                assert process.stdout is not None
                yield process.stdout
                if process.stdout.closed:  # the reader took what it wanted and closed the stream: no verdict
                    return
                rc = process.wait()  # the timer ends it at the limit
        finally:
            timer.cancel()
        if expired.is_set():
            raise JournalError(f"{journalctl} did not finish within {timeout:g} s")
        if rc != 0:
            errors.seek(0)
            detail = " ".join(errors.read(MAX_ERROR_BYTES).decode("utf-8", "replace").split())[:200]
            raise JournalError(f"{journalctl} -u {unit} exited with status {rc}" + (f": {detail}" if detail else ""))


def journal_lines(
    unit: str, *, timeout: float, since: str | None = None, until: str | None = None, max_bytes: int
) -> tuple[list[str], bool]:
    """The journal's lines (UTF-8, undecodable bytes replaced), at most ``max_bytes`` of them read: (lines,
    whether the read stopped at that budget, keeping the oldest part). Raises :class:`JournalError`."""
    with open_journal(unit, timeout=timeout, since=since, until=until) as stream:
        data = stream.read(max_bytes + 1)
        cut = len(data) > max_bytes
        if cut:
            data = data[: data.rfind(b"\n", 0, max_bytes) + 1]
            stream.close()  # journalctl ends on the closed pipe; the group is killed at the end anyway
    return data.decode("utf-8", "replace").splitlines(), cut
