"""Issue 13's small hostile files, built from real clang-19 output, scanned by the installed console script.

Each must end in bounded time and memory with an error entry (file + limit) or an honest result; the
memory figure is the peak RSS of the `gfxgate` process alone (measured by a fresh parent process). The sixteen
CCOB bombs' shared budget is checked in process at a smaller scale; the full-size bombs through the console script,
under the same bounds, are tests/cli/test_replays.py::test_2_sixteen_ccob_bombs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from tests.artifacts.artifact_builders import ccob_bomb, many_note_sections, many_sections_no_nul

MEMORY_LIMIT_KB = 512 * 1024
TIME_LIMIT_S = 20  # the issue asks for < 5 s; measured 0.2–3 s here, the slack is for a loaded CI machine

_MEASURE = textwrap.dedent("""
    import json, resource, subprocess, sys, time
    start = time.monotonic()
    proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    print(json.dumps({"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr,
                      "seconds": time.monotonic() - start,
                      "max_rss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
""")


def measured(exe: str, *args: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-S", "-c", _MEASURE, exe, *args], capture_output=True, text=True, timeout=300
    )
    return json.loads(out.stdout)


def scan_json(gfxgate_exe: str, *args: str) -> tuple[dict, dict]:
    run = measured(gfxgate_exe, "artifacts", "--format", "json", *args)
    assert run["rc"] == 0, run["stderr"]
    assert "Traceback" not in run["stderr"]
    assert run["seconds"] < TIME_LIMIT_S, run["seconds"]
    assert run["max_rss_kb"] < MEMORY_LIMIT_KB, run["max_rss_kb"]
    return json.loads(run["stdout"]), run


def errors_of(report: dict) -> list[str]:
    return [e["message"] for f in report["files"] for e in f.get("errors", [])]


def test_v2_code_object_with_1000_note_sections(built, gfxgate_exe, tmp_path):
    """1.1 MB, 1,000 SHT_NOTE sections over the same bytes: 2 minutes before; now a per-object note limit."""
    path = tmp_path / "notes.hsaco"
    path.write_bytes(many_note_sections(built.code_object("gfx900").read_bytes(), 1000))
    report, _ = scan_json(gfxgate_exe, str(path))
    assert any("notes (a per-code-object limit)" in m for m in errors_of(report)), errors_of(report)
    assert not report["files"][0].get("code_objects")


def test_v2_code_object_with_65535_sections(built, gfxgate_exe, tmp_path):
    path = tmp_path / "sections.hsaco"
    path.write_bytes(many_note_sections(built.code_object("gfx900").read_bytes(), 65534, 16 << 10))
    report, _ = scan_json(gfxgate_exe, "--kernels", str(path))
    assert errors_of(report) and not report["files"][0].get("code_objects")


def test_host_elf_with_65535_sections_and_no_nul_in_the_name_table(built, gfxgate_exe, tmp_path):
    """20 MB: over 4 GB before (every section name ran to the end of a 16 MB table)."""
    path = tmp_path / "many.so"
    path.write_bytes(many_sections_no_nul(built.hip_so("budget-host.so").read_bytes()))
    report, run = scan_json(gfxgate_exe, str(path))
    assert report["summary"]["by_kind"] == {"host-elf": 1}


@pytest.mark.parametrize("jobs", [None, 16, 64])
def test_sixteen_ccob_bombs_share_one_inflation_budget(built, tmp_path, monkeypatch, jobs):
    """Sixteen CCOBs that each inflate more than their share of the scan's inflation total: 16 × 256 MB against
    1 GiB with -j16 before the total was one per scan. The sharing does not depend on the sizes, so here in
    process each bomb inflates 4 MB against a total of 16 MB (the full-size bombs through the console script,
    with their CPU and memory bounds at each -j: tests/cli/test_replays.py::test_2_sixteen_ccob_bombs)."""
    from gfxgate.artifacts import budget
    from gfxgate.artifacts.scan import scan_paths

    monkeypatch.setitem(budget.LIMITS, "inflated bytes", 16 << 20)
    bomb = ccob_bomb(built.code_object("gfx900").read_bytes(), inflated=4 << 20)
    assert len(bomb) < 16 << 10
    for i in range(16):
        (tmp_path / f"bomb{i:02}.ccob").write_bytes(bomb)
    report = scan_paths([tmp_path], jobs=jobs)
    assert len(report.files) == 16
    errors = [e.message for f in report.files for e in f.errors]
    spent = [m for m in errors if m.startswith(f"budget exhausted: inflated bytes over {16 << 20} ")]
    assert spent, errors
    assert all(f.errors for f in report.files if not f.code_objects)  # no file silently empty
    read = [f.path for f in report.files if any(c.confirmed for c in f.code_objects)]
    assert 0 < len(read) < 4, read  # 4 MB each: some, not four whole bombs in 16 MB


def test_truncated_code_object_is_not_reported_valid(built, gfxgate_exe, tmp_path):
    whole = built.code_object("gfx900").read_bytes()
    path = tmp_path / "cut.hsaco"
    path.write_bytes(whole[: len(whole) // 2])
    report, _ = scan_json(gfxgate_exe, str(path))
    assert not report["files"][0].get("code_objects")
    assert any(m.startswith("truncated code object") for m in errors_of(report)), errors_of(report)


def test_truncated_bundle_entry_is_not_reported_valid(built, gfxgate_exe, tmp_path):
    whole = built.device_bundle("cut-bundle.o").read_bytes()
    path = tmp_path / "cut.o"
    path.write_bytes(whole[: len(whole) - 200])
    report, _ = scan_json(gfxgate_exe, str(path))
    objects = report["files"][0].get("code_objects") or []
    assert len(objects) < 2
    assert any(word in m for m in errors_of(report) for word in ("truncated", "past the end", "outside the bundle"))


def test_sha256_of_a_file_cut_during_the_scan_is_an_error_not_sigbus(tmp_path):
    """The file shrinks between the size check and the hashing (a package upgrade mid-scan). With mmap this
    was SIGBUS; it runs in a child so a regression kills the child, not the test session."""
    path = tmp_path / "big.bin"
    path.write_bytes(b"\x00" * (16 << 20))
    probe = textwrap.dedent(f"""
        import os
        from gfxgate.artifacts import elf, scan
        from gfxgate.artifacts.budget import Budget
        fd = os.open({str(path)!r}, os.O_RDONLY)
        size = os.fstat(fd).st_size
        data = elf.FileData(fd, size)
        os.truncate({str(path)!r}, 4096)
        report = scan._scan_data("big.bin", data, size, False, True, 1 << 20, None, Budget())
        print(report.sha256, [e.message for e in report.errors])
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (out.returncode, out.stderr)
    assert out.stdout.startswith("None") and "changed size during the scan" in out.stdout


def test_budget_is_shared_between_threads():
    import threading

    from gfxgate.artifacts.budget import Budget, BudgetExceeded

    budget = Budget(notes=1000)
    failures = []

    def spend():
        for _ in range(100):
            try:
                budget.charge("notes", 1)
            except BudgetExceeded:
                failures.append(1)

    threads = [threading.Thread(target=spend) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert budget.used["notes"] == 1000 and len(failures) == 600
