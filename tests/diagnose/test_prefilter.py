"""The prefilter and the reader under it: Hyperscan and the RE2 fallback name the same lines, and the reader's reused
buffer yields exactly the input's lines (issue 31: the speed work must not change what a diagnosis finds)."""

from __future__ import annotations

import functools
import io
import json
import os
import random

import pytest

from gfxgate.diagnose import reader
from gfxgate.diagnose.catalogue import default_catalogue
from gfxgate.diagnose.patterns import MAX_SAME_LINE, LiteralScanner
from gfxgate.diagnose.reader import CHUNK, MAX_LINE
from gfxgate.diagnose.stream import KIND_LINES, PRE_LINES, _slog_line, _tail
from tests.diagnose import logs

hyperscan = pytest.importorskip(
    "hyperscan", reason="hyperscan has a wheel for Linux x86-64 only (the RE2 fallback runs elsewhere)"
)


def _literals() -> list[bytes]:
    return [lit.encode("utf-8") for m in default_catalogue().messages for lit in m.literals]


def _lines_named(text: bytes, offsets: list[int]) -> list[int]:
    """The start offset of each line an engine named (once each, in order)."""
    return sorted({text.rfind(b"\n", 0, at) + 1 for at in offsets})


def _fixture_text() -> bytes:
    blocks = [
        logs.journal(logs.ollama_0_12_3()),
        logs.journal(logs.ollama_0_17_5_crash()),
        logs.journal(logs.ollama_0_32()),
        logs.llama_server_hip(crash=True),
        logs.ollama_0_5_7(),
        logs.ollama_0_12_3_rocblas(),
    ]
    return "\n".join(line for block in blocks for line in block).encode("utf-8")


@functools.cache
def _hostile_texts() -> list[bytes]:
    literals = _literals()
    rng = random.Random(31)
    pieces = literals + [b"x" * 50, b"\n", b"\xff\xfe", "é".encode(), b"SIGSEGV", b"\r\n"]
    texts = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(1, 400))) for _ in range(60)]
    texts += [
        b"SIG" * 5000 + b"\nplain\n" + b"SIG" * 5000,  # far more hits on one line than MAX_SAME_LINE, twice
        (b"CUDA error" * (MAX_SAME_LINE + 1) + b"\n") * 50,  # exactly past the restart point on every line
        b"build",  # a literal alone, no newline
        b"\nbuild\n",
        b"x" * 100 + b"SIG",  # a literal at the very end
        b"",
        b"\n\n\n",
    ]
    return texts


@pytest.mark.parametrize("case", range(len(_hostile_texts()) + 1))
def test_both_engines_name_the_same_lines(case):
    texts = _hostile_texts() + [_fixture_text()]
    text = texts[case]
    literals = _literals()
    fast = LiteralScanner(literals, engine="hyperscan").candidates(text)
    slow = LiteralScanner(literals, engine="re2").candidates(text)
    assert fast == sorted(fast), "offsets ascend"
    assert _lines_named(text, fast) == _lines_named(text, slow)
    # each named offset is inside a line that really holds a literal
    for at in fast:
        begin, end = text.rfind(b"\n", 0, at) + 1, text.find(b"\n", at)
        line = text[begin : len(text) if end < 0 else end]
        assert any(lit in line for lit in literals)


def test_a_bytearray_batch_is_scanned_and_left_resizable():
    text = bytearray(_fixture_text())
    scanner = LiteralScanner(_literals(), engine="hyperscan")
    assert scanner.candidates(text) == scanner.candidates(bytes(text))
    del text[10:]  # no memoryview export is left behind (the reader cuts its buffer after every batch)
    assert len(text) == 10


def test_a_literal_with_a_newline_is_refused():
    from gfxgate.diagnose.patterns import PatternError

    with pytest.raises(PatternError):
        LiteralScanner([b"a\nb"])


_LETTERS = bytes(b"abcdefgh "[v % 9] for v in range(256))  # a random byte -> one of the nine letters of a line


@functools.cache  # once per run: ~40 MB of text, built once at collection, not again by each of its tests
def _sizes() -> list[bytes]:
    """Inputs around the reader's boundaries: a line ending exactly at a chunk, over-long lines (cut) at a chunk's
    end and start, no newline at the end, CRLF, an input of one endless line."""
    limit = MAX_LINE * 4
    rng = random.Random(7)
    line = lambda n: rng.randbytes(n).translate(_LETTERS)  # noqa: E731 - one call, not one choice() per byte
    return [
        b"",
        b"one line, no newline",
        line(CHUNK - 1) + b"\n" + line(10) + b"\n",
        line(CHUNK) + b"\n" + b"tail",
        b"short\n" + line(limit * 3) + b"\nafter\n",  # a long line inside a chunk: kept whole until decoded
        line(CHUNK - 100) + b"\n" + line(limit * 70) + b"\nnext line\n" + line(5000),  # the carry over the limit
        line(limit * 200),  # one endless line
        b"\r\n".join(line(rng.randrange(0, 300)) for _ in range(20000)),
        b"\n".join(line(rng.randrange(0, 40000)) for _ in range(120)),
    ]


