"""Optional evidence collectors: server log tail, journald window, GPU tools.

Each collector returns a :class:`Collected` (lines plus a note) and never raises for an unavailable
source: a missing ``journalctl`` or an unreadable log file becomes a note in the worklog. Commands run
through ``gfxgate.host`` (an argument list, never a shell; a timeout and an output budget).
"""

from __future__ import annotations

import json
import os
from dataclasses import field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from gfxgate.errors import InputError
from gfxgate.fsio import open_input
from gfxgate.host.journal import JournalError, journal_argv, journal_lines
from gfxgate.host.probes import PROBES, run_tool
from gfxgate.records import dataclass
from gfxgate.targets import catalog

if TYPE_CHECKING:
    from gfxgate.host.probes import Probe

MAX_LOG_BYTES = 512 * 1024  # per run; a runaway log keeps its newest part
READ_BLOCK = 1 << 20
TOOL_TIMEOUT_S = 20.0  # journalctl's limit for a run's window
MAX_JOURNAL_BYTES = 4 << 20  # of one run's journald window
MAX_TOOL_LINES = 60


@dataclass(frozen=True)
class Collected:
    """Lines one collector saw, with where they came from and a note when it saw nothing useful."""

    source: str  # "server-log", "journal", "rocm-smi", …
    where: str  # file path, unit name or command line
    lines: tuple[str, ...] = ()
    note: str = ""
    ok: bool = True
    first_line_no: int | None = None  # 1-based line number of lines[0] in the file, when known

    def to_json(self, *, keep_lines: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "where": self.where, "ok": self.ok, "note": self.note}
        out["line_count"] = len(self.lines)
        if self.first_line_no is not None:
            out["first_line_no"] = self.first_line_no
        if keep_lines:
            out["lines"] = list(self.lines)
        return out


@dataclass
class LogTail:
    """New lines of a growing log file since a remembered offset (handles truncation/rotation)."""

    path: Path
    offset: int = 0
    line_no: int = 0  # lines before ``offset``
    notes: list[str] = field(default_factory=list)

    @classmethod
    def at_end(cls, path: Path) -> LogTail:
        tail = cls(Path(path))
        try:
            with _open_log(tail.path) as handle:
                for block in iter(lambda: handle.read(READ_BLOCK), b""):  # counted in blocks: a huge log is not held
                    tail.offset += len(block)
                    tail.line_no += block.count(b"\n")
        except (OSError, InputError):
            return tail  # missing now (the server creates it) or not a file: read_new says so
        return tail

    def read_new(self) -> Collected:
        """The complete lines written since the last read (the newest MAX_LOG_BYTES of them), read in blocks."""
        where = str(self.path)
        try:
            handle = _open_log(self.path)
        except InputError as exc:  # a folder or FIFO put there after the sweep's up-front check: never read
            return Collected("server-log", where, note=f"cannot read server log: {exc.message}", ok=False)
        except OSError as exc:
            return Collected("server-log", where, note=f"cannot read server log: {exc.strerror or exc}", ok=False)
        note = ""
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if size < self.offset:
                note = "log was truncated or rotated during the run; read from its start"
                self.offset, self.line_no = 0, 0
            handle.seek(self.offset)
            first_no = self.line_no + 1
            kept = bytearray()
            dropped = False
            for block in iter(lambda: handle.read(READ_BLOCK), b""):
                kept += block
                if len(kept) > 2 * MAX_LOG_BYTES:  # keep the newest part; count the lines of what is dropped
                    cut = len(kept) - MAX_LOG_BYTES
                    first_no += kept.count(b"\n", 0, cut)
                    self.offset += cut
                    self.line_no += kept.count(b"\n", 0, cut)
                    del kept[:cut]
                    dropped = True
        # Keep a torn final line for the next read: the server may still be writing it.
        complete = bytes(kept[: kept.rfind(b"\n") + 1]) if b"\n" in kept else b""
        self.offset += len(complete)
        self.line_no += complete.count(b"\n")
        if dropped or len(complete) > MAX_LOG_BYTES:
            if len(complete) > MAX_LOG_BYTES:
                first_no += complete.count(b"\n", 0, len(complete) - MAX_LOG_BYTES)
                complete = complete[len(complete) - MAX_LOG_BYTES :]
            complete = complete[complete.find(b"\n") + 1 :]  # the first line is cut: drop what is left of it
            first_no += 1
            note = (note + "; " if note else "") + f"kept the last {MAX_LOG_BYTES} bytes of the run's log"
        lines = tuple(complete.decode("utf-8", errors="replace").splitlines())
        if not lines and not note:
            note = "the server wrote no log lines during this run"
        return Collected("server-log", where, lines, note, True, first_no if lines else None)


def _open_log(path: Path):
    return open_input(path)


def journal_window(unit: str, since: datetime, until: datetime) -> Collected:
    """``journalctl -u UNIT`` for the run's time window (a second of slack on each side)."""
    start, end = f"@{int(since.timestamp()) - 1}", f"@{int(until.timestamp()) + 2}"
    where = " ".join(journal_argv(unit, since=start, until=end))
    try:
        lines, cut = journal_lines(unit, since=start, until=end, timeout=TOOL_TIMEOUT_S, max_bytes=MAX_JOURNAL_BYTES)
    except JournalError as exc:
        return Collected("journal", where, note=exc.message, ok=False)
    kept = tuple(line for line in lines if line.strip() and not line.startswith("-- "))
    note = "" if kept else f"journald has no lines for {unit} in the run's window"
    if cut:
        note = f"kept the first {MAX_JOURNAL_BYTES} bytes of the run's window"
    return Collected("journal", where, kept, note)


def gpu_probes(gpu_target: str | None = None) -> list[Collected]:
    """One-off host facts: the probes of ``host.probes`` (ROCm SMI / AMD SMI / NVIDIA SMI, Vulkan devices); each absent
    tool becomes a note. With the sweep's GPU target, only its vendor's tools (rules/targets.yaml ``vendors:``) and
    the tools no vendor claims (vulkaninfo) run: an NVIDIA sweep does not ask rocm-smi, an AMD one not nvidia-smi."""
    probes: list[Collected] = []
    for probe in _probes_for(PROBES, gpu_target):
        code, out, problem = run_tool(probe.argv)
        where = " ".join(probe.argv)
        if code is None or problem:
            probes.append(Collected(probe.name, where, note=problem, ok=False))
            continue
        text = out
        if probe.json:
            try:
                text = json.dumps(json.loads(out), sort_keys=True, indent=1)
            except json.JSONDecodeError:
                text = out
        lines = tuple(text.splitlines()[:MAX_TOOL_LINES])
        probes.append(Collected(probe.name, where, lines, "" if lines else "no output"))
    return probes


def _probes_for(probes: Sequence[Probe], gpu_target: str | None) -> list[Probe]:
    """The probes a sweep on ``gpu_target`` asks: every probe without a target (or one no vendor knows)."""
    cat = catalog()
    vendor = cat.vendor_of(gpu_target) if gpu_target else None
    if vendor is None:
        return list(probes)
    claimed = {name for v in cat.vendors.values() for name in v.probes}
    return [p for p in probes if p.name in vendor.probes or p.name not in claimed]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)
