"""The committed H200 worklogs are zstandard-compressed (samples/h200/*.jsonl.zst: 1.7 MB of JSON lines in 40 KB);
the worklog reader inflates them within the bound of a plain worklog, and a bad stream is a clear input error."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

from gfxgate.errors import InputError
from gfxgate.sweep import worklog
from gfxgate.sweep.model import build_report
from gfxgate.sweep.worklog import read_worklog

SWEEP = Path(__file__).resolve().parents[2] / "samples" / "h200" / "sweep.jsonl.zst"


def test_a_compressed_worklog_reads_as_its_plain_lines(tmp_path):
    plain = tmp_path / "sweep.jsonl"
    plain.write_bytes(zstandard.ZstdDecompressor().decompressobj().decompress(SWEEP.read_bytes()))
    packed, unpacked = read_worklog(SWEEP), read_worklog(plain)
    assert len(packed.runs) == len(unpacked.runs) == 70
    assert packed.runs == unpacked.runs  # the same records, read from the same line numbers
    assert build_report(packed).cells == build_report(unpacked).cells


def test_a_broken_stream_is_an_input_error(tmp_path):
    bad = tmp_path / "bad.jsonl.zst"
    bad.write_bytes(SWEEP.read_bytes()[:4] + b"\xff" * 64)  # the magic, then no valid frame
    with pytest.raises(InputError, match="not a readable zstandard stream"):
        read_worklog(bad)


def test_a_stream_that_inflates_past_the_bound_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(worklog, "MAX_WORKLOG_BYTES", 1 << 20)
    bomb = tmp_path / "bomb.jsonl.zst"
    bomb.write_bytes(zstandard.ZstdCompressor().compress(b"\n" * (4 << 20)))  # 4 MiB of newlines in a few bytes
    assert bomb.stat().st_size < 4096
    with pytest.raises(InputError, match="inflates past 1 MiB"):
        read_worklog(bomb)
