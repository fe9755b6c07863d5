"""One pass over an input: literal prefilter, one RE2 set per candidate line, and bounded retention.

Per :class:`~gfxgate.diagnose.reader.Batch` (about a megabyte of lines) one RE2 alternation of every catalogue
literal finds the candidate lines; each candidate is matched once against the catalogue's :class:`re2.Set`, and
only the messages the set names run their own pattern (for the named fields). A line may hold several messages
(a log pasted as one paragraph): each non-overlapping match is a hit, the first catalogue entry winning an
overlap (specific entries come first in rules/messages.yaml).

What is kept is bounded, whatever the input: per message and run, the first hits and the latest one
(:data:`KEEP_PER_KEY`), at most :data:`MAX_HITS` hits, :data:`MAX_RUNS` run starts and :data:`MAX_VERSIONS`
version changes, and for runtime failures a window of the lines around them (:class:`Capture`, for the crash
localisation), each line cut to :data:`CAPTURE_CHARS`: per failure message and run kind the first
:data:`FIRST_CRASHES` windows and the latest (a crash loop keeps a few windows, not one per crash). Everything
beyond is counted and said in a note.
"""

from __future__ import annotations

from collections import deque
from dataclasses import field

from gfxgate.diagnose.catalogue import Catalogue, Message
from gfxgate.diagnose.patterns import MAX_LINE
from gfxgate.diagnose.reader import Batch, LogInput, LogLine, decode_line
from gfxgate.logs.prefix import is_separator, strip_prefix
from gfxgate.records import dataclass

KEEP_PER_KEY = 5  # hits kept per (message, run): the first four and the latest
MAX_HITS = 20_000
MAX_RUNS = 1_000
MAX_VERSIONS = 100
MAX_PER_LINE = 16
MEMO_LINES = (
    4_096  # distinct line texts whose matches are remembered  # messages taken from one line (a pasted paragraph)
)
KIND_LINES = 5_000  # lines read for the slog-format hint
# a slog line holds time=, level= and msg= (counted among the first KIND_LINES lines for the format hint)
PRE_LINES = 200  # lines kept before a runtime failure (the run's load / start markers)
CRASH_WINDOW = 400  # lines after a run's last failure line that the crash localisation reads
MAX_CAPTURES = 10_000
MAX_CAPTURE_LINES = 4_000
MAX_CAPTURED_CHARS = 48 << 20  # all captures together
CAPTURE_CHARS = 1_024
FIRST_CRASHES = 3  # crash windows kept per (failure message, run kind): the first ones and the latest (a crash loop)
RUN_START = "run-start"  # message families: a runner's start (every wording, rules/messages.yaml) …
LLAMA_START = "llama-build-info"  # … and llama.cpp's program start (its build line)


@dataclass(frozen=True)
class Hit:
    message: Message
    line: LogLine
    index: int  # 0-based index of the line in its input
    fields: tuple[tuple[str, str], ...]
    seq: int = 0  # order of the hit in the input (several on one line: by position)

    def get(self, name: str, default: str = "") -> str:
        return dict(self.fields).get(name) or default


@dataclass
class Capture:
    """Consecutive lines around runtime failures, as read (bytes, cut to CAPTURE_CHARS*4): lines[i] is line start+i.

    Kept as bytes and decoded (prefixes removed, cut to CAPTURE_CHARS) only when a run's crash is localised: a
    crash loop's later windows are replaced before anyone reads them.
    """

    start: int
    end: int  # exclusive: capture until this line index (extended by each further failure)
    lines: list[bytes] = field(default_factory=list)
    key: tuple = ()  # (failure message id, run start message id) of the crash that opened it
    run: tuple = ()  # the run starts counted when it opened

    def window(self, begin: int, end: int) -> tuple[int, list[str]]:
        """The captured lines in [begin, end): (index of the first, texts)."""
        lo = max(begin, self.start)
        hi = min(end, self.start + len(self.lines))
        return lo, [capture_text(line) for line in self.lines[lo - self.start : max(lo, hi) - self.start]]


def capture_text(raw: bytes) -> str:
    """A captured line's text: decoded, prefixes removed, cut to CAPTURE_CHARS."""
    return strip_prefix(decode_line(raw)[0])[0][:CAPTURE_CHARS]


