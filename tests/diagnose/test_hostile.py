"""Hostile logs: unknown lines never produce a verdict, lines are bounded, matching stays linear."""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gfxgate.diagnose.analyse import diagnose_log
from gfxgate.diagnose.catalogue import default_catalogue
from gfxgate.diagnose.patterns import MAX_LINE, PatternError, compile_pattern
from gfxgate.diagnose.reader import read_stream
from tests.cputime import cpu_time
from tests.diagnose import logs

LITERALS = tuple(lit for m in default_catalogue().messages for lit in m.literals)


def diagnose_bytes(data: bytes):
    return diagnose_log(read_stream("junk", io.BytesIO(data)), default_catalogue())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.text(min_size=0, max_size=300), max_size=40))
def test_unknown_text_never_yields_a_finding_or_verdict(lines):
    lines = [line for line in lines if not any(lit in line for lit in LITERALS)]
    d = diagnose_bytes("\n".join(lines).encode("utf-8", "surrogatepass"))
    assert d.findings == () and d.verdicts == ()
    assert d.recognised == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=4000))
def test_random_bytes_never_crash_and_yield_no_verdict(data):
    d = diagnose_bytes(data)
    assert all(f.verdict is None or f.evidence for f in d.findings)
    if not any(lit.encode() in data for lit in LITERALS):
        assert d.findings == ()


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(LITERALS), st.text(max_size=200), st.text(max_size=200))
def test_literals_in_junk_only_match_their_full_pattern(literal, before, after):
    """A literal alone (inside junk) is not enough: a verdict needs the whole pattern, and always its evidence."""
    d = diagnose_bytes(f"{before}{literal}{after}".replace("\n", " ").encode("utf-8", "surrogatepass"))
    for finding in d.findings:
        assert finding.evidence and str(finding.evidence[0].location) == "junk:1"


def test_near_misses_are_not_recognised():
    near = [
        "amdgpu is supported gpu=0 gpu_type=gfx1030",
        "load_tensors: offloaded 10/29 layers to GPU",
        "Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes",
        "the word SIGSEGV inside a sentence",
        "rocBLAS error: something else",
        "dropping ROCm device",  # the literal without the rest of the message
    ]
    d = diagnose_bytes("\n".join(near).encode())
    assert d.findings == ()


def test_a_huge_line_is_cut_and_a_pathological_line_is_fast():
    # 20 MB on one line, then a real message: the reader keeps a bounded prefix and says so
    data = b"x" * 20_000_000 + b"\nggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected\n"
    d = diagnose_bytes(data)
    assert any(f"longer than {MAX_LINE}" in n for n in d.notes)
    assert [str(f.evidence[0].location) for f in d.findings] == ["junk:2"]
    # lines built to make backtracking engines explode stay linear under RE2
    evil = ("amdgpu is not supported (supported types:" + "[" * MAX_LINE + "\n") * 200
    evil += ("rocBLAS error: Cannot read " + "TensileLibrary" * 300 + "\n") * 200
    with cpu_time() as spent:
        diagnose_bytes(evil.encode())
    assert spent.seconds < 2.0, spent.seconds


def test_backtracking_constructs_are_refused():
    for pattern in (r"(a)\1", r"(?=a)b", r"(?<!a)b"):
        try:
            compile_pattern(pattern)
        except PatternError:
            continue
        raise AssertionError(f"{pattern} compiled")


def test_nul_bytes_and_invalid_utf8_are_read():
    lines = logs.ollama_0_12_3()
    data = ("\n".join(lines)).encode().replace(b'msg="Listening', b'\x00\xff msg="Listening')
    d = diagnose_bytes(data)
    assert d.version == "0.12.3"


def test_hostile_values_cannot_break_the_markdown_table():
    from gfxgate.diagnose.render import render_md

    line = 'time=T level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:1 (version 0.12.3|x)"'
    d = diagnose_bytes((line + "\n").encode())
    table = [row for row in render_md([d]).splitlines() if row.startswith("| ollama-version")]
    assert table and table[0].count(" | ") == 2  # the pipe inside the value is escaped
