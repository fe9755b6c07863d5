"""A wall-clock deadline per request for `--llama-server` cells (issue 13): a server that drips its answer — the
status line, the headers, the body, or /health while loading — or never answers is a recorded timeout within the
deadline, and the server is stopped. The peer is a real process on 127.0.0.1 (tests/sweep/slow_llama_server.py)
started by `gfxgate sweep` (run in process, tests/inprocess.py) exactly as it starts llama-server; the real llama-server stopped with
SIGSTOP is tests/sweep/test_sweep_llamaserver.py::test_stopped_server_times_out_and_is_stopped.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from pathlib import Path

import pytest

PEER = Path(__file__).with_name("slow_llama_server.py")
TIMEOUT_S = 2.0


def _peers(marker: str = "") -> set[int]:
    """Pids of slow_llama_server.py processes on this machine whose command line holds ``marker`` (this test's own:
    other tests, on another xdist worker, start the same peer at the same time)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
                if str(PEER).encode() in cmdline and marker.encode() in cmdline:
                    found.add(int(proc.name))
            except OSError:
                pass
    return found


@pytest.mark.parametrize(
    "mode, where",
    [
        ("drip-body", "/completion"),
        ("drip-headers", "/completion"),
        ("silent", "/completion"),
        ("health-drip", "/health"),
        ("health-silent", "/health"),
    ],
)
def test_a_slow_llama_server_is_a_timeout_within_the_deadline(gfxgate_cli, tmp_path, mode, where):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")  # the peer never reads it
    worklog = tmp_path / "w.jsonl"
    # the peer ignores it: names this test's servers among the workers' (the whole path: a folder's name repeats on
    # the other xdist worker, which may run another case of this test at the same time)
    marker = f"--gfxgate-test={tmp_path}"
    before = _peers(marker)
    command = shlex.join([sys.executable, str(PEER), mode, marker])
    args = [
        "sweep",
        "--llama-server",
        f"slow={command}",
        "--model-file",
        str(model),
        "--num-gpu",
        "0",
        "--timeout",
        str(TIMEOUT_S),
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        str(worklog),
    ]
    start = time.monotonic()
    proc = gfxgate_cli(*args)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    [run] = [json.loads(line) for line in worklog.read_text().splitlines()]
    assert run["outcome"] == "timeout" and run["phase"]["phase"] == "timeout", run
    if where == "/health":
        assert run["error"].startswith(f"/health did not answer ok within {TIMEOUT_S:g} s"), run["error"]
        assert run["overhead"]["health_wait_s"] is None
    else:
        assert run["error"].startswith(f"no complete answer within {TIMEOUT_S:g} s"), run["error"]
        assert run["overhead"]["health_wait_s"] is not None and run["overhead"]["completion_s"] is None
    assert run["overhead"]["server_exit"]["after_stop"] is not None  # gfxgate stopped it
    # the error above says the sweep's own deadline fired; this is the hang guard (the 100 KB drip takes hours)
    assert elapsed < 60, elapsed
    assert _peers(marker) <= before, "the slow server outlived its cell"


def test_the_deadline_covers_the_version_probe_of_a_wrapper_that_hangs(gfxgate_cli, tmp_path):
    """`COMMAND --version` of a wrapper whose child keeps the output pipe open: bounded by --timeout and the
    whole process group killed, not the 60 s probe limit (nor forever: a grandchild holding the pipe)."""
    wrapper = tmp_path / "hangs.sh"
    pids = tmp_path / "pids"
    wrapper.write_text(
        f'#!/bin/sh\nif [ "$1" = --version ]; then sleep 300 & echo $! $$ > {pids}; exec sleep 300; fi\n'
        f'exec {sys.executable} {PEER} silent "$@"\n'
    )
    wrapper.chmod(0o755)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    worklog = tmp_path / "w.jsonl"
    args = [
        "sweep",
        "--llama-server",
        f"slow={wrapper}",
        "--model-file",
        str(model),
        "--num-gpu",
        "0",
        "--timeout",
        str(TIMEOUT_S),
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        str(worklog),
    ]
    start = time.monotonic()
    proc = gfxgate_cli(*args)
    elapsed = time.monotonic() - start
    assert proc.returncode == 0, proc.stderr
    [run] = [json.loads(line) for line in worklog.read_text().splitlines()]
    assert run["outcome"] == "timeout" and run["server_version"] is None
    assert elapsed < 40, elapsed  # bounded by --timeout (2 s), not by the probe's own 60 s limit (nor forever)
    probe = [int(pid) for pid in pids.read_text().split()]
    assert len(probe) == 2
    assert not [pid for pid in probe if _running(pid)], probe


def _running(pid: int, wait: float = 5.0) -> bool:
    """Whether pid still runs after ``wait`` s (a killed orphan is a zombie until init reaps it)."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


def test_the_transport_bounds_each_request_not_each_read(tmp_path):
    """In-process, the transport alone: a peer dripping its status line one byte per 0.1 s (each read waits 0.1 s,
    the whole answer 4 s) ends at the request's deadline. No wall-clock upper bound (a busy machine stretches it):
    the request fails with the transport's own timeout, where a deadline per read, or none, would have let the drip
    finish and the request succeed (httpx's own timeout here is 30 s per read); and not before its deadline."""
    import socket
    import threading

    import httpx

    from gfxgate.sweep.deadline import DEADLINE, DeadlineTransport

    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve():
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.1)

    threading.Thread(target=serve, daemon=True).start()
    with httpx.Client(transport=DeadlineTransport(0.5), timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.get(f"http://127.0.0.1:{port}/")
        assert time.monotonic() - start >= 0.5
    # an earlier deadline of the request's own wins over the transport's limit (30 s: longer than the whole drip)
    threading.Thread(target=serve, daemon=True).start()
    with httpx.Client(transport=DeadlineTransport(30.0), timeout=30) as client:
        start = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.get(f"http://127.0.0.1:{port}/", extensions={DEADLINE: start + 0.5})
        assert time.monotonic() - start >= 0.5
    listener.close()


def test_the_transports_share_one_ssl_context_per_setting(monkeypatch):
    """Making an SSL context reads the whole CA bundle: every transport of a sweep (a client per cell and per probe)
    shares one per verify/trust_env setting and the certificate files the environment names (counted)."""
    import httpx

    from gfxgate.sweep import deadline

    made = []
    real = httpx.create_ssl_context
    monkeypatch.setattr(httpx, "create_ssl_context", lambda *a, **kw: made.append(kw) or real(*a, **kw))
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    deadline._shared_ssl_context.cache_clear()
    first = [deadline.DeadlineTransport(1.0, trust_env=False) for _ in range(3)]
    assert len({id(t.inner._pool._ssl_context) for t in first}) == 1 and len(made) == 1
    deadline.DeadlineTransport(1.0, trust_env=True)
    deadline.DeadlineTransport(1.0, verify=False, trust_env=False)
    assert len(made) == 3
    import certifi

    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    deadline.DeadlineTransport(1.0, trust_env=True)  # the environment names a bundle: a context of its own
    deadline.DeadlineTransport(1.0, trust_env=False)  # … that a transport ignoring the environment does not need
    assert len(made) == 4
