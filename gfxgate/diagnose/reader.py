"""Reading logs: files, stdin or ``journalctl``, streamed in batches of lines; prefixes removed where matched.

An input is read :data:`CHUNK` bytes at a time and handed on as :class:`Batch` texts of whole lines; nothing
keeps every line (:mod:`gfxgate.diagnose.stream` keeps what the diagnosis needs). Every line is cut to
:data:`~gfxgate.diagnose.patterns.MAX_LINE` characters while it is read (a log with one gigabyte-long line costs
one bounded buffer), and an input stops after :data:`MAX_LINES` lines or :data:`MAX_BYTES`, with a note.
The journal / ``docker logs`` / colour / llama.cpp prefixes are removed (:func:`gfxgate.logs.prefix.strip_prefix`)
only from the lines a catalogue literal points at. ``journalctl`` runs with an argument list (never a shell) and a
timeout.
"""

from __future__ import annotations

from typing import IO, Iterator, NamedTuple, Protocol, cast
import os
import stat
import sys

from gfxgate.diagnose.patterns import MAX_LINE
from gfxgate.errors import InputError
from gfxgate.fsio import file_kind, open_input

MAX_LINES = 2_000_000
MAX_BYTES = 4 << 30  # an endless line (no newline) ends too
CHUNK = 1 << 20  # bytes read at a time: the batch the prefilter scans in one RE2 pass
JOURNAL_TIMEOUT_S = 60.0


class LogLine(NamedTuple):
    """One recognised line of one input: its 1-based number, the text after prefix removal, and whether it was cut.

    Built only for the lines a catalogue literal points at (and the crash windows), never for every line.
    """

    log: str  # the input's display name (path, "-", "journal:UNIT")
    number: int
    text: str
    truncated: bool = False
    journal: bool = False


class Batch(NamedTuple):
    """Consecutive whole lines of an input as the bytes read (``\\n`` between lines, none at the end).

    Kept as bytes: the prefilter runs on them unconverted, and only the lines it points at are decoded
    (:func:`decode_line`, which also cuts a line to MAX_LINE characters). A batch the reader yields holds the
    reader's buffer (a ``bytearray``), valid until the next batch is read; a kept batch is a copy (``bytes``).
    """

    first: int  # 0-based index of the batch's first line in the input
    text: bytes | bytearray
    line_count: int  # lines in the batch (not `count`: a tuple has a count method)

    def lines(self) -> list[bytes] | list[bytearray]:
        return self.text.split(b"\n")


def decode_line(raw: bytes | bytearray) -> tuple[str, bool]:
    """A line's text (invalid UTF-8 replaced), cut to MAX_LINE characters; and whether it was cut."""
    text = raw[: MAX_LINE * 4].decode("utf-8", errors="replace")
    if len(text) > MAX_LINE:
        return text[:MAX_LINE], len(raw) < MAX_LINE * 4  # (a line of MAX_LINE*4 bytes was cut, and said, while read)
    return text, False


class Readable(Protocol):
    """A binary stream read into a buffer (a file, standard input's buffer, a pipe)."""

    def readinto(self, buffer, /) -> int | None: ...


class LogInput:
    """An input read as it is consumed, in batches of about :data:`CHUNK` bytes: nothing keeps every line.

    ``batches`` can be iterated once; ``notes`` (lines cut, input stopped) are complete after that.
    """

    def __init__(self, name: str, batches: Iterator[Batch], notes: list[str] | None = None) -> None:
        self.name = name
        self.batches = batches
        self.notes = notes if notes is not None else []


def read_stream(name: str, handle: IO[bytes]) -> LogInput:
    notes: list[str] = []
    return LogInput(name, _batches(name, handle, notes), notes)