@dataclass
class Scan:
    """What one pass kept of an input."""

    name: str
    hits: list[Hit]
    lines: int
    recognised: int  # lines with at least one catalogue message
    slog_lines: int  # 1 when one of the first KIND_LINES lines has slog's time=, level= and msg= (the format hint)
    captures: list[Capture]
    notes: list[str]
    repeated: int = 0  # crash windows not kept: a failure seen FIRST_CRASHES times before in the same run kind

    def localised(self, at: int) -> bool:
        """Is line ``at`` in a kept crash window?"""
        return any(c.start <= at < c.start + len(c.lines) for c in self.captures)

    def window(self, begin: int, end: int, at: int) -> tuple[int, list[str]]:
        """The kept lines in [begin, end) around line ``at`` (consecutive captures joined): (first index, texts)."""
        for number, capture in enumerate(self.captures):
            if not capture.start <= at < capture.start + len(capture.lines):
                continue
            first, lines = capture.window(begin, end)
            while first == capture.start and number > 0:  # reaches back into the capture before
                before = self.captures[number - 1]
                if before.start + len(before.lines) != capture.start or before.start + len(before.lines) <= begin:
                    break
                extra_first, extra = before.window(begin, capture.start)
                first, lines, capture, number = extra_first, extra + lines, before, number - 1
            following = number
            for later in self.captures[following + 1 :]:  # and forward
                if first + len(lines) != later.start or later.start >= end:
                    break
                lines = lines + later.window(later.start, end)[1]
            return first, lines
        return begin, []


Match = tuple[Message, tuple[tuple[str, str], ...]]  # a message found in a line, with its named fields


def match_text(text: str, catalogue: Catalogue) -> list[Match]:
    """The catalogue's messages in one line: non-overlapping matches, catalogue order deciding an overlap.

    Matched as UTF-8 bytes: RE2's Python wrapper converts every offset of a ``str`` match, which costs several
    times the match itself.
    """
    data = text.encode("utf-8", "surrogateescape")
    indices = catalogue.pattern_set.Match(data)
    if not indices:
        return []
    messages, literals = catalogue.messages, catalogue.literal_bytes
    if len(indices) == 1:  # the common case: one message on the line
        i = indices[0]
        if any(lit in data for lit in literals[i]):
            match = messages[i].regex.search(data)
            if match is not None and not _again(literals[i], data, match.end()):
                return [(messages[i], _fields(match))]
    taken: list[tuple[int, Match]] = []
    spans: list[tuple[int, int]] = []
    for i in sorted(indices):
        if not any(lit in data for lit in literals[i]):
            continue
        at = 0
        while len(taken) < MAX_PER_LINE:
            match = messages[i].regex.search(data, at)
            if match is None:
                break
            start, end = match.span()
            if not any(start < e and s < end for s, e in spans):
                spans.append((start, max(end, start + 1)))
                taken.append((start, (messages[i], _fields(match))))
            if not _again(literals[i], data, end):
                break
            at = max(end, start + 1)
    return [m for _, m in sorted(taken, key=lambda t: t[0])]


def _fields(match) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v.decode("utf-8", "replace")) for k, v in match.groupdict().items() if v is not None))


def _again(literals: tuple[bytes, ...], data: bytes, end: int) -> bool:
    """Could the message occur again after ``end`` (one of its literals does)?"""
    return any(data.find(lit, end) >= 0 for lit in literals)


