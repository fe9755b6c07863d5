"""Sweep faults from issue 13, against real HTTP servers on 127.0.0.1; `gfxgate sweep` runs in process
(tests/inprocess.py) except where the claim needs a process of its own (a lock held by another process, a FIFO that
would block the caller).

The server here is deliberately hostile (a drip, a 200 carrying an error, JSON lists and strings where the
API has objects); the friendly one is tests/sweep/ollama_server.py.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FINAL = {
    "model": "m",
    "response": "hi",
    "done": True,
    "done_reason": "stop",
    "eval_count": 1,
    "eval_duration": 1000,
    "prompt_eval_count": 1,
    "total_duration": 2000,
}


class Hostile(BaseHTTPRequestHandler):
    mode = "healthy"
    version_delay = 0.0
    version_gate: threading.Event | None = None  # /api/version waits for it (60 s at most) when set
    version_asked: threading.Event | None = None  # set when /api/version is asked
    drip_s = 0.1  # well under any --timeout the tests use: a per-read timeout never fires, only the deadline

    def log_message(self, *args):  # quiet
        pass

    def _json(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/api/version":
            if self.version_asked is not None:
                self.version_asked.set()
            if self.version_gate is not None:
                self.version_gate.wait(60)
            time.sleep(self.version_delay)
            return self._json(["0.1"] if self.mode == "version-list" else {"version": "0.12.3"})
        if self.path == "/api/tags":
            return self._json({"models": []})
        if self.path == "/api/ps":
            return self._json({"models": []})
        self._json({"error": "not found"}, 404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path != "/api/generate":
            return self._json({"error": "not found"}, 404)
        if body.get("keep_alive") == 0 and not body.get("prompt"):
            return self._json({**FINAL, "response": ""})
        if self.mode == "drip":  # headers at once, then one byte every drip_s (60 s in all): never a read timeout
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(round(60 / self.drip_s)):
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(self.drip_s)
            return
        if self.mode == "drip-status":  # the status line and headers one byte every drip_s: no read ever times out
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + b"X-Pad: " + b"x" * 600:
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(self.drip_s)
            return
        answers = {
            "error-200": {"error": "llama runner process has terminated: exit status 2"},
            "list": [1, 2, 3],
            "string": "hello",
            "healthy": FINAL,
        }
        self._json(answers[self.mode])


@pytest.fixture()
def hostile():
    servers = []

    def start(mode: str, version_delay: float = 0.0, **attrs) -> str:
        handler = type("H", (Hostile,), {"mode": mode, "version_delay": version_delay, **attrs})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        # polled every 50 ms (the default 0.5 s is how long shutdown() below waits: half a second of each test)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def sweep(exe: str | None, url: str, worklog: Path, *extra: str, timeout: float = 2.0, wait: float = 120):
    """The sweep of one cell: in process (``exe`` None), else the installed script ``exe`` (``wait``: its hang guard)."""
    args = [
        "sweep",
        "--endpoint",
        f"x={url}",
        "--model",
        "m",
        "--num-gpu",
        "0",
        "--timeout",
        str(timeout),
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        str(worklog),
        *extra,
    ]
    start = time.monotonic()
    if exe is None:
        from tests.inprocess import gfxgate

        proc = gfxgate(*args)
    else:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, timeout=wait)
    return proc, time.monotonic() - start


def records(worklog: Path) -> list[dict]:
    return [json.loads(line) for line in worklog.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    "mode,stream", [("drip", "--no-stream"), ("drip-status", "--no-stream"), ("drip-status", "--stream")]
)
def test_a_dripping_answer_times_out(hostile, tmp_path, mode, stream):
    proc, elapsed = sweep(None, hostile(mode), tmp_path / "w.jsonl", stream, timeout=1)
    assert proc.returncode == 0, proc.stderr
    [run] = records(tmp_path / "w.jsonl")
    assert run["outcome"] == "timeout" and "within 1 s" in run["error"], run  # the sweep's own timeout fired
    assert elapsed < 30, elapsed  # hang guard; was: the whole 60 s drip of the body, 2 min of headers


@pytest.mark.parametrize(
    "mode,needle",
    [
        ("error-200", "200 answer with an error: llama runner process"),
        ("list", "malformed response"),
        ("string", "malformed response"),
    ],
)
def test_answers_that_are_not_a_finished_generation_are_failures(hostile, tmp_path, mode, needle):
    proc, _ = sweep(None, hostile(mode), tmp_path / "w.jsonl")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    [run] = records(tmp_path / "w.jsonl")
    assert run["outcome"] != "ok" and needle in run["error"], run  # (a runner-terminated text reads as a crash)


def test_version_answering_a_list_is_one_line_not_a_traceback(hostile, tmp_path):
    proc, _ = sweep(None, hostile("version-list"), tmp_path / "w.jsonl")
    assert proc.returncode == 5, proc.stderr
    assert "Traceback" not in proc.stderr and "JSON list, not an object" in proc.stderr


def test_complete_last_line_without_newline_is_a_record_and_kept(hostile, tmp_path):
    url = hostile("healthy")
    worklog = tmp_path / "w.jsonl"
    assert sweep(None, url, worklog)[0].returncode == 0
    whole = worklog.read_bytes()
    worklog.write_bytes(whole.rstrip(b"\n"))  # a complete line, its newline lost
    proc, _ = sweep(None, url, worklog, "--num-gpu", "1")  # cells 0 (done) and 1 (new)
    assert proc.returncode == 0, proc.stderr
    runs = records(worklog)
    assert [r["options"]["num_gpu"] for r in runs] == [0, 1]  # the old run kept, only the new cell ran
    assert worklog.read_bytes().startswith(whole) and not (tmp_path / "w.jsonl.torn").exists()


def test_the_worklog_lock_is_taken_before_the_worklog_is_read(gfxgate_exe, hostile, tmp_path):
    """While a sweep is still in its preflight (its /api/version held unanswered until the lock is tried), it already
    holds the worklog lock, so another sweep cannot plan from the same stale worklog and run the same cells again."""
    worklog = tmp_path / "w.jsonl"
    asked, gate = threading.Event(), threading.Event()
    url = hostile("healthy", version_asked=asked, version_gate=gate)
    args = [
        gfxgate_exe,
        "sweep",
        "--endpoint",
        f"x={url}",
        "--model",
        "m",
        "--num-gpu",
        "0",
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        str(worklog),
    ]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert asked.wait(60), "the sweep never asked /api/version"  # it is in its preflight now, and stays there
        with open(worklog, "a") as handle:  # the file exists: the sweep created it with its lock
            with pytest.raises(BlockingIOError):
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        gate.set()
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    second, _ = sweep(None, url, worklog)
    assert "nothing to do" in second.stderr and len(records(worklog)) == 1


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_server_log_must_be_a_regular_file(gfxgate_exe, hostile, tmp_path, kind):
    log = tmp_path / "log"
    if kind == "folder":
        log.mkdir()
    else:
        os.mkfifo(log)
    proc, elapsed = sweep(gfxgate_exe, hostile("healthy"), tmp_path / "w.jsonl", "--server-log", f"x={log}", wait=30)
    assert proc.returncode == 6, proc.stderr
    assert f"is a {'folder' if kind == 'folder' else 'FIFO'}" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "w.jsonl").exists() and elapsed < 10


def test_prompt_file_not_utf8_is_an_input_error(hostile, tmp_path):
    prompt = tmp_path / "p.txt"
    prompt.write_bytes("caf\xe9".encode("latin-1"))
    proc, _ = sweep(None, hostile("healthy"), tmp_path / "w.jsonl", "--prompt", f"@{prompt}")
    assert proc.returncode == 6 and "is not UTF-8 (byte 0xe9" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    "field,value",
    [("options", {"num_gpu": "x"}), ("outcome", 3), ("endpoint", {"name": 1}), ("started_at", 5), ("evidence", "no")],
)
def test_worklog_fields_of_the_wrong_type_are_one_line_exit_6(gfxgate_cli, hostile, tmp_path, field, value):
    worklog = tmp_path / "w.jsonl"
    assert sweep(None, hostile("healthy"), worklog)[0].returncode == 0
    [run] = records(worklog)
    worklog.write_text(json.dumps({**run, field: value}) + "\n")
    for args in (["sweep", "report", str(worklog)], ["scan", "--target", "gfx900", "--runtime", str(worklog)]):
        proc = gfxgate_cli(*args, timeout=60)
        assert proc.returncode == 6, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