def _reference(data: bytes) -> list[bytes]:
    """What the reader must yield: every line, a line over MAX_LINE*4 bytes cut to that length when it is the
    carry between two reads (the cut the reader has always made), else whole."""
    lines = data.split(b"\n") if data else []
    return lines[:-1] if data.endswith(b"\n") else lines  # a last newline ends the last line, it opens none


@pytest.mark.parametrize("case", range(len(_sizes())))
def test_the_reader_yields_every_line_and_counts_them(case):
    data = _sizes()[case]
    notes: list[str] = []
    got: list[bytes] = []
    first = 0
    for batch in reader._batches("t", io.BytesIO(data), notes):
        assert batch.first == first
        lines = bytes(batch.text).split(b"\n")
        assert len(lines) == batch.line_count
        got += lines
        first += batch.line_count
    want = _reference(data)
    assert len(got) == len(want)
    limit = MAX_LINE * 4
    for ours, theirs in zip(got, want):
        assert ours == theirs or (len(theirs) > limit and theirs.startswith(ours) and len(ours) >= limit)
    if any(len(x) > limit for x in want) and got != want:
        assert any("cut while reading" in n for n in notes)


def test_a_batch_holds_the_reader_buffer_until_the_next_one():
    """The documented contract: a yielded batch is valid until the next is read; what is kept is copied."""
    data = b"\n".join(b"line %d" % i for i in range(CHUNK // 4))
    batches = reader._batches("t", io.BytesIO(data), [])
    one = next(batches)
    kept = _tail(one, PRE_LINES)
    snapshot = bytes(one.text)
    next(batches)
    assert isinstance(kept.text, bytes)
    assert snapshot.endswith(kept.text)
    assert kept.first + kept.line_count == one.first + one.line_count


def test_the_slog_hint_looks_at_the_first_lines_only():
    plain = b"\n".join(b"plain %d level=info" % i for i in range(10))
    slog = b'time=2025-10-05T10:00:00 level=INFO source=x.go:1 msg="hello"'
    assert _slog_line(plain + b"\n" + slog, 11) == 1
    assert _slog_line(plain + b"\n" + slog, 10) == 0  # the slog line is line 11
    assert _slog_line(b"", KIND_LINES) == 0


def test_diagnose_reports_the_same_with_either_engine(gfxgate_cli, tmp_path):
    """Through the installed script: the JSON of a diagnosis is the same with GFXGATE_PREFILTER=re2."""
    path = tmp_path / "server.log"
    path.write_bytes(_fixture_text() + b"\n" + b"\n".join(b"noise %d" % i for i in range(30000)) + b"\n")
    out = {}
    for engine in ("hyperscan", "re2"):
        env = {**os.environ, "GFXGATE_PREFILTER": engine}
        proc = gfxgate_cli("diagnose", "--no-upstream", "--format", "json", str(path), env=env, check=False, text=False)
        assert proc.returncode in (0, 1), proc.stderr
        out[engine] = json.loads(proc.stdout)
    assert out["hyperscan"] == out["re2"]
    assert out["re2"]["logs"][0]["findings"], "the fixture's failures are found"


def test_a_processor_hyperscan_cannot_use_falls_back_to_re2(monkeypatch):
    """Hyperscan refuses to compile on a processor without the SIMD it needs (ArchitectureError): the default scanner
    is then the RE2 one, with the same lines; asked for Hyperscan by name, the error is not hidden."""

    class Refusing:  # what hyperscan.Database does on such a processor (which cannot run here)
        def __init__(self, **kwargs) -> None:
            pass

        def compile(self, **kwargs) -> None:
            raise hyperscan.ArchitectureError("no SSSE3")

    monkeypatch.setattr(hyperscan, "Database", Refusing)
    scanner = LiteralScanner(_literals())
    assert scanner.engine == "re2"
    text = _fixture_text()
    assert _lines_named(text, scanner.candidates(text)) == _lines_named(
        text, LiteralScanner(_literals(), engine="re2").candidates(text)
    )
    with pytest.raises(hyperscan.error):
        LiteralScanner(_literals(), engine="hyperscan")