class _Collector:
    def __init__(self, name: str, catalogue: Catalogue) -> None:
        self.name = name
        self.catalogue = catalogue
        self.kept: dict[tuple, list[Hit]] = {}
        self.count = 0
        self.recognised = 0
        self.dropped = 0
        self.starts = {RUN_START: 0, LLAMA_START: 0}
        self.starts_dropped = 0
        self.versions: dict[str, str] = {}  # message id → the last version value kept
        self.version_changes = 0
        self.captures: list[Capture] = []
        self.captures_dropped = 0
        self.current: Capture | None = None  # the capture the latest failure opened or extended
        self.open: list[Capture] = []  # captures still taking lines
        self.crashes: dict[tuple, int] = {}  # crash windows opened per (failure message, run kind)
        self.latest: dict[
            tuple, Capture
        ] = {}  # per key beyond FIRST_CRASHES: the latest window, replacing the one before
        self.repeated = 0
        self.run_kind = ""  # the message id of the latest run start
        self.recent: deque[Batch] = deque()
        self._split: tuple[int, list[bytes] | list[bytearray]] = (-1, [])  # the lines of the batch last split
        self.captured = 0  # characters kept in captures
        self.cut = 0  # candidate lines cut to MAX_LINE

    # -- hits ---------------------------------------------------------------------------------------------
    def keep(self, hit: Hit) -> None:
        message = hit.message
        start_kind = RUN_START if message.family == RUN_START else LLAMA_START if message.id == LLAMA_START else None
        if start_kind is not None:
            if self.starts[start_kind] >= MAX_RUNS:
                self.starts_dropped += 1
                start_kind = None  # counted, not split: its lines belong to the last kept run
            else:
                self.starts[start_kind] += 1
                self.run_kind = message.id
                self._add((message.id, "start", self.starts[start_kind]), hit, force=True)
                return
        if message.family == "version":
            value = hit.get("version") or hit.get("build")
            if self.versions.get(message.id) != value and self.version_changes < MAX_VERSIONS:
                self.versions[message.id] = value
                self.version_changes += 1
                self._add((message.id, "version", self.version_changes), hit, force=True)
                return
        key = (message.id, self.starts[RUN_START], self.starts[LLAMA_START])
        self._add(key, hit)

    def _add(self, key: tuple, hit: Hit, force: bool = False) -> None:
        slot = self.kept.get(key)
        if slot is None:
            if self.count >= MAX_HITS and not force:
                self.dropped += 1
                return
            self.kept[key] = [hit]
            self.count += 1
        elif len(slot) < KEEP_PER_KEY:
            slot.append(hit)
            self.count += 1
        else:
            slot[-1] = hit  # the first ones and the latest

    # -- crash windows ------------------------------------------------------------------------------------
    def failure_at(self, index: int, message_id: str) -> None:
        """A runtime failure at ``index``: capture the lines around it (or extend the open capture).

        Bounded per (failure message, run kind): the first FIRST_CRASHES windows are kept, and of the later ones
        only the latest (each replaces the one before: a crash loop keeps a few windows, not one per crash).
        """
        last = self.current
        run = (self.starts[RUN_START], self.starts[LLAMA_START])
        # a further failure of the same run extends its window; another run's crash opens its own (counted per key)
        if (
            last is not None
            and last.run == run
            and last.start <= index < last.end + PRE_LINES
            and index < last.start + MAX_CAPTURE_LINES
        ):
            last.end = min(max(last.end, index + CRASH_WINDOW), last.start + MAX_CAPTURE_LINES)
            if last not in self.open:
                self.open.append(last)
            for batch in self.recent:  # the lines between the old end and this failure
                self._fill(last, batch, upto=index + 1)
            return
        key = (message_id, self.run_kind)
        seen = self.crashes[key] = self.crashes.get(key, 0) + 1
        if len(self.captures) >= MAX_CAPTURES or self.captured >= MAX_CAPTURED_CHARS:
            self.captures_dropped += 1
            return
        start = max(0, index - PRE_LINES)
        if seen > FIRST_CRASHES:
            replaced = self.latest.pop(key, None)
            if replaced is not None:
                self.repeated += 1
                self.captures.remove(replaced)
                self.open = [c for c in self.open if c is not replaced]
                self.captured -= sum(map(len, replaced.lines))
        elif last is not None and not (last.key in self.latest and self.latest[last.key] is last):
            # after a kept window: consecutive windows join (Scan.window)
            last.end = min(last.end, max(start, last.start + len(last.lines)))
            start = max(start, last.start + len(last.lines))
        capture = Capture(start, min(index + CRASH_WINDOW, start + MAX_CAPTURE_LINES), key=key, run=run)
        for batch in self.recent:  # the lines before the failure (and the current batch up to it)
            self._fill(capture, batch, upto=index + 1)
        self.captures.append(capture)
        self.open.append(capture)
        self.current = capture
        if seen > FIRST_CRASHES:
            self.latest[key] = capture

    def _fill(self, capture: Capture, batch: Batch, upto: int | None = None) -> None:
        have = capture.start + len(capture.lines)
        stop = min(capture.end, batch.first + batch.line_count, upto if upto is not None else capture.end)
        if have >= stop or have < batch.first:  # nothing new in this batch (or lines no longer kept: never here)
            return
        lines = [
            bytes(line[: CAPTURE_CHARS * 4]) for line in self._lines(batch)[have - batch.first : stop - batch.first]
        ]
        capture.lines += lines
        self.captured += sum(map(len, lines))

    def _lines(self, batch: Batch) -> list[bytes] | list[bytearray]:
        if self._split[0] != batch.first:
            self._split = (batch.first, batch.lines())
        return self._split[1]

    def batch_done(self, batch: Batch) -> None:
        """After matching a batch: captures take the rest of its lines; the recent batches keep PRE_LINES."""
        for capture in self.open:
            self._fill(capture, batch)
        self.open = [c for c in self.open if c.start + len(c.lines) < c.end]
        self.recent.append(_tail(batch, PRE_LINES))  # a copy: the reader reuses the batch's buffer for the next one
        while len(self.recent) > 1 and sum(b.line_count for b in self.recent) - self.recent[0].line_count >= PRE_LINES:
            self.recent.popleft()

    def notes(self) -> list[str]:
        out = []
        if self.cut:
            out.append(
                f"{self.name}: {self.cut} recognised line(s) longer than {MAX_LINE} characters were cut to that length before matching"
            )
        if self.dropped:
            out.append(
                f"{self.name}: {self.dropped} recognised line(s) beyond the first {MAX_HITS} kept were counted, not kept "
                f"(each message keeps its first {KEEP_PER_KEY - 1} lines and its latest per run)"
            )
        if self.starts_dropped:
            out.append(
                f"{self.name}: {self.starts_dropped} run start(s) after the first {MAX_RUNS} per kind were not split into runs"
            )
        if self.repeated:
            out.append(
                f"{self.name}: {self.repeated} crash window(s) of a failure already kept {FIRST_CRASHES} times in the same "
                "run kind were not kept (the first ones and the latest of each are): a run without its window says "
                "which run holds the localisation"
            )
        if self.captures_dropped:
            out.append(
                f"{self.name}: {self.captures_dropped} crash window(s) after the first {len(self.captures)} were not kept "
                "(their failures are reported without the crash localisation)"
            )
        return out