def _batches(name: str, handle: IO[bytes], notes: list[str]) -> Iterator[Batch]:
    """Batches of whole lines; a line over MAX_LINE*4 bytes keeps its head, the rest is skipped unread-into-memory.

    Read with ``readinto`` into one buffer that every batch reuses: a batch's ``text`` is that buffer, cut to the
    batch's lines, and holds them only until the next batch is read (:func:`gfxgate.diagnose.stream.scan` keeps
    copies of what it needs). Nothing is copied per batch but the unfinished last line, and no fresh memory is
    touched: a copy per batch page-faulted a fresh megabyte each time (a third of the time to read a log).
    """
    limit = MAX_LINE * 4
    size = limit + CHUNK
    readinto = cast(Readable, handle).readinto  # every binary stream has it (typing's IO does not say so)
    buffer = bytearray(size)
    padding = memoryview(bytes(size))  # appended as a view: no copy, no new memory
    have = 0  # bytes at the buffer's start: the unfinished last line of the read before (at most limit)
    skipping = False  # inside the unread rest of an over-long line
    cut = 0
    total = 0
    read = 0
    while total < MAX_LINES:
        if read >= MAX_BYTES:
            notes.append(f"{name}: stopped after {MAX_BYTES >> 20} MiB")
            break
        if len(buffer) < size:  # the batch before cut it: back to full size (within its allocation: no new memory)
            buffer += padding[: size - len(buffer)]
        with memoryview(buffer) as view, view[have : have + CHUNK] as space:
            got = readinto(space) or 0
        read += got
        end = have + got
        if skipping:
            if not got:
                skipping = False
            else:
                newline = buffer.find(b"\n", have, end)
                if newline < 0:
                    continue
                after = buffer[newline:end]  # from the newline that ends the kept head
                buffer[have : have + len(after)] = after
                end, skipping = have + len(after), False
        if not got:  # end of input: the last line has no newline
            if not end:
                break
            del buffer[end:]
            have = 0
        else:
            newline = buffer.rfind(b"\n", 0, end)
            if newline < 0:
                if end > limit:
                    have, skipping = limit, True
                    cut += 1
                else:
                    have = end
                continue
            rest = end - newline - 1
            if rest > limit:
                rest, skipping = limit, True
                cut += 1
            carry = bytes(buffer[newline + 1 : newline + 1 + rest])
            del buffer[newline:]
            have = rest
        count = buffer.count(b"\n") + 1
        if total + count > MAX_LINES:  # the input stops at MAX_LINES: the batch ends before that line's newline
            count = MAX_LINES - total
            end = -1
            for _ in range(count):
                end = buffer.find(b"\n", end + 1)
            del buffer[end:]
            notes.append(f"{name}: stopped after {MAX_LINES} lines")
        yield Batch(total, buffer, count)
        total += count
        if not got:
            break
        if have:  # the unfinished line to the buffer's start, for the next read
            buffer[:have] = carry
    if cut:
        notes.append(
            f"{name}: {cut} line(s) longer than {MAX_LINE} characters (over {limit} bytes) were cut while reading"
        )


def read_path(path: str) -> LogInput:
    """A log file (a regular file: a folder, FIFO or device is an InputError, never a hang) or ``-`` (stdin)."""
    if path == "-":
        _check_stdin(sys.stdin)
        return read_stream("-", sys.stdin.buffer)
    try:
        handle = open_input(path)
    except InputError as exc:
        raise InputError(exc.message, hint="save the log to a file, or pipe it: … | gfxgate diagnose -") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from None
    notes: list[str] = []
    return LogInput(path, _closing(handle, _batches(path, handle, notes)), notes)


def _closing(handle: IO[bytes], batches: Iterator[Batch]) -> Iterator[Batch]:
    with handle:
        yield from batches


def _check_stdin(stdin: IO[str]) -> None:
    """``-`` reads a pipe, a socket, a regular file or a terminal; ``< /dev/zero`` (endless), a folder or a block
    device is refused (``/dev/null`` is an empty log)."""
    try:
        st = os.fstat(stdin.fileno())
    except (OSError, ValueError, AttributeError):  # no descriptor (embedded use, tests): read what is there
        return
    mode = st.st_mode
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return
    if stat.S_ISCHR(mode) and (stdin.isatty() or _is_dev_null(st)):
        return
    raise InputError(
        f"standard input is {file_kind(mode)}, not a log",
        hint="pipe a log in: journalctl -u ollama | gfxgate diagnose -",
    )


def _is_dev_null(st) -> bool:
    try:
        return os.stat(os.devnull).st_rdev == st.st_rdev
    except OSError:
        return False


def read_journal(unit: str, *, since: str | None = None, journalctl: str = "journalctl") -> LogInput:
    """``journalctl -u UNIT -o short-iso`` (host.journal: argument list, timeout); a failure is an InputError."""
    from gfxgate.host.journal import UNIT_RE

    if not UNIT_RE.fullmatch(unit):
        raise InputError(f"bad --journal-unit {unit!r}", hint="a systemd unit name such as ollama or ollama.service")
    import shutil

    if shutil.which(journalctl) is None:
        raise InputError(
            f"{journalctl} is not installed (not on PATH)", hint="save the log to a file and pass its path"
        )
    notes: list[str] = []
    return LogInput(f"journal:{unit}", _journal_batches(unit, since, journalctl, notes), notes)


def _journal_batches(unit: str, since: str | None, journalctl: str, notes: list[str]) -> Iterator[Batch]:
    """journalctl's output, streamed (host.journal: the whole read bounded by JOURNAL_TIMEOUT_S); its failure is an
    InputError raised while the log is read."""
    from gfxgate.host.journal import JournalError, open_journal

    try:
        with open_journal(unit, since=since, timeout=JOURNAL_TIMEOUT_S, journalctl=journalctl) as stream:
            yield from _batches(f"journal:{unit}", stream, notes)
    except JournalError as exc:
        hint = "save the log to a file and pass its path" if exc.missing else None
        raise InputError(exc.message, hint=hint) from None
