"""Evidence collectors degrade to notes; the log tail reads exactly the run's new lines."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gfxgate.host.probes import run_tool
from gfxgate.sweep.evidence import LogTail, gpu_probes, journal_window


def test_log_tail_reads_new_complete_lines_with_file_line_numbers(tmp_path):
    log = tmp_path / "s.log"
    log.write_text("old 1\nold 2\n")
    tail = LogTail.at_end(log)
    with open(log, "a") as handle:
        handle.write("new 3\nnew 4\npartial")
    got = tail.read_new()
    assert got.lines == ("new 3", "new 4") and got.first_line_no == 3 and got.ok
    with open(log, "a") as handle:
        handle.write(" line 5\n")
    again = tail.read_new()
    assert again.lines == ("partial line 5",) and again.first_line_no == 5
    assert tail.read_new().lines == () and "no log lines" in tail.read_new().note


def test_log_tail_after_rotation_and_missing_file(tmp_path):
    log = tmp_path / "s.log"
    log.write_text("a\nb\nc\n")
    tail = LogTail.at_end(log)
    log.write_text("x\n")
    got = tail.read_new()
    assert got.lines == ("x",) and "rotated" in got.note
    log.unlink()
    missing = tail.read_new()
    assert not missing.ok and "cannot read server log" in missing.note


def test_missing_tools_become_notes(monkeypatch, tmp_path):
    monkeypatch.setenv(
        "PATH", str(tmp_path)
    )  # an empty folder: no journalctl, rocm-smi, amd-smi, nvidia-smi, vulkaninfo
    now = datetime.now(timezone.utc)
    journal = journal_window("ollama-vulkan.service", now - timedelta(seconds=5), now)
    assert not journal.ok and "journalctl is not installed" in journal.note
    probes = gpu_probes()
    assert [p.source for p in probes] == ["rocm-smi", "amd-smi", "nvidia-smi", "vulkaninfo"]
    assert all(not p.ok and "not installed" in p.note for p in probes)


def test_failing_tool_reports_its_exit_status():
    code, _, problem = run_tool(["false"])
    assert code == 1 and "exited with status 1" in problem
    code, out, problem = run_tool(["echo", "ok"])
    assert code == 0 and out == "ok\n" and problem == ""


def test_log_tail_keeps_the_newest_part_of_a_runaway_log_with_true_line_numbers(tmp_path):
    from gfxgate.sweep.evidence import MAX_LOG_BYTES

    log = tmp_path / "s.log"
    log.write_text("".join(f"old {i}\n" for i in range(1, 1001)))
    tail = LogTail.at_end(log)
    assert (tail.offset, tail.line_no) == (log.stat().st_size, 1000)
    with open(log, "a") as handle:  # ~6 MB in one run: far more than is kept
        handle.write("".join(f"new {i:07d}\n" for i in range(1001, 501001)))
    got = tail.read_new()
    assert "kept the last" in got.note
    assert sum(len(line) + 1 for line in got.lines) <= MAX_LOG_BYTES
    assert got.lines[-1] == "new 0501000"
    assert got.lines[0] == f"new {got.first_line_no:07d}"  # the number is the file's own line number
    with open(log, "a") as handle:
        handle.write("after\n")
    again = tail.read_new()
    assert again.lines == ("after",) and again.first_line_no == 501001


def test_log_tail_never_opens_a_fifo_put_there_after_the_check(tmp_path):
    import os
    import time

    log = tmp_path / "s.log"
    tail = LogTail.at_end(log)  # missing at the start: the server creates it
    os.mkfifo(log)  # … but a FIFO appears instead (no writer: reading it would block forever)
    start = time.monotonic()
    assert LogTail.at_end(log).offset == 0
    got = tail.read_new()
    assert not got.ok and "is a FIFO, not a regular file" in got.note
    assert time.monotonic() - start < 1
