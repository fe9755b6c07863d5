"""The one regex dialect for log messages: RE2 (linear-time matching, no backtracking).

Log lines are hostile input: a pattern must never take more than linear time in the line, whatever the
line holds. RE2 guarantees that (it has no backreferences or look-around, so such patterns fail to
compile instead of running slowly). Every line is also cut to :data:`MAX_LINE` characters before it is
matched, so a single pathological line costs a bounded amount of work.
"""

from __future__ import annotations

from typing import Callable, Iterator, Protocol, cast
import os

import re2

MAX_LINE = 4096  # characters of one log line that are matched; the rest is dropped (and said so)


class Pattern(Protocol):  # the subset of the compiled-pattern API the matcher uses
    def search(self, text: str | bytes | bytearray, pos: int = 0): ...

    def finditer(self, text: str | bytes | bytearray) -> Iterator: ...


class PatternError(ValueError):
    """A pattern RE2 cannot compile (for example a backreference)."""


def _options():
    options = re2.Options()
    options.log_errors = False  # errors become PatternError, not lines on stderr
    options.max_mem = 8 << 20
    return options


def compile_pattern(pattern: str) -> Pattern:
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(detail) from None


class CheckedPattern:
    """A pattern of the shipped catalogue that its load already compiled and checked (:func:`compile_pattern`, the
    examples and counter-examples) when the rules cache was filled, compiled again on its first search: a start
    searches only the messages whose literal a line holds, so it compiles those, not all ~70 (~5 ms of the
    `diagnose` budget, benchmarks/bench_budget.py)."""

    __slots__ = ("pattern", "_compiled")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: Pattern | None = None

    def _regex(self) -> Pattern:
        if self._compiled is None:
            self._compiled = compile_pattern(self.pattern)
        return self._compiled

    def search(self, text: str | bytes | bytearray, pos: int = 0):
        return self._regex().search(text, pos)

    def finditer(self, text: str | bytes | bytearray) -> Iterator:
        return self._regex().finditer(text)


def compile_set(patterns: list[str]):
    """An RE2 set of ``patterns`` (unanchored search); ``Match(text)`` returns the indices that match, or None."""
    options = _options()
    options.max_mem = 64 << 20  # one DFA for every message pattern
    regex_set = re2.Set.SearchSet(options)
    for pattern in patterns:
        try:
            regex_set.Add(pattern)
        except re2.error as exc:
            raise PatternError(str(exc)) from None
    try:
        regex_set.Compile()
    except re2.error:
        raise PatternError("the patterns do not compile as one RE2 set (out of memory)") from None
    return regex_set


MAX_SAME_LINE = 64  # further literal hits on a line already found before the scan restarts after that line


