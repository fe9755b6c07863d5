"""Issue 28 defect 4 / issue 31 item 3: diagnose streams its input and keeps what it needs, not every line.

Each case runs the installed console script through the issue-13 harness (``replay``: its own peak RSS by
``os.wait4``, no traceback, nothing but the named output touched). Before the streaming reader, 1,000,000
recognised lines took 910 MB (here: 200,000 lines take no more memory than 50,000), 150,000 lines of 4,000
characters 1.8 GB (here: 40,000 such lines take no more memory than 4,000) and ``yes | gfxgate diagnose -`` 390 MB.
Time: linear in the input (a quarter of the input costs about a quarter: checked on the CPU time), and under the
harness's 5 s for the inputs of the README's bound (``yes``, 150,000 long lines of noise).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.cli.test_replays import MEMORY_LIMIT_KB, replay

RECOGNISED = "ggml_cuda_init: failed to initialize ROCm: no ROCm-capable device is detected\n"


@pytest.fixture()
def work(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def _write(path, line: str, count: int) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        block = line * 10_000
        for _ in range(count // 10_000):
            handle.write(block)
        handle.write(line * (count % 10_000))


def _diagnose(exe, work, name, monkeypatch, limit_s: float):
    import tests.cli.test_replays as harness

    monkeypatch.setattr(harness, "TIME_LIMIT_S", limit_s)
    return replay(name, exe, ["diagnose", "--no-upstream", "--format", "json", name], cwd=work, code=0, timeout=300)


@pytest.mark.slow
def test_recognised_lines_stay_bounded_and_linear(gfxgate_exe, work, monkeypatch):
    """200,000 recognised lines (16 MB) against 50,000: memory does not grow with the lines (the reader before
    streaming held 910 MB for 1,000,000: some 135 MB more here, eight times the 16 MB allowed), stays under 512 MB,
    and four times the lines cost about four times the CPU over the startup (a run of 1,000 such lines, after one
    that filled the cache), less than twice that, as before for 500,000 against 50,000: quadratic work would cost
    sixteen times. The 50,000 lines are 0.2 s of work, well above the startup's spread of a few hundredths; 500,000
    lines showed the same ratio for 3 s of CPU more."""
    _write(work / "big.log", RECOGNISED, 200_000)
    _write(work / "small.log", RECOGNISED, 50_000)
    (work / "tiny.log").write_text(RECOGNISED * 1_000)
    _diagnose(gfxgate_exe, work, "tiny.log", monkeypatch, 60)  # the cache filled: the runs below start alike
    startup = _diagnose(gfxgate_exe, work, "tiny.log", monkeypatch, 60).cpu_seconds
    small = _diagnose(gfxgate_exe, work, "small.log", monkeypatch, 60)
    big = _diagnose(gfxgate_exe, work, "big.log", monkeypatch, 60)
    assert big.max_rss_kb < MEMORY_LIMIT_KB
    assert big.max_rss_kb - small.max_rss_kb < 16 << 10, (small.max_rss_kb, big.max_rss_kb)  # KB: not with the lines
    d = json.loads(big.stdout)["logs"][0]
    assert d["lines"] == 200_000 and d["recognised"] == 200_000
    finding = d["findings"][0]
    assert finding["message"] == "hip-no-device" and len(finding["evidence"]) == 5  # merged, bounded evidence
    assert finding["evidence"][-1]["location"]["line"] == 200_000  # the latest line is kept, not only the first
    work_big, work_small = big.cpu_seconds - startup, max(small.cpu_seconds - startup, 0.05)
    assert work_big < 8 * work_small, (startup, small.cpu_seconds, big.cpu_seconds)


@pytest.mark.slow
def test_long_lines_are_read_in_bounded_memory(gfxgate_exe, work, monkeypatch):
    """40,000 lines of 4,000 characters (160 MB), each a recognised message, against 4,000: memory does not grow
    with the lines (150,000 took 1.8 GB before the streaming reader: three times the input, some 430 MB more here
    where 16 MB are allowed) and stays under 512 MB. (Once 150,000 lines, 600 MB: the same claim, 3 s of CPU more.)"""
    line = (
        'time=2025-10-05T10:00:01.200Z level=INFO source=types.go:131 msg="inference compute" id=0 library=rocm compute=gfx900 name='
        + "x" * 3850
        + "\n"
    )
    _write(work / "long.log", line, 40_000)
    _write(work / "short.log", line, 4_000)
    small = _diagnose(gfxgate_exe, work, "short.log", monkeypatch, 60)
    run = _diagnose(gfxgate_exe, work, "long.log", monkeypatch, 60)
    assert run.max_rss_kb < MEMORY_LIMIT_KB
    assert run.max_rss_kb - small.max_rss_kb < 16 << 10, (small.max_rss_kb, run.max_rss_kb)  # KB: not with the lines
    d = json.loads(run.stdout)["logs"][0]
    assert d["lines"] == 40_000 and d["recognised"] == 40_000
    assert [g["target"] for g in d["gpus"]] == ["gfx900"]


def test_long_lines_of_noise_are_fast(gfxgate_exe, work):
    """150,000 lines of 4,000 characters that hold no catalogue literal: the prefilter reads them at C speed."""
    _write(work / "noise.log", "level=INFO " + "y" * 3989 + "\n", 150_000)
    run = replay(
        "noise.log", gfxgate_exe, ["diagnose", "--no-upstream", "--format", "json", "noise.log"], cwd=work, code=0
    )
    d = json.loads(run.stdout)["logs"][0]
    assert d["lines"] == 150_000 and d["recognised"] == 0 and d["findings"] == []


def test_yes_piped_in_is_stopped_and_bounded(gfxgate_exe, work):
    """`yes | gfxgate diagnose -`: stops after MAX_LINES lines with a note, in bounded memory and time."""
    yes = subprocess.Popen(["yes"], stdout=subprocess.PIPE)
    try:
        run = replay(
            "yes",
            gfxgate_exe,
            ["diagnose", "--no-upstream", "--format", "json", "-"],
            cwd=work,
            code=0,
            stdin=yes.stdout,
        )
    finally:
        yes.kill()
        yes.wait()
    d = json.loads(run.stdout)["logs"][0]
    assert d["lines"] == 2_000_000 and any("stopped after 2000000 lines" in n for n in d["notes"])


def _crash_loop(runs: int) -> str:
    from tests.diagnose import logs

    block = (
        logs.journal(logs.ollama_0_17_5_crash())
        + ['[GIN] 2025/10/05 - 10:02:00 | 200 | 1.2s | 127.0.0.1 | POST "/api/chat"'] * 300
    )
    return "\n".join(block * runs) + "\n"


def test_a_crash_loop_localises_the_first_crashes_and_the_latest():
    """12 identical crashing runs: the first FIRST_CRASHES and the latest are localised (phase, frames); the others keep
    their outcome and phase (from their own ready line) and say which run holds the localisation."""
    import io

    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from gfxgate.diagnose.stream import FIRST_CRASHES

    d = diagnose_log(read_stream("loop", io.BytesIO(_crash_loop(12).encode())), default_catalogue())
    failed = [r for r in d.runs if r.outcome == "failed"]
    assert len(failed) == 12 and {r.phase for r in failed} == {"compute"}
    localised = [r for r in failed if r.frames]
    # the first ones and the latest; the crash right after the kept ones lies in their window's lines (read anyway)
    assert [r.index for r in localised] == [r.index for r in failed[: FIRST_CRASHES + 1]] + [failed[-1].index]
    assert all(r.frames == failed[0].frames for r in localised)
    assert len({r.summary.split("log line")[0] for r in localised}) == 1  # the same localisation for every kept one
    repeated = [r for r in failed if not r.frames]
    assert all(f"the same failure as run {failed[0].index + 1}" in r.summary for r in repeated)
    assert len(repeated) == 12 - FIRST_CRASHES - 2
    assert any(f"{12 - FIRST_CRASHES - 1} crash window(s) of a failure already kept" in n for n in d.notes), d.notes
    assert (
        d.conclusions[0].kind == "crashed-computing"
        and "in ggml_backend_sched_graph_compute_async" in d.conclusions[0].text
    )


def test_a_thousand_identical_crashes_keep_a_bounded_number_of_windows(gfxgate_exe, work):
    """1,000 crashing runs through the installed script: FIRST_CRASHES + 2 localisations (the first ones, the crash
    inside their window, the latest), 996 windows not kept, in bounded memory and time (before the bound every
    crash window was kept and localised)."""
    from gfxgate.diagnose.stream import FIRST_CRASHES

    (work / "loop.log").write_text(_crash_loop(1_000), encoding="utf-8")
    run = replay(
        "loop.log", gfxgate_exe, ["diagnose", "--no-upstream", "--format", "json", "loop.log"], cwd=work, code=0
    )
    assert run.max_rss_kb < MEMORY_LIMIT_KB
    d = json.loads(run.stdout)["logs"][0]
    failed = [r for r in d["runs"] if r["outcome"] == "failed"]
    assert len(failed) == 1_000 and {r["phase"] for r in failed} == {"compute"}
    assert sum(1 for r in failed if r["frames"]) == FIRST_CRASHES + 2 and failed[-1]["frames"]
    assert any(f"{1_000 - FIRST_CRASHES - 1} crash window(s) of a failure already kept" in n for n in d["notes"]), d[
        "notes"
    ]
    assert all("the same failure as run 1 " in r["summary"] for r in failed if not r["frames"])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))
