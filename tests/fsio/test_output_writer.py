"""The one output writer (gfxgate/fsio.py), driven through the installed console script's `-o`.

Each case is a reproduction from issue 13: the old writer renamed a fixed `.NAME.tmp` over the target, so it
replaced devices, FIFOs and symlinks and, through a planted `.NAME.tmp` symlink, overwrote any file.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from gfxgate.fsio import OutputError, write_text_atomic


def run(exe: str, *args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def scan_to(exe: str, out: str, cwd: Path) -> subprocess.CompletedProcess:
    return run(exe, "scan", "--target", "gfx900", "-o", out, cwd=cwd)


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int, needle: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.startswith("gfxgate: error: ") and needle in proc.stderr, proc.stderr


def test_planted_tmp_symlink_is_never_written_through(gfxgate_exe, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / ".r.md.tmp").symlink_to(victim)
    proc = scan_to(gfxgate_exe, "r.md", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert victim.read_text() == "precious\n"
    assert (tmp_path / ".r.md.tmp").is_symlink()
    assert (tmp_path / "r.md").read_text().startswith("# gfxgate gate matrix: gfx900")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".r.md.tmp", "r.md", "victim"]  # no temp file left


def test_symlink_target_is_followed_and_stays_a_link(gfxgate_exe, tmp_path):
    (tmp_path / "real.md").write_text("old\n")
    (tmp_path / "link.md").symlink_to("real.md")
    proc = scan_to(gfxgate_exe, "link.md", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "link.md").is_symlink() and os.readlink(tmp_path / "link.md") == "real.md"
    assert (tmp_path / "real.md").read_text().startswith("# gfxgate gate matrix: gfx900")


def test_fifo_with_a_reader_is_written_in_place(gfxgate_exe, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the report (< 64 KiB) waits in the pipe buffer
    try:
        proc = scan_to(gfxgate_exe, str(fifo), tmp_path)
        got = b""
        while chunk := _read_some(reader):
            got += chunk
    finally:
        os.close(reader)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got.startswith(b"# gfxgate gate matrix: gfx900")


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except BlockingIOError:
        return b""


def test_fifo_without_a_reader_is_refused_not_a_hang(gfxgate_exe, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = scan_to(gfxgate_exe, str(fifo), tmp_path)
    assert_one_line_error(proc, 2, "FIFO with no reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def private_device(tmp_path: Path, name: str, real: str) -> Path:
    """A character device to write to. As root, a private node with the same numbers as ``real`` (so a writer
    that replaces devices cannot damage the machine's own /dev/null while this test proves it); else ``real``."""
    if os.geteuid() != 0:
        return Path(real)
    st = os.stat(real)
    node = tmp_path / name
    os.mknod(node, 0o666 | stat.S_IFCHR, st.st_rdev)
    try:
        os.close(os.open(node, os.O_WRONLY))
    except OSError as exc:
        pytest.fail(f"cannot open a device node under {tmp_path} ({exc.strerror}); is the test folder mounted nodev?")
    return node


def test_device_target_stays_a_device(gfxgate_exe, tmp_path):
    """As root the old writer replaced /dev/null with a regular file; a device must stay the device."""
    null = private_device(tmp_path, "null", "/dev/null")
    before = os.lstat(null)
    proc = scan_to(gfxgate_exe, str(null), tmp_path)
    assert proc.returncode == 0, proc.stderr
    after = os.lstat(null)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino
    assert not list(null.parent.glob(".null*"))


def test_full_device_is_a_clear_error_and_stays_a_device(gfxgate_exe, tmp_path):
    full = private_device(tmp_path, "full", "/dev/full")
    proc = scan_to(gfxgate_exe, str(full), tmp_path)
    assert_one_line_error(proc, 2, "No space left on device")
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_dev_stdout_is_standard_output(gfxgate_exe, tmp_path):
    proc = scan_to(gfxgate_exe, "/dev/stdout", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# gfxgate gate matrix: gfx900")


def test_missing_folder_is_a_usage_error(gfxgate_exe, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    proc = scan_to(gfxgate_exe, "no/such/folder/r.md", work)
    assert_one_line_error(proc, 2, "does not exist")
    assert list(work.iterdir()) == []


def test_a_folder_is_refused(tmp_path):
    with pytest.raises(OutputError, match="is a folder"):
        write_text_atomic(tmp_path, "x")


def test_existing_file_keeps_its_mode_and_new_file_follows_umask(tmp_path):
    kept = tmp_path / "kept.md"
    kept.write_text("old")
    kept.chmod(0o640)
    write_text_atomic(kept, "new")
    assert kept.read_text() == "new" and stat.S_IMODE(kept.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "fresh.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.md").stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.md", "kept.md"]


def test_a_failed_write_leaves_the_target_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "r.md"
    target.write_text("old")

    def boom(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OutputError, match="Input/output error"):
        write_text_atomic(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]


def test_no_writer_in_the_tree_bypasses_fsio():
    """Every file gfxgate writes on request goes through gfxgate/fsio.py (no private `.tmp` + rename copies)."""
    import re

    root = Path(__file__).resolve().parents[2] / "gfxgate"
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "fsio.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if re.search(r"\.tmp\b|\.write_text\(|\.replace\((?:output|path|target)\)", line):
                offenders.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    assert offenders == []