class LiteralScanner:
    """The prefilter: where a batch of log lines holds one of the catalogue's fixed literals (plain bytes, no regex).

    Hyperscan (Intel's SIMD multi-literal matcher, linear in the input) where it is installed: a 29 MB log is one
    ~10 ms pass, a quarter of one RE2 alternation of the same literals (:func:`compile_pattern`), which is the
    fallback on platforms without a Hyperscan wheel and gives the same candidates (tests/diagnose/test_prefilter.py).
    ``candidates(text)`` returns, in ascending order, an offset inside each line that holds a literal (a line may
    be named more than once; the caller skips offsets inside a line it has read).
    """

    def __init__(
        self,
        literals: list[bytes],
        *,
        engine: str | None = None,
        stored: Callable[[bytes, str, Callable[[], bytes]], bytes] | None = None,
    ) -> None:
        """``stored(raw, kind, make)``: where given, the Hyperscan database serialised by ``make()`` as kept for these
        literals (``raw``) by a cache (the shipped catalogue's: gfxgate's rules cache), loaded instead of compiled
        (~17 M instructions of a `diagnose` start, benchmarks/bench_budget.py); a stored database that does not
        load is compiled again."""
        if any(b"\n" in lit or not lit for lit in literals):
            raise PatternError("a catalogue literal is empty or holds a newline")
        self.literals = sorted(sorted(set(literals)), key=len, reverse=True)  # one order in every process: a key
        self.engine = engine or _default_engine()
        if self.engine == "hyperscan":
            import hyperscan

            try:
                db = None
                if stored is not None:
                    blob = stored(b"\n".join(self.literals), _hyperscan_kind(hyperscan), self._hyperscan_blob)
                    try:
                        db = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
                        db.scratch = hyperscan.Scratch(db)  # compile() allocates it; loadb() does not
                    except hyperscan.error:  # e.g. stored by another Hyperscan or processor: compiled below
                        db = None
                self._db = db if db is not None else self._hyperscan_compile()
            except (
                hyperscan.error
            ):  # e.g. a processor without the SIMD instructions Hyperscan needs (ArchitectureError)
                if engine is not None:
                    raise
                self.engine = "re2"
            self._stopped = hyperscan.ScanTerminated
        if self.engine != "hyperscan":
            self._re2 = compile_pattern(
                "|".join(re2.escape(lit.decode("utf-8", "surrogateescape")) for lit in self.literals)
                if all(_is_utf8(lit) for lit in self.literals)
                else "|".join(_bytes_escape(lit) for lit in self.literals)
            )

    def _hyperscan_compile(self):
        import hyperscan

        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(  # each byte escaped: a literal is matched as the bytes it is, whatever they are
            expressions=[b"".join(b"\\x%02x" % byte for byte in lit) for lit in self.literals],
            ids=list(range(len(self.literals))),
            flags=[0] * len(self.literals),
        )
        return db

    def _hyperscan_blob(self) -> bytes:
        import hyperscan

        return bytes(hyperscan.dumpb(self._hyperscan_compile()))

    def candidates(self, text: bytes | bytearray) -> list[int]:
        if self.engine != "hyperscan":
            return self._per_line(text)
        found: list[int] = []
        base = 0
        line_end = -1  # the end of the line of the last hit kept (absolute offset)
        repeats = 0

        def on_match(_ident: int, _start: int, end: int, _flags: int, _context) -> bool:
            nonlocal line_end, repeats
            end += base
            if end <= line_end:  # another literal on the line already found
                repeats += 1
                return repeats > MAX_SAME_LINE  # stop: the scan restarts after this line
            found.append(end - 1)
            newline = text.find(b"\n", end)
            line_end = len(text) if newline < 0 else newline
            repeats = 0
            return False

        with memoryview(text) as view:  # released on return: the reader resizes this buffer for the next batch
            while base < len(text):
                try:
                    with view[base:] as rest:
                        self._db.scan(cast(bytes, rest), match_event_handler=on_match)  # any buffer
                    break
                except self._stopped:
                    base, repeats = line_end + 1, 0
        return found

    def _per_line(self, text: bytes | bytearray) -> list[int]:
        """The RE2 fallback: the first hit of each line that holds one, the next search starting after that line,
        so a wall of hits (every word a literal) costs one search per line, not one match object per hit (issue 41:
        38.8 s against Hyperscan's 0.39 s before); the same lines as Hyperscan's candidates."""
        found: list[int] = []
        pos, size = 0, len(text)
        search = self._re2.search
        while pos < size:
            hit = search(text, pos)
            if hit is None:
                break
            start = hit.start()
            found.append(start)
            newline = text.find(b"\n", start)
            if newline < 0:
                break
            pos = newline + 1
        return found


def _is_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _bytes_escape(lit: bytes) -> str:
    return "".join(f"\\x{byte:02x}" for byte in lit)


def _hyperscan_kind(hyperscan) -> str:
    """What a stored database depends on besides its literals: Hyperscan's version and the host it was compiled on
    (a database holds code for the processor that compiled it; a cache folder may be shared between machines)."""
    host = os.uname() if hasattr(os, "uname") else None
    where = f"{host.machine}-{host.nodename}" if host else "-"
    return f"hyperscan-{getattr(hyperscan, '__version__', '?')}-{where}"


def _default_engine() -> str:
    """``hyperscan`` where its module imports (and GFXGATE_PREFILTER does not say ``re2``), else ``re2``."""
    if os.environ.get("GFXGATE_PREFILTER", "") == "re2":
        return "re2"
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        return "re2"
    return "hyperscan"