def _slog_line(text: bytes | bytearray, lines: int) -> int:
    """1 when one of the first ``lines`` lines of ``text`` holds slog's ``time=``, ``level=`` and ``msg=``, else 0
    (only the lines with ``level=`` are looked at)."""
    at, begin, number = text.find(b"level="), 0, 0
    while at >= 0:
        start = text.rfind(b"\n", 0, at) + 1
        number += text.count(b"\n", begin, start)
        if number >= lines:
            return 0
        end = text.find(b"\n", at)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if b"msg=" in line and b"time=" in line:
            return 1
        begin, at = start, text.find(b"level=", end)
    return 0


def _tail(batch: Batch, lines: int) -> Batch:
    """The last ``lines`` lines of ``batch``, copied (what a crash window opened in a later batch reaches back to)."""
    text = batch.text
    if batch.line_count <= lines:
        return Batch(batch.first, bytes(text), batch.line_count)
    at = len(text)
    for _ in range(lines):
        at = text.rfind(b"\n", 0, at)
    return Batch(batch.first + batch.line_count - lines, bytes(text[at + 1 :]), lines)


def scan(log: LogInput, catalogue: Catalogue) -> Scan:
    """Read ``log`` once; keep the hits and crash windows the diagnosis needs (bounded, see the module)."""
    collector = _Collector(log.name, catalogue)
    scanner = catalogue.literal_scanner
    slog = seq = 0
    memo: dict[str, list[Match]] = {}  # a line's matches by its text (repeated lines are matched once)
    lines = 0
    name = log.name
    runtime_failure = {
        m.id for m in catalogue.messages if m.is_failure and m.layer == "runtime" and m.family != "offload-zero"
    }
    for batch in log.batches:
        text = batch.text
        lines = batch.first + batch.line_count
        collector.recent.append(batch)  # visible to a capture that starts in this batch
        if not slog and batch.first < KIND_LINES:
            slog = _slog_line(text, KIND_LINES - batch.first)
        position, number = 0, batch.first
        for at in scanner.candidates(text):
            if at < position:  # a literal later on a line already matched
                continue
            number += text.count(b"\n", position, at)
            begin = text.rfind(b"\n", 0, at) + 1
            end = text.find(b"\n", at)
            end = len(text) if end < 0 else end
            position = end
            raw, cut = decode_line(text[begin:end])
            if is_separator(raw):
                continue
            line_text, journal = strip_prefix(raw)
            matches = memo.get(line_text)
            if matches is None:
                matches = match_text(line_text, catalogue)
                if len(memo) >= MEMO_LINES:
                    memo.clear()
                memo[line_text] = matches
            if not matches:
                continue
            collector.recognised += 1
            collector.cut += cut
            line = LogLine(name, number + 1, line_text, cut, journal)
            for message, fields in matches:
                seq += 1
                collector.keep(Hit(message, line, number, fields, seq))
                if message.id in runtime_failure:
                    collector.failure_at(number, message.id)
        collector.recent.pop()
        collector.batch_done(batch)
    return Scan(
        name,
        sorted((h for slot in collector.kept.values() for h in slot), key=lambda h: h.seq),
        lines,
        collector.recognised,
        slog,
        sorted(collector.captures, key=lambda c: c.start),
        list(log.notes) + collector.notes(),
        collector.repeated,
    )
