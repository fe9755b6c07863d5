"""Issue 28, defects 5–9 (the sweep's processes and files), replayed through the installed console script with
the issue-13 harness (tests/cli/test_replays.py: exit code, one error line, < 5 s of CPU, < 512 MB, nothing
outside the named outputs changed). A run that must succeed gets a deadline of ``DEADLINE_S``, a hang guard: its
claim is about output and processes, and a busy machine must not turn it into a recorded timeout.

5. a server command that forks a helper and exits: the helper is gone after the cell;
6. SIGTERM / SIGHUP during a sweep: handled like Ctrl-C (one line, exit 143 / 129, the server stopped, also one
   started through a wrapper that does not exec it);
7. 512 MiB of server output: read through a bounded pipe copy, the log file and its lines capped;
8. ``CMD --version`` printing 600 MB: read up to 64 KiB, then killed;
9. the worklog on a full file system: exit 2 and one line. The file system is a real 16 KiB tmpfs, mounted in a
   private mount namespace (``unshare -m`` as root, ``unshare -Urm`` as a user where user namespaces are allowed),
   so nothing outside the test's process sees it and nothing needs unmounting; no LD_PRELOAD, no fake errno.
   CI runs as root, where the test must run: it fails there rather than skip.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.host.test_proc import _gone  # a process ended (killed there if not: a failing test leaves nothing running)
from tests.signals import inherited_default
from tests.sweep.test_sweep_faults import hostile  # noqa: F401 - fixture: misbehaving Ollama-API servers
from tests.cli.test_replays import DEADLINE_S, HANG_GUARD_S, PEER, _runs, _sweep, replay
from tests.cli.test_replays import env, work  # noqa: F401 - fixtures

LOGS = "w.jsonl.logs/"


def _llama(command: list[str] | str, *extra: str) -> list[str]:
    text = command if isinstance(command, str) else shlex.join(command)
    return [
        "sweep",
        "--llama-server",
        f"x={text}",
        "--model-file",
        "m.gguf",
        "--num-gpu",
        "0",
        "--timeout",
        "1",
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        "w.jsonl",
        *extra,
    ]


def _logs(work: Path) -> list[Path]:
    return sorted((work / LOGS).glob("*.log"))


# -- 5. orphans ------------------------------------------------------------------------------------------------
def test_5_a_helper_forked_by_the_server_command_is_gone_after_the_cell(gfxgate_exe, work, env):
    """CMD forks a helper (out of the pipes, as a daemon would) and exits: the cell is a recorded load failure,
    and the helper, which PR_SET_PDEATHSIG does not reach, dies with the server's process group."""
    (work / "m.gguf").write_bytes(b"GGUF")
    command = ["sh", "-c", 'sleep 60 >/dev/null 2>&1 & echo "helper $!"; exit 1', "sh"]
    replay("28.5 orphan helper", gfxgate_exe, _llama(command), cwd=work, env=env, code=0, outputs=("w.jsonl", LOGS))
    [run] = _runs(work)
    assert run["outcome"] == "crash" and run["phase"]["phase"] == "load", run["phase"]
    [log] = _logs(work)
    helper = int(log.read_text().split()[1])
    assert _gone(helper), f"the server's helper {helper} outlived its cell"


# -- 6. SIGTERM / SIGHUP -------------------------------------------------------------------------------------
def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _peer_pid(mode: str, model: Path) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if str(PEER).encode() in argv and mode.encode() in argv and str(model).encode() in argv:
                return int(entry.name)
    return None


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_6_sigterm_or_sighup_during_a_sweep_stops_it_like_ctrl_c(gfxgate_exe, work, env, sig):
    """The server runs behind a shell that does not exec it (``; exit $?``), so only its process group reaches it;
    the signal lands while /completion is in flight (the peer never answers it)."""
    model = work / "m.gguf"
    model.write_bytes(b"GGUF")
    script = f'{shlex.quote(sys.executable)} {shlex.quote(str(PEER))} silent "$@"; exit $?'
    args = _llama(["sh", "-c", script, "sh"], "--timeout", str(DEADLINE_S))
    seen: dict[str, int | None] = {}

    def signal_it(launcher: subprocess.Popen) -> None:
        deadline = time.monotonic() + DEADLINE_S  # a hang guard
        server = None
        while time.monotonic() < deadline:
            logs = _logs(work)
            if logs and b"model loaded" in logs[0].read_bytes():
                server = _peer_pid("silent", model.resolve())
                if server is not None:
                    break
            time.sleep(0.02)
        seen["server"] = server
        time.sleep(0.3)  # /health answered, /completion sent
        [sweeper] = _children(launcher.pid)
        os.kill(sweeper, sig)

    try:
        with inherited_default(sig):  # gfxgate keeps an ignored SIGHUP ignored (nohup): start it as a terminal would
            replay(
                f"28.6 {sig.name} during a sweep",
                gfxgate_exe,
                args,
                cwd=work,
                env=env,
                code=128 + sig,
                outputs=("w.jsonl", LOGS),
                during=signal_it,
                error=f"interrupted by {sig.name}",
            )
    finally:  # checked (and killed if alive) also when the replay failed
        survived = seen.get("server") is not None and not _gone(seen["server"])
    assert seen["server"] is not None
    assert not survived, f"the server outlived a sweep ended by {sig.name}"
    assert not (work / "w.jsonl").exists() or not _runs(work)  # the interrupted cell is not recorded, as on Ctrl-C


