"""The sweep loop against real HTTP servers speaking Ollama's API, through the official client."""

from __future__ import annotations

import pytest

from gfxgate.errors import InputError, UsageError
from gfxgate.sweep.runner import parse_endpoint, parse_num_gpu, read_prompt
from tests.sweep.ollama_server import BLOCKS, DIGEST, MODEL_SIZE
from tests.sweep.sweephelp import run_inprocess


def generates(server) -> list[dict]:
    """The generate requests the server saw (without the unload requests)."""
    return [r for r in server.state.requests if r.get("prompt")]


@pytest.mark.parametrize("stream", [False, True])
def test_healthy_backend_records_timings_ps_and_options(tmp_path, ollama_server, stream):
    server = ollama_server()
    summary, log = run_inprocess(
        tmp_path / "w.jsonl", {"rocm": server.url}, num_gpus=(0, 1, -1), stream=stream, gpu_target="gfx900", seed=7
    )
    assert summary.recorded == 3 and summary.outcomes == {"ok": 3}
    sent = generates(server)
    assert [r["options"] for r in sent] == [
        {"num_gpu": n, "num_predict": 4, "seed": 7, "temperature": 0} for n in (0, 1, -1)
    ]
    assert all(r["stream"] is stream for r in sent)
    # every run is followed by an unload request, so the next cell loads with its own num_gpu
    assert sum(1 for r in server.state.requests if r.get("keep_alive") == 0) == 3
    for run, num_gpu in zip(log.runs, (0, 1, -1)):
        rec = run.record
        assert rec["outcome"] == "ok" and rec["http_status"] == 200 and rec["error"] is None
        assert rec["gpu_target"] == "gfx900"
        assert rec["server_version"] == server.state.behaviour.version
        assert rec["model_digest"] == DIGEST
        assert rec["eval_count"] == 4 and rec["done_reason"] == "length"
        durations = rec["durations_ns"]
        assert durations["total"] > durations["eval"] > 0 and durations["load"] > 0
        assert rec["tokens_per_s"] == round(4 / (durations["eval"] / 1e9), 2)
        assert rec["response_preview"].startswith("The sky")
        layers = BLOCKS + 1 if num_gpu < 0 else num_gpu
        (ps,) = rec["ps_after"]["models"]
        assert ps["size"] == MODEL_SIZE and ps["size_vram"] == MODEL_SIZE * layers // (BLOCKS + 1)
        assert (rec["first_token_s"] is not None) is stream
        assert rec["phase"] == {"phase": "none", "reason": "the run succeeded"}


def test_crashing_backend_records_crash_with_log_evidence(tmp_path, ollama_server):
    log_file = tmp_path / "vulkan.log"
    log_file.write_text('time=2026-12-02T12:00:00.000Z level=INFO source=routes.go:1 msg="Listening on 127.0.0.1"\n')
    server = ollama_server(mode="crash-gpu", log_path=log_file)
    _, log = run_inprocess(
        tmp_path / "w.jsonl", {"vulkan": server.url}, num_gpus=(0, 1), server_logs={"vulkan": log_file}
    )
    cpu, gpu = log.runs
    assert cpu.outcome == "ok"
    rec = gpu.record
    assert rec["outcome"] == "crash" and rec["http_status"] == 500
    assert rec["error"] == "llama runner process has terminated: exit status 2"
    assert rec["crash"]["signals"] == ["SIGSEGV"] and "computeBatch" in rec["crash"]["key_frames"]
    assert rec["phase"]["phase"] == "compute"
    (evidence,) = rec["evidence"]
    assert evidence["source"] == "server-log" and evidence["where"] == str(log_file)
    # the run's log lines start right after what the server wrote before (pre-existing line + CPU run)
    file_lines = log_file.read_text().splitlines()
    assert "enabling flash attention" in file_lines[evidence["first_line_no"] - 1]
    assert evidence["line_count"] == len(file_lines) - evidence["first_line_no"] + 1
    started_no = next(
        i for i, line in enumerate(file_lines, 1) if "runner started" in line and i >= evidence["first_line_no"]
    )
    assert f"log line {started_no}" in rec["phase"]["reason"]
    assert rec["ps_after"]["models"] == []  # the runner died, nothing is loaded


def test_hanging_backend_times_out_within_bounds(tmp_path, ollama_server):
    """The sweep's own timeout ends the request: the server would answer only after 60 s (a hang guard: the
    answer would be an "ok"), the run is a recorded timeout that waited the 0.5 s (no wall-clock upper bound:
    a busy machine stretches it)."""
    server = ollama_server(mode="hang", hang_s=60.0)
    _, log = run_inprocess(tmp_path / "w.jsonl", {"slow": server.url}, num_gpus=(1,), timeout=0.5)
    (run,) = log.runs
    assert run.outcome == "timeout" and run.record["phase"]["phase"] == "timeout"
    assert "0.5 s" in run.record["error"]
    assert 0.5 <= run.record["wall_s"] < 60, run.record["wall_s"]


