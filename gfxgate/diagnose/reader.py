"""Reading logs: files, stdin or ``journalctl``, as bounded lines with the journal / colour prefixes removed.

Every line is cut to :data:`~gfxgate.diagnose.patterns.MAX_LINE` characters while it is read (a log with one
gigabyte-long line costs one bounded buffer), and an input stops after :data:`MAX_LINES` lines, with a note.
``journalctl`` runs with an argument list (never a shell) and a timeout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import IO, Iterator, NamedTuple

from gfxgate.diagnose.patterns import MAX_LINE
from gfxgate.errors import InputError

MAX_LINES = 2_000_000
JOURNAL_TIMEOUT_S = 60.0

# journalctl's prefixes: "-o short" (Dec 02 17:00:00 host ollama[123]: ), "-o short-iso", "-o short-precise".
_JOURNAL_RE = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-3]?\d \d\d:\d\d:\d\d(?:\.\d+)?|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
    r" \S+ [^\s:\[]+(?:\[\d+\])?: "
)
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# llama.cpp's common_log with --log-prefix/--log-timestamps: "0.00.035.060 I "
_LLAMA_PREFIX_RE = re.compile(r"^\d+\.\d\d\.\d\d\d\.\d\d\d [IWED] ")


class LogLine(NamedTuple):
    """One line of one input: its 1-based number, the text after prefix removal, and whether it was cut.

    A NamedTuple rather than a frozen dataclass: one is built per log line, and tuples are built several
    times faster (the benchmark reads tens of thousands of lines).
    """

    log: str  # the input's display name (path, "-", "journal:UNIT")
    number: int
    text: str
    truncated: bool = False
    journal: bool = False


@dataclass(frozen=True)
class LogInput:
    name: str
    lines: tuple[LogLine, ...]
    notes: tuple[str, ...] = ()


def strip_prefix(text: str) -> tuple[str, bool]:
    """The message part of a line: journal prefix, ANSI colours and llama.cpp's timestamp prefix removed."""
    journal = False
    head = text[:1]
    match = _JOURNAL_RE.match(text) if head.isdigit() or head.isupper() else None
    if match:
        text, journal = text[match.end():], True
    if "\x1b" in text:
        text = _ANSI_RE.sub("", text)
    match = _LLAMA_PREFIX_RE.match(text) if text[:1].isdigit() else None
    if match:
        text = text[match.end():]
    return text.rstrip("\r\n"), journal


def read_stream(name: str, handle: IO[bytes]) -> LogInput:
    lines: list[LogLine] = []
    notes: list[str] = []
    cut = 0
    number = 0
    for number, (data, truncated) in enumerate(_bounded_lines(handle), 1):
        if number > MAX_LINES:
            notes.append(f"{name}: stopped after {MAX_LINES} lines")
            break
        raw = data.decode("utf-8", errors="replace")
        if raw.startswith("-- ") and raw.rstrip().endswith("--"):
            continue  # journalctl's "-- Boot … --" / "-- No entries --" separators
        text, journal = strip_prefix(raw)
        cut += truncated
        lines.append(LogLine(name, number, text, truncated, journal))
    if cut:
        notes.append(f"{name}: {cut} line(s) longer than {MAX_LINE} characters were cut to that length before matching")
    return LogInput(name, tuple(lines), tuple(notes))


def _bounded_lines(handle: IO[bytes]) -> Iterator[tuple[bytes, bool]]:
    """Lines of at most MAX_LINE*4 bytes (UTF-8 worst case); the rest of a longer line is skipped unread-into-memory."""
    limit = MAX_LINE * 4
    while True:
        data = handle.readline(limit)
        if not data:
            return
        truncated = False
        if not data.endswith(b"\n") and len(data) >= limit:
            truncated = True
            while True:  # drain the rest of the over-long line in bounded chunks
                rest = handle.readline(limit)
                if not rest or rest.endswith(b"\n"):
                    break
        data = data.rstrip(b"\n")
        if len(data) > MAX_LINE:  # characters: decode cost is bounded by the byte limit above
            text = data.decode("utf-8", errors="replace")
            if len(text) > MAX_LINE:
                data, truncated = text[:MAX_LINE].encode("utf-8"), True
        yield data, truncated


def read_path(path: str) -> LogInput:
    """A log file (a regular file: a folder, FIFO or device is an InputError, never a hang) or ``-`` (stdin)."""
    from gfxgate.fsio import open_input

    if path == "-":
        import sys

        _check_stdin(sys.stdin)
        return read_stream("-", sys.stdin.buffer)
    try:
        with open_input(path) as handle:
            return read_stream(path, handle)
    except InputError as exc:
        raise InputError(exc.message, hint="save the log to a file, or pipe it: … | gfxgate diagnose -") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None


def _check_stdin(stdin: IO[str]) -> None:
    """``-`` reads a pipe, a socket, a regular file or a terminal; ``< /dev/zero`` (endless), a folder or a block
    device is refused (``/dev/null`` is an empty log)."""
    import os
    import stat

    from gfxgate.fsio import file_kind

    try:
        st = os.fstat(stdin.fileno())
    except (OSError, ValueError, AttributeError):  # no descriptor (embedded use, tests): read what is there
        return
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return
    if stat.S_ISCHR(mode) and (stdin.isatty() or _is_dev_null(st)):
        return
    raise InputError(f"standard input is {file_kind(mode)}, not a log", hint="pipe a log in: journalctl -u ollama | gfxgate diagnose -")


def _is_dev_null(st) -> bool:
    import os

    try:
        return os.stat(os.devnull).st_rdev == st.st_rdev
    except OSError:
        return False


def read_journal(unit: str, *, since: str | None = None, journalctl: str = "journalctl") -> LogInput:
    """``journalctl -u UNIT -o short-iso`` (host.journal: argument list, timeout); a failure is an InputError."""
    from gfxgate.host.journal import UNIT_RE, JournalError, open_journal

    if not UNIT_RE.fullmatch(unit):
        raise InputError(f"bad --journal-unit {unit!r}", hint="a systemd unit name such as ollama or ollama.service")
    try:
        with open_journal(unit, since=since, timeout=JOURNAL_TIMEOUT_S, journalctl=journalctl) as stream:
            result = read_stream(f"journal:{unit}", stream)
    except JournalError as exc:
        hint = "save the log to a file and pass its path" if exc.missing else None
        raise InputError(exc.message, hint=hint) from None
    return result
