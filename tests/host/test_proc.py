"""host.proc: one runner, the process group always killed, one timeout, one output budget (issue 25 item 1);
and nothing outside gfxgate/host/ imports subprocess."""

from __future__ import annotations

import ast
import os
import sys
import time
from pathlib import Path

from gfxgate.host import proc

PACKAGE = Path(__file__).resolve().parents[2] / "gfxgate"


def _state(pid: int) -> str | None:
    """None: gone; "Z": exited, waiting to be reaped; else the running state letter."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def _gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while _state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.01)
    alive = _state(pid) not in (None, "Z")
    if alive:
        os.kill(pid, 9)  # never leave it running when the test fails
    return not alive


def test_nothing_outside_host_imports_subprocess():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).parts[0] == "host":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            if any(n == "subprocess" or n.startswith("subprocess.") for n in names):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not offenders, offenders
    assert (PACKAGE / "host" / "proc.py").read_text().count("import subprocess") == 1  # the walk sees real files


def test_a_helper_forked_by_a_finished_command_is_killed_with_its_group():
    # the helper leaves the pipes, so the command answers at once; the group is still killed at the end
    done = proc.run_bounded(["sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"], timeout=10, max_output=None)
    helper = int(done.stdout)
    assert done.returncode == 0 and not done.timed_out
    assert _gone(helper), "the helper outlived the command"


def test_the_output_budget_kills_the_command_at_once():
    start = time.monotonic()
    done = proc.run_bounded(["yes"], timeout=30, max_output=65536)
    assert done.over_budget and len(done.stdout) == 65536 and done.returncode == -9
    assert time.monotonic() - start < 5


def test_the_timeout_bounds_a_command_whose_helper_holds_the_pipe():
    start = time.monotonic()
    done = proc.run_bounded(["sh", "-c", "sleep 60 & echo $!; exit 3"], timeout=0.5, max_output=None)
    assert done.timed_out and done.returncode == 3  # the leader's own status: it had exited
    assert time.monotonic() - start < 5 and _gone(int(done.stdout))


def test_stdin_larger_than_a_pipe_and_a_merged_stderr():
    done = proc.run_bounded(
        [sys.executable, "-c", "import sys; d = sys.stdin.buffer.read(); print(len(d)); print('e', file=sys.stderr)"],
        timeout=30,
        input=b"x" * 1_000_000,
        max_output=None,
        merge_stderr=True,
    )
    assert done.returncode == 0 and sorted(done.stdout.split()) == [b"1000000", b"e"] and done.stderr == b""


def test_a_server_whose_leader_exited_still_has_its_group_killed_on_close(tmp_path):
    pidfile = tmp_path / "helper"
    server = proc.spawn(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; exit 1"])
    assert server.wait(10) == 1  # seen, not reaped: the group's id stays the leader's
    assert _state(server.pid) == "Z"
    helper = int(pidfile.read_text())
    assert _state(helper) not in (None, "Z")
    assert server.close() == 1
    assert _gone(helper) and _state(server.pid) is None


def test_stop_escalates_to_sigkill_for_a_server_that_ignores_sigterm():
    server = proc.spawn(
        [
            sys.executable,
            "-c",
            "import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "print('ready', flush=True)\ntime.sleep(60)",
        ],
        stdout=proc.PIPE,
    )
    assert server.stdout.readline() == b"ready\n"
    rc, killed = server.stop(0.3)
    assert killed and rc == -9


def _pump(data: bytes, **caps) -> tuple[bytes, proc.LogPump]:
    """Feed ``data`` through a real pipe into a LogPump writing to another pipe; what it wrote."""
    read, write = os.pipe()
    out_r, out_w = os.pipe()
    pump = proc.LogPump(
        open(read, "rb", buffering=0),
        open(out_w, "wb", buffering=0),
        **{"max_line": 10, "head_lines": 3, "head_bytes": 1000, "tail_lines": 2, "tail_bytes": 1000, **caps},
    )
    pump.start()
    os.write(write, data)
    os.close(write)
    pump.join(10)
    assert not pump.is_alive()  # it closed its pipe and its file
    with open(out_r, "rb") as got:
        return got.read(), pump


def test_the_log_pump_keeps_the_head_and_the_tail_with_lines_cut():
    lines = b"".join(b"line %d\n" % i for i in range(100))
    got, pump = _pump(b"x" * 25 + b"\n" + lines)
    assert got.split(b"\n") == [
        b"xxxxxxxxxx [gfxgate: 15 more bytes of this line left out]",
        b"line 0",
        b"line 1",
        b"[gfxgate: 96 lines (760 bytes) of the server's output left out here]",
        b"line 98",
        b"line 99",
        b"",
    ]
    small, _ = _pump(b"a\nb\nlast without newline")
    assert small == b"a\nb\nlast witho [gfxgate: 10 more bytes of this line left out]"
    assert _pump(b"a\nb\n")[0] == b"a\nb\n"  # under the caps: the server's bytes exactly


def test_the_log_pump_bounds_a_flood_of_one_line():
    got, pump = _pump(b"y" * (8 << 20), tail_bytes=4096)
    assert len(got) < 200 and not pump.error


def test_output_still_in_the_pipe_when_the_server_is_closed_reaches_the_log(tmp_path):
    """A crashing server's last lines sit in the pipe when it is reaped: closing the process must not lose them
    (the pump owns the pipe and reads it to its end)."""
    for attempt in range(20):
        server = proc.spawn(
            [sys.executable, "-c", "import sys; sys.stdout.write('a' * 60000 + '\\nLAST\\n')"], stdout=proc.PIPE
        )
        assert server.wait(10) == 0  # exited: all its output waits in the pipe
        pump = server.pump_output(
            open(tmp_path / "log", "wb"),
            max_line=1 << 20,
            head_lines=100,
            head_bytes=1 << 20,
            tail_lines=100,
            tail_bytes=1 << 20,
        )
        server.close()
        pump.join(10)
        assert (tmp_path / "log").read_bytes() == b"a" * 60000 + b"\nLAST\n", attempt