# -- 7. server output ----------------------------------------------------------------------------------------
def test_7_a_flood_of_server_output_is_read_bounded_and_the_log_capped(gfxgate_exe, work, env):
    """512 MiB on stderr (8,192 lines of 64 KiB) between the load lines and 'model loaded': the run is still read
    right (its offload from the log's head, the load boundary from its tail) in bounded memory."""
    from gfxgate.sweep import llamaserver

    (work / "m.gguf").write_bytes(b"GGUF")
    replay(
        "28.7 512 MiB of server output",
        gfxgate_exe,
        _llama([sys.executable, str(PEER), "flood"], "--timeout", str(DEADLINE_S)),
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl", LOGS),
    )
    [run] = _runs(work)
    assert run["outcome"] == "ok" and run["offload"]["layers"] == 1 and run["offload"]["model_loaded_line"]
    [log] = _logs(work)
    assert (
        log.stat().st_size <= llamaserver.LOG_HEAD_BYTES + llamaserver.LOG_TAIL_BYTES + 2 * llamaserver.MAX_LINE_BYTES
    )
    lines = log.read_bytes().split(b"\n")
    assert max(len(line) for line in lines) <= llamaserver.MAX_LINE_BYTES + 64
    assert any(line.startswith(b"[gfxgate: ") and b"left out here]" in line for line in lines)


# -- 8. --version ------------------------------------------------------------------------------------------
def test_8_a_version_answer_of_600_mb_is_read_to_64_kib(gfxgate_exe, work, env):
    (work / "m.gguf").write_bytes(b"GGUF")
    replay(
        "28.8 600 MB --version",
        gfxgate_exe,
        _llama([sys.executable, str(PEER), "version-flood"], "--timeout", str(DEADLINE_S)),
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl", LOGS),
    )
    [run] = _runs(work)
    assert run["outcome"] == "ok" and run["server_version"] == "llama.cpp 1 (abc)"


# -- 9. a full disk ------------------------------------------------------------------------------------------
# In the private mount namespace: a 16 KiB tmpfs on the folder, filled to the last byte, then exec gfxgate.
_FULL = textwrap.dedent("""
    import os, subprocess, sys
    folder = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k,mode=0755", "gfxgate-full", folder], check=True)
    if sys.argv[2]:  # a worklog to start from, put there before the disk is full
        with open(os.path.join(folder, "w.jsonl"), "wb") as seeded:
            seeded.write(sys.argv[2].encode())
    with open(os.path.join(folder, "filler"), "wb", buffering=0) as filler:
        try:
            while True:
                filler.write(b"f" * 4096)
        except OSError:
            pass
    os.execv(sys.argv[3], sys.argv[3:])
""")


def _namespace_flags() -> list[str]:
    """``unshare`` flags that give this user a private mount namespace where it may mount a tmpfs."""
    for flags in (["-m"], ["-Urm"]) if os.geteuid() == 0 else (["-Urm"],):
        probe = subprocess.run(
            ["unshare", *flags, "--", "mount", "-t", "tmpfs", "-o", "size=4k", "probe", "/mnt"],
            capture_output=True,
            timeout=30,
        )
        if probe.returncode == 0:
            return flags
    if os.geteuid() == 0:
        pytest.fail("as root, `unshare -m` must give a mount namespace (CI runs this test; it must not skip)")
    pytest.skip("no mount namespace for this user (unprivileged user namespaces are off); CI runs it as root")


def _full_disk_sweep(work: Path, url: str, seed: str = "") -> list[str]:
    (work / "full").mkdir()
    return [
        *_namespace_flags(),
        "--",
        sys.executable,
        "-c",
        _FULL,
        str(work / "full"),
        seed,
        "gfxgate",
        *_sweep(url)[:-1],
        "full/w.jsonl",
    ]


def test_9_worklog_on_a_full_file_system_is_exit_2(gfxgate_exe, work, env, hostile):
    args = _full_disk_sweep(work, hostile("healthy"))
    args[args.index("gfxgate")] = gfxgate_exe
    run = replay(
        "28.9 worklog on a full disk", "unshare", args, cwd=work, env=env, code=2, error="No space left on device"
    )
    assert "cannot append to worklog full/w.jsonl" in run.stderr
    assert list((work / "full").iterdir()) == []  # the tmpfs was private to the sweep's namespace


def test_9_a_torn_last_line_that_cannot_be_set_aside_on_a_full_disk_is_exit_2(gfxgate_exe, work, env, hostile):
    """The warning about the torn line comes first (so not the one-line harness), then the error, exit 2."""
    args = _full_disk_sweep(work, hostile("healthy"), seed='{"torn')
    args[args.index("gfxgate")] = gfxgate_exe
    done = subprocess.run(["unshare", *args], cwd=work, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr and lines[0].startswith("gfxgate: warning: full/w.jsonl:1: ignored a torn")
    assert (
        lines[1]
        == ("gfxgate: error: cannot repair the torn last line of worklog full/w.jsonl: No space left on device")
        and lines[2].startswith("  hint: ")
        and len(lines) == 3
    )