def test_slow_streaming_drip_is_cut_at_the_timeout(tmp_path, ollama_server):
    """Each token comes 0.1 s after the last (no read waits long), the whole answer takes 5 s: the 0.5 s timeout
    bounds the request, not each read. A timeout that did not fire would have let the answer finish: an "ok"."""
    server = ollama_server(drip_s=0.1)
    _, log = run_inprocess(
        tmp_path / "w.jsonl", {"drip": server.url}, num_gpus=(1,), num_predict=50, stream=True, timeout=0.5
    )
    (run,) = log.runs
    assert run.outcome == "timeout" and run.record["first_token_s"] is not None
    assert "0.5 s" in run.record["error"] and run.record["wall_s"] >= 0.5, run.record


def test_dropped_connection_is_a_transport_failure(tmp_path, ollama_server):
    server = ollama_server(mode="drop")
    _, log = run_inprocess(tmp_path / "w.jsonl", {"flaky": server.url}, num_gpus=(0,))
    (run,) = log.runs
    assert run.outcome == "connection-error" and run.record["http_status"] is None
    assert run.record["phase"]["phase"] == "transport"
    assert "closed the connection" in run.record["error"]


def test_loopback_servers_are_reached_even_with_a_proxy_in_the_environment(tmp_path, ollama_server, monkeypatch):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # nothing listens on the discard port
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server = ollama_server()
    _, log = run_inprocess(tmp_path / "w.jsonl", {"rocm": server.url}, num_gpus=(1,))
    assert [r.outcome for r in log.runs] == ["ok"]


@pytest.mark.parametrize("stream", [False, True])
def test_malformed_answer_is_a_recorded_failure_not_a_traceback(tmp_path, ollama_server, stream):
    server = ollama_server(mode="garbage")
    summary, log = run_inprocess(tmp_path / "w.jsonl", {"odd": server.url}, num_gpus=(0, 1), stream=stream)
    assert summary.recorded == 2
    assert {r.outcome for r in log.runs} == {"http-error"}
    assert all("malformed response" in r.record["error"] for r in log.runs)


def test_server_dying_mid_sweep_turns_remaining_cells_into_failures_and_goes_on(tmp_path, ollama_server):
    dying = ollama_server(die_after=2)
    healthy = ollama_server()
    summary, log = run_inprocess(tmp_path / "w.jsonl", {"dying": dying.url, "rocm": healthy.url})
    outcomes = [(r.endpoint, r.num_gpu, r.outcome) for r in log.runs]
    assert outcomes == [
        ("dying", 0, "ok"),
        ("dying", 1, "ok"),
        ("dying", 2, "connection-error"),
        ("dying", -1, "connection-error"),
        ("rocm", 0, "ok"),
        ("rocm", 1, "ok"),
        ("rocm", 2, "ok"),
        ("rocm", -1, "ok"),
    ]
    assert summary.recorded == 8
    assert "refused" in log.runs[3].record["error"]


def test_rerun_skips_finished_cells(tmp_path, ollama_server):
    server = ollama_server()
    path = tmp_path / "w.jsonl"
    run_inprocess(path, {"rocm": server.url}, num_gpus=(0, 1))
    first = path.read_bytes()
    summary, log = run_inprocess(path, {"rocm": server.url}, num_gpus=(0, 1, 2), repeats=1)
    assert summary.skipped == 2 and summary.recorded == 1
    assert path.read_bytes().startswith(first)
    assert [r.num_gpu for r in log.runs] == [0, 1, 2]
    assert [r["options"]["num_gpu"] for r in generates(server)] == [0, 1, 2]


def test_option_parsing_errors_are_usage_errors(tmp_path):
    assert parse_endpoint("rocm=127.0.0.1:11435").url == "http://127.0.0.1:11435"
    assert parse_endpoint("v=http://h:1/").url == "http://h:1"
    for bad in ("rocm", "=http://h:1", "rocm=ftp://h", "rocm=http://h:99999", "ro cm=http://h:1"):
        with pytest.raises(UsageError):
            parse_endpoint(bad)
    assert parse_num_gpu(("0,1", "2", "-1", "1")) == (0, 1, 2, -1)
    with pytest.raises(UsageError):
        parse_num_gpu(("x",))
    with pytest.raises(UsageError):
        parse_num_gpu(("-2",))
    prompt = tmp_path / "p.txt"
    prompt.write_text("hello from a file")
    assert read_prompt(f"@{prompt}") == "hello from a file"
    with pytest.raises(InputError, match="missing.txt: No such file"):  # an input file: exit 6 (README), like a worklog
        read_prompt(f"@{tmp_path / 'missing.txt'}")
    with pytest.raises(InputError, match="is a folder, not a regular file"):
        read_prompt(f"@{tmp_path}")


def test_retry_reruns_failed_cells_and_the_new_runs_supersede_the_old(tmp_path, ollama_server):
    from gfxgate.sweep.model import build_report

    path = tmp_path / "w.jsonl"
    dying = ollama_server(die_after=1)
    run_inprocess(path, {"rocm": dying.url}, num_gpus=(0, 1, 2))
    summary, log = run_inprocess(path, {"rocm": ollama_server().url}, num_gpus=(0, 1, 2))
    assert summary.recorded == 0  # plain resume keeps the recorded failures
    restarted = ollama_server()
    summary, log = run_inprocess(path, {"rocm": restarted.url}, retry=("connection-error",), num_gpus=(0, 1, 2))
    assert summary.skipped == 1 and summary.recorded == 2
    assert [r["options"]["num_gpu"] for r in generates(restarted)] == [1, 2]
    assert [r.outcome for r in log.runs] == ["ok", "connection-error", "connection-error", "ok", "ok"]
    assert [r.outcome for r in log.effective_runs()] == ["ok", "ok", "ok"]
    report = build_report(log)
    assert [c.text.startswith("OK (") for c in report.cells] == [True, True, True]
    assert [r.superseded for r in report.runs] == [False, True, True, False, False]


def test_unavailable_collectors_become_notes_in_the_record(tmp_path, ollama_server, monkeypatch):
    server = ollama_server()
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    _, log = run_inprocess(
        tmp_path / "w.jsonl",
        {"rocm": server.url},
        num_gpus=(1,),
        journal_units={"rocm": "ollama-rocm.service"},
        server_logs={"rocm": tmp_path / "never-written.log"},
        probe_gpu=True,
    )
    (run,) = log.runs
    assert run.outcome == "ok"  # missing evidence never fails a run
    evidence = {e["source"]: e for e in run.record["evidence"]}
    assert not evidence["journal"]["ok"] and "journalctl is not installed" in evidence["journal"]["note"]
    assert not evidence["server-log"]["ok"] and "cannot read server log" in evidence["server-log"]["note"]
    env = {e["source"]: e for e in run.record["environment"]}
    assert set(env) == {"rocm-smi", "amd-smi", "nvidia-smi", "vulkaninfo"} and not any(e["ok"] for e in env.values())


def test_a_ctrl_c_that_something_swallows_still_stops_the_sweep_before_its_next_run(tmp_path, ollama_server):
    """Python raises KeyboardInterrupt wherever the main thread is; a finalizer or a library's
    ``except BaseException`` can swallow it (a full-suite run once saw a SIGINT'd sweep finish all 8 runs and
    exit 0). The runner remembers the signal and stops before the next run anyway."""
    import signal

    from gfxgate.sweep.runner import NoProgress

    class SwallowingProgress(NoProgress):
        def run_finished(self, cell, record):
            try:
                signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, caught by someone else's code
            except BaseException:  # noqa: BLE001 - what the swallowing code does
                pass

    # Python's own SIGINT handler for the duration, whatever an earlier test or library left in this process
    # (full-suite runs have seen SIGINT ignored here)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _swallowed_ctrl_c_run(tmp_path, ollama_server, SwallowingProgress)
    finally:
        signal.signal(signal.SIGINT, previous)


def _swallowed_ctrl_c_run(tmp_path, ollama_server, progress) -> None:
    import signal

    from gfxgate.sweep.runner import Endpoint, SweepPlan, SweepRunner
    from gfxgate.sweep.worklog import WorklogWriter, read_worklog
    from tests.sweep.ollama_server import MODEL

    server = ollama_server()
    plan = SweepPlan(
        endpoints=(Endpoint("rocm", server.url),),
        models=(MODEL,),
        num_gpus=(0, 1, 2),
        num_predict=4,
        timeout=3.0,
        probe_gpu=False,
    )
    worklog = tmp_path / "w.jsonl"
    with WorklogWriter(worklog) as writer, pytest.raises(KeyboardInterrupt):
        SweepRunner(plan, writer, progress()).run()
    assert len(read_worklog(worklog).runs) == 1
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # Python's own handler is back
