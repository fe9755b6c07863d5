"""`gfxgate sweep --llama-server` on real software: Debian sid's llama-server, real ggml backends (CPU, Vulkan on
lavapipe), a real GGUF model, and faults injected into the real server process (signals from this test, a
truncated model file). Nothing here imitates llama.cpp; the fixture is tests/reallama.py.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest

from gfxgate.sweep.llamaserver import ngl_args, parse_llama_server, parse_log
from gfxgate.sweep.model import build_report
from gfxgate.sweep.render import render
from gfxgate.sweep.worklog import read_worklog
from tests.reallama import reallama, reallama_vulkan  # noqa: F401 - session fixtures
from tests.sweep.sweephelp import gfxgate

NUM_GPU = (0, 1, 2, -1)
DEVICE_NUM_GPU = (1, -1)  # the endpoints that name a device (or none): one layer and all of them show their claims
# A 3-token prompt: a prompt of a batch's size makes lavapipe compile the matrix-multiply pipelines too, 2 s of CPU
# per Vulkan run instead of 0.7-1 s; nothing in the real sweep's claims reads the prompt's length
SHORT_PROMPT = ("--prompt", "hi")
# Tokens to generate: on lavapipe a token of the tiny model costs 70-120 ms of CPU once 2 or more layers are there;
# the claims read that the server counted what it generated (eval_count), not how much
NUM_PREDICT = 3


@pytest.fixture(scope="module")
def long_model(tmp_path_factory) -> Path:
    """The tiny model with a 1,024-token context (the shared one has 256, and llama-server ends a generation there:
    215 tokens, 0.1 s on one thread): 700 tokens take 0.7-1 s (0.3-0.5 s of CPU) at load 11 on the 2 shared cores,
    long enough for a signal to land while it generates. (A 4,096-token context makes every token 5x dearer.)"""
    from tests.reallama import tiny_llama

    return tiny_llama(tmp_path_factory.mktemp("long") / "tiny-1k.gguf", context_length=1024)


def server(real, backends: str = "cpu", *extra: str) -> list[str]:
    """An endpoint command: the real llama-server with one compute thread. ggml's default, a thread per core, spins
    them at every barrier: on the 2 shared cores 400 tokens of the tiny model took 1-8 s (0.5-2.8 s of CPU) where
    one thread takes 0.15 s (0.08 s of CPU). Nothing here depends on the thread count."""
    return [*real.command(backends), "-t", "1", *extra]


def sweep(worklog: Path, servers: dict[str, list[str]], model: Path, *extra: str, num_gpu=NUM_GPU, timeout=900):
    args = [
        "sweep",
        "--model-file",
        str(model),
        "--num-gpu",
        ",".join(map(str, num_gpu)),
        "--num-predict",
        str(NUM_PREDICT),
    ]
    args += ["--worklog", str(worklog), "--no-probe-gpu", "--gpu-target", "gfx900", "--timeout", "300"]
    for name, argv in servers.items():
        args += ["--llama-server", f"{name}={shlex.join(argv)}"]
    done = gfxgate(*args, *extra, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


# -- the offload flag, as Ollama maps num_gpu -----------------------------------------------------------------
def test_num_gpu_maps_to_ngl_as_ollama_does():
    # ollama v0.32.15 llm/llama_server.go:404-410 (checked by test_upstream when GFXGATE_TEST_UPSTREAM is set)
    assert ngl_args(3) == ["-ngl", "3"]
    assert ngl_args(0) == ["-ngl", "0"]
    assert ngl_args(-1) == []


@pytest.mark.upstream
@pytest.mark.skipif(not os.environ.get("GFXGATE_TEST_UPSTREAM"), reason="set GFXGATE_TEST_UPSTREAM to run")
def test_ngl_mapping_is_ollamas_own_at_the_cited_lines():
    """The docstring cites ollama v0.32.15 llm/llama_server.go:404-410; the real file says so there."""
    import subprocess

    repo = Path(os.environ["GFXGATE_TEST_UPSTREAM"]) / "ollama"
    text = subprocess.run(
        ["git", "-C", str(repo), "show", "v0.32.15:llm/llama_server.go"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    block = "\n".join(text[403:410])
    assert re.search(
        r"if launch\.opts\.NumGPU > 0 \{\s*params = append\(params, \"-ngl\", strconv\.Itoa\(launch\.opts\.NumGPU\)\)",
        block,
    )
    assert re.search(r"else if launch\.opts\.NumGPU == 0 \{.*?\"-ngl\", \"0\"", block, re.S)
    assert "NumGPU == -1 (default): don't pass -ngl" in block


@pytest.mark.parametrize(
    "text, message",
    [
        ("cpu=", "expected NAME=COMMAND"),
        ("cpu='unterminated", "cannot split"),
        ("cpu=/nonexistent/llama-server", "not an executable"),
        ("cpu=env -m x", "leave -m out"),
        ("cpu=env --port 1", "leave --port out"),
    ],
)
def test_bad_llama_server_option_is_a_usage_error(text, message):
    from gfxgate.errors import UsageError

    with pytest.raises(UsageError, match=message):
        parse_llama_server(text)


def test_cli_needs_a_model_file_for_a_llama_server(tmp_path):
    done = gfxgate("sweep", "--llama-server", "cpu=env", "--worklog", str(tmp_path / "w.jsonl"))
    assert done.returncode == 2 and "--model-file" in done.stderr
    done = gfxgate("sweep", "--llama-server", "cpu=env", "--model-file", str(tmp_path / "missing.gguf"))
    assert done.returncode == 2 and "not a file" in done.stderr
    assert not (tmp_path / "w.jsonl").exists()


# -- the real sweep: CPU-only set and Vulkan (lavapipe), num_gpu 0,1,2,-1 --------------------------------------
@pytest.fixture(scope="module")
def real_sweep(reallama_vulkan, tmp_path_factory):
    folder = tmp_path_factory.mktemp("real-sweep")
    worklog = folder / "w.jsonl"
    # a private copy (its name kept): the study-shaped test resumes this sweep and finds its servers by this path
    model = Path(shutil.copy(reallama_vulkan.model, folder / reallama_vulkan.model.name))
    servers = {"cpu": server(reallama_vulkan, "cpu"), "vulkan": server(reallama_vulkan, "vulkan")}
    devices = {
        # the Vulkan set with no device selected: llama.cpp still logs "offloaded 5/5 layers" for -1
        "nodevice": server(reallama_vulkan, "vulkan", "--device", "none"),
        # --device Vulkan0 loads the backends while llama.cpp parses it: gfxgate's verbosity must come before it
        "vulkan0": server(reallama_vulkan, "vulkan", "--device", "Vulkan0"),
    }
    done = sweep(worklog, servers, model, *SHORT_PROMPT)
    # the same worklog: one sweep, resumed
    sweep(worklog, devices, model, *SHORT_PROMPT, num_gpu=DEVICE_NUM_GPU)
    return worklog, (servers, devices), model, done


@pytest.mark.slow
def test_real_sweep_records_real_offload_counts(real_sweep):
    worklog, _, _, done = real_sweep
    log = read_worklog(worklog)
    assert not log.warnings
    runs = {(r.endpoint, r.num_gpu): r for r in log.runs}
    assert sorted(runs) == sorted(
        [(e, n) for e in ("cpu", "vulkan") for n in NUM_GPU]
        + [(e, n) for e in ("nodevice", "vulkan0") for n in DEVICE_NUM_GPU]
    )
    for run in log.runs:
        assert run.ok, (run.run_id, run.get("error"), run.get("phase"))
        assert run.endpoint_kind == "llama-server"
        assert run.get("eval_count") == NUM_PREDICT and run.get("prompt_eval_count", 0) > 0
        assert run.get("model_digest", "").startswith("sha256:")
        assert Path(run.get("server_log")).is_file()
        assert (run.get("server_version") or "").startswith("llama.cpp ")
    # Vulkan: llama.cpp's own "offloaded N/M layers to GPU" (4 blocks + the output layer), on lavapipe
    for num_gpu, layers in ((0, 0), (1, 1), (2, 2), (-1, 5)):
        offload = runs[("vulkan", num_gpu)].get("offload")
        assert (offload["layers"], offload["of"]) == (layers, 5), offload
        assert offload["backends"][0] == "Vulkan" and "CPU" in offload["backends"]
        assert offload["devices"] and offload["devices"][0].startswith("Vulkan0 (llvmpipe")
    # The CPU-only backend set: no GPU device at all, so nothing offloaded whatever num_gpu asks for
    for num_gpu in NUM_GPU:
        offload = runs[("cpu", num_gpu)].get("offload")
        assert offload["backends"] == ["CPU"] and offload["devices"] == [] and offload["layers"] is None
        assert offload["no_usable_gpu"] is (num_gpu != -1)  # llama.cpp warns only when -ngl was given
    # --device none: llama.cpp still prints "offloaded 5/5 layers" while every model buffer is CPU_Mapped; the
    # worklog keeps that as log_layers and stores 0 layers on a GPU, with the reason (issue 27 defect 3)
    nodevice = runs[("nodevice", -1)].get("offload")
    assert nodevice["devices"] == [] and (nodevice["layers"], nodevice["log_layers"], nodevice["of"]) == (0, 5, 5)
    assert nodevice["on_gpu"] == [] and "CPU_Mapped" in nodevice["no_gpu_reason"] and nodevice["vram_mib"] == 0
    assert all(row["host"] for row in nodevice["placement"])
    assert "Vulkan" in nodevice["backends"]
    # --device Vulkan0 in the endpoint command: the load_backend lines are there (issue 27 defect 1) …
    for num_gpu, layers in ((1, 1), (-1, 5)):
        run = runs[("vulkan0", num_gpu)]
        offload = run.get("offload")
        assert offload["backends"][0] == "Vulkan" and "CPU" in offload["backends"], offload
        argv = run.get("notes")[0]
        assert argv.index("--log-verbosity 4") < argv.index("--device Vulkan0"), argv
        # … and the device it used is named, with its share of the weights (defect 5, issue 30 one-device part)
        assert offload["on_gpu"] == ["Vulkan0"] and offload["devices"][0].startswith("Vulkan0 (llvmpipe")
        rows = {row["buffer"]: row for row in offload["placement"]}
        assert rows["Vulkan0"]["layers"] == layers and rows["Vulkan0"]["model_mib"] > 0
        assert run.get("devices_listed")["devices"][0]["device"] == "Vulkan0"
    assert runs[("vulkan", 2)].get("server_args")[-2:] == ["-ngl", "2"]
    assert "-ngl" not in runs[("vulkan", -1)].get("server_args")
    overhead = runs[("cpu", 0)].get("overhead")
    assert overhead["health_wait_s"] > 0 and overhead["stop_s"] >= 0 and overhead["server_exit"]["after_stop"] == 0


@pytest.mark.slow
def test_real_sweep_lines_match_the_worklog_schema(real_sweep):
    import jsonschema

    from gfxgate.datafiles import load_schema

    WORKLOG_LINE_SCHEMA = load_schema("sweep-worklog")

    # jsonschema.validate() checks the schema against its meta-schema on every call: once is enough (0.1 s a line)
    validator_class = jsonschema.validators.validator_for(WORKLOG_LINE_SCHEMA)
    validator_class.check_schema(WORKLOG_LINE_SCHEMA)
    validator = validator_class(WORKLOG_LINE_SCHEMA)
    for line in real_sweep[0].read_text().splitlines():
        validator.validate(json.loads(line))


@pytest.mark.slow
def test_real_sweep_report_and_hypotheses(real_sweep):
    report = build_report(read_worklog(real_sweep[0]))
    assert report.cell("tiny-llama-4l.gguf", 2, "vulkan").text.endswith("2/5 layers on GPU)")
    assert report.hypothesis("gpu-unusable").verdict == "rejected"
    counted = report.hypothesis("num-gpu-is-gpu-count")
    assert counted.verdict == "rejected" and "1 of 5 layers" in counted.reason and "2 of 5 layers" in counted.reason
    assert report.hypothesis("backend-compute-failure").verdict == "rejected"  # nothing failed
    assert "layers" not in report.cell("tiny-llama-4l.gguf", -1, "nodevice").text  # … is not an offload
    md = render(report, "md")
    assert "| 5/5 layers |" in md and "| no GPU device |" in md
    assert "(llama.cpp " in md
    devices = dict(report.devices)  # the device each endpoint used, named per endpoint (issue 27 defect 5)
    assert devices["vulkan0"].startswith("Vulkan0 (llvmpipe") and devices["cpu"].startswith("no GPU device")
    assert devices["nodevice"].startswith("no GPU device")
    assert "- Device each endpoint used: " in md and "vulkan0 = Vulkan0 (llvmpipe" in md


@pytest.mark.slow
def test_real_sweep_resumes_and_feeds_the_runtime_row(real_sweep, capsys):
    worklog, (servers, devices), model, _ = real_sweep
    again = sweep(worklog, servers, model, *SHORT_PROMPT)
    assert "nothing to do" in again.stderr
    again = sweep(worklog, devices, model, *SHORT_PROMPT, num_gpu=DEVICE_NUM_GPU)
    assert "nothing to do" in again.stderr
    from gfxgate.cli import main

    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "--runtime", str(worklog), "--format", "json"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    cell = next(layer for layer in json.loads(out)["layers"] if layer["id"] == "runtime")["cells"][0]
    # vulkan offloads layers; the CPU-only set and `--device none` ask no GPU for anything, so they are no failing GPU
    # backend (issue 24, reproduction 4: this was "partial", "cpu, nodevice fail with num_gpu ≠ 0")
    assert cell["status"] == "allowed", cell
    assert "vulkan" in cell["summary"] and "cpu" not in cell["summary"] and "nodevice" not in cell["summary"], cell
    assert any("layers offloaded per the server log" in e["note"] for e in cell["evidence"])


# -- faults injected into the real server process ------------------------------------------------------------
class Injector(threading.Thread):
    """Watches a sweep's server logs; when ``pattern`` shows in one, sends ``sig`` to that llama-server.

    By default only the first server is hit; ``every`` names the logs (a glob) whose servers are all hit.
    """

    def __init__(self, logs: Path, model: Path, pattern: str, sig: signal.Signals, every: str | None = None):
        super().__init__(daemon=True)
        self.logs, self.model, self.pattern, self.sig = logs, str(model), re.compile(pattern), sig
        self.every = every
        self.sent_to: int | None = None
        self.hit: list[str] = []
        self.log: Path | None = None
        self.stop = threading.Event()

    def _pid(self) -> int | None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            # the server gets "-m MODEL ... --port N"; the gfxgate process itself has "--model-file MODEL"
            if b"--port" in argv and any(a == b"-m" and b == self.model.encode() for a, b in zip(argv, argv[1:])):
                return int(entry.name)
        return None

    def run(self) -> None:
        if self.every:
            return self._every()
        pid = None
        while not self.stop.is_set():
            logs = sorted(self.logs.glob("*.log"), key=lambda p: p.stat().st_mtime) if self.logs.is_dir() else []
            if logs:
                self.log = logs[0]
                # the first log's server, found while it loads (one server runs at a time, the log is opened first):
                # the signal follows the pattern's line within a poll, not a scan of /proc later
                pid = pid or self._pid()
                if pid is not None and self.pattern.search(logs[0].read_text(errors="replace")):
                    try:
                        os.kill(pid, self.sig)
                    except ProcessLookupError:  # it ended before the line showed: sent_to stays None, and says so
                        return
                    self.sent_to = pid
                    return
            time.sleep(0.002)

    def _every(self) -> None:
        pids: dict[str, int] = {}  # each log's server, found while it loads (the log is opened before it starts)
        while not self.stop.is_set():
            for log in sorted(self.logs.glob(self.every)) if self.logs.is_dir() else []:
                if log.name in self.hit:
                    continue
                if log.name not in pids:
                    pid = self._pid()  # the sweep runs one server at a time: the live one writes the newest log
                    if pid is None:
                        continue
                    pids[log.name] = pid
                if self.pattern.search(log.read_text(errors="replace")):
                    try:
                        os.kill(pids[log.name], self.sig)
                    except ProcessLookupError:  # it ended first: not counted as hit
                        pass
                    self.hit.append(log.name)
            time.sleep(0.002)


def inject(tmp_path, reallama, backends, pattern, sig, *extra, num_gpu=(1, 0), model=None):
    """Sweep two cells with a private model copy; the first cell's server gets the fault."""
    model = model or Path(shutil.copy(reallama.model, tmp_path / "tiny.gguf"))
    worklog = tmp_path / "w.jsonl"
    injector = Injector(Path(str(worklog) + ".logs"), model, pattern, sig) if pattern else None
    if injector:
        injector.start()
    try:
        done = sweep(worklog, {backends: server(reallama, backends)}, model, *extra, num_gpu=num_gpu)
    finally:
        if injector:
            injector.stop.set()
            injector.join(5)
    log = read_worklog(worklog)
    assert not log.warnings and len(log.runs) == len(num_gpu), done.stderr  # every cell is in the worklog
    if injector:
        assert injector.sent_to is not None, f"{pattern!r} never showed in {injector.log}"
    return log, done


@pytest.mark.slow
def test_study_shaped_sweep_decides_the_hypotheses_from_real_runs(tmp_path, real_sweep, reallama_vulkan):
    """The study's table on real software: one Vulkan server crashes with SIGSEGV while generating for every
    num_gpu ≠ 0 (the signal injected into the real process), the other Vulkan server answers with layers offloaded.
    The good server's four runs are the real sweep's ``vulkan`` ones (the module's fixture: the same command, model
    and prompt), resumed in a worklog of their own with the bad server, as a study adds an endpoint; every lavapipe
    run costs 0.5-1 s of CPU. A 1-token prompt (``SHORT_PROMPT``: a batch-sized one costs lavapipe's
    matrix-multiply pipelines, seconds of CPU a run); the bad server is asked for 240 tokens, all its 256-token
    context leaves, which keep it generating when the signal lands (it never generates them: the signal ends the run;
    64 took 0.1 s with one layer on lavapipe, and beside two CPU hogs the injector once came too late)."""
    real, _, model, _ = real_sweep  # model: the fixture's private copy, used by no other test's servers
    worklog = tmp_path / "w.jsonl"
    worklog.write_text(
        "".join(line for line in real.read_text().splitlines(True) if json.loads(line)["endpoint"]["name"] == "vulkan")
    )
    every = "vulkanbad-g[12-]*.log"  # vulkanbad-g1-…, -g2-…, -g-1-… but not -g0-
    injector = Injector(Path(str(worklog) + ".logs"), model, r"processing task", signal.SIGSEGV, every=every)
    injector.start()
    command = server(reallama_vulkan, "vulkan")
    try:
        sweep(worklog, {"vulkanbad": command}, model, *SHORT_PROMPT, "--num-predict", "240")
    finally:
        injector.stop.set()
        injector.join(5)
    assert len(injector.hit) == 3, injector.hit
    log = read_worklog(worklog)
    assert len(log.runs) == 8 and not log.warnings
    report = build_report(log)
    for num_gpu in (1, 2, -1):
        assert report.cell(model.name, num_gpu, "vulkanbad").text == "FAIL (SIGSEGV)"
        assert "layers on GPU" in report.cell(model.name, num_gpu, "vulkan").text
    assert report.cell(model.name, 0, "vulkanbad").text.startswith("OK")
    assert {c.phase for c in report.crashes} == {"compute"}
    assert report.hypothesis("gpu-unusable").verdict == "rejected"
    assert report.hypothesis("num-gpu-is-gpu-count").verdict == "rejected"
    compute = report.hypothesis("backend-compute-failure")
    assert compute.verdict == "supported", compute.reason
    assert "vulkanbad fails for every num_gpu ≠ 0 (1, 2, -1)" in compute.reason


@pytest.mark.slow
def test_sigsegv_while_generating_is_a_compute_crash(tmp_path, reallama, long_model):
    model = Path(shutil.copy(long_model, tmp_path / "tiny.gguf"))
    log, _ = inject(tmp_path, reallama, "cpu", r"processing task", signal.SIGSEGV, "--num-predict", "700", model=model)
    crashed, after = log.runs
    assert crashed.outcome == "crash" and after.ok  # the sweep went on with the next cell
    assert crashed.get("crash")["signals"] == ["SIGSEGV"]
    assert crashed.get("overhead")["server_exit"]["signal"] == "SIGSEGV"
    phase = crashed.get("phase")
    assert phase["phase"] == "compute", phase
    assert "model loaded" in phase["reason"] and "/completion in flight" in phase["reason"]
    assert any("processing task" in line for line in crashed.get("crash")["excerpt"])
    report = build_report(log)
    assert [c.phase for c in report.crashes] == ["compute"]
    assert "FAIL (SIGSEGV)" in report.cell("tiny.gguf", 1, "cpu").text


@pytest.mark.slow
def test_sigkill_while_loading_is_a_load_crash(tmp_path, reallama_vulkan):
    # lavapipe's warm-up (pipelines for the first graph) keeps the server in its load phase long enough to hit
    log, _ = inject(tmp_path, reallama_vulkan, "vulkan", r"warming up the model", signal.SIGKILL, *SHORT_PROMPT)
    crashed, after = log.runs
    assert crashed.outcome == "crash" and after.ok
    text = Path(crashed.get("server_log")).read_text(errors="replace")
    assert "model loaded" not in text  # killed before the load finished
    assert crashed.get("crash")["signals"] == ["SIGKILL"]
    phase = crashed.get("phase")
    assert phase["phase"] == "load", phase
    assert "before it served" in phase["reason"]
    assert crashed.get("offload")["layers"] == 1  # the log got as far as the offload decision


@pytest.mark.slow
def test_truncated_gguf_is_a_load_failure_with_the_exit_status(tmp_path, reallama):
    data = reallama.model.read_bytes()
    model = tmp_path / "truncated.gguf"
    model.write_bytes(data[: len(data) // 2])
    log, _ = inject(tmp_path, reallama, "cpu", "", signal.SIGKILL, model=model, num_gpu=(0,))
    (run,) = log.runs
    assert run.outcome == "crash"
    crash = run.get("crash")
    assert crash["signals"] == [] and crash["exit_status"] == 1
    phase = run.get("phase")
    assert phase["phase"] == "load", phase
    assert re.search(r"error loading model|failed to load model", phase["reason"])
    assert any(re.search(r"error loading model|failed to load model", line) for line in crash["excerpt"])
    assert "FAIL (exit status 1)" in build_report(log).cell("truncated.gguf", 0, "cpu").text


@pytest.mark.slow
def test_stopped_server_times_out_and_is_stopped(tmp_path, reallama, long_model):
    model = Path(shutil.copy(long_model, tmp_path / "tiny.gguf"))
    worklog = tmp_path / "w.jsonl"
    injector = Injector(Path(str(worklog) + ".logs"), model, r"processing task", signal.SIGSTOP)
    injector.start()
    args = ["sweep", "--model-file", str(model), "--num-gpu", "1,0", "--num-predict", "700", "--worklog", str(worklog)]
    # --timeout 8 (the load, and each request): the second cell generates 700 tokens on one thread, 0.7-1 s at load
    # 11 on the 2 shared cores (400 tokens on a thread per core, the default, once took past 8 s there)
    args += ["--no-probe-gpu", "--timeout", "8", "--llama-server", f"cpu={shlex.join(server(reallama))}"]
    done = gfxgate(*args, timeout=150)
    injector.stop.set()
    assert done.returncode == 0, done.stderr
    assert injector.sent_to is not None
    stopped, after = read_worklog(worklog).runs
    assert stopped.outcome == "timeout" and after.ok
    assert stopped.get("phase")["phase"] == "timeout"
    assert "after the model loaded" in stopped.get("phase")["reason"]
    assert stopped.get("overhead")["server_exit"]["after_stop"] is not None  # gfxgate stopped it (SIGCONT + SIGTERM)
    with pytest.raises(ProcessLookupError):
        os.kill(injector.sent_to, 0)
    # --retry timeout runs the cell again (now without the fault); the new run supersedes the old
    again = gfxgate(*[("8" if a == "700" else a) for a in args], "--retry", "timeout", timeout=120)
    assert again.returncode == 0, again.stderr
    log = read_worklog(worklog)
    assert len(log.runs) == 3 and all(r.ok for r in log.effective_runs())


@pytest.mark.slow
def test_ggml_assert_while_creating_the_context_is_a_load_crash_with_frames(tmp_path, reallama):
    from tests.reallama import tiny_llama

    model = tiny_llama(
        tmp_path / "gqa-3-of-4.gguf", n_layer=2, n_head_kv=3
    )  # loads; its attention graph cannot be built
    log, _ = inject(tmp_path, reallama, "cpu", "", signal.SIGKILL, model=model, num_gpu=(0,))
    (run,) = log.runs
    crash = run.get("crash")
    assert run.outcome == "crash" and crash["signals"][0] == "SIGABRT"
    assert any("GGML_ASSERT" in line for line in crash["excerpt"])
    # gdb's "#5 0x… in ggml_abort ()" when gdb is installed, glibc's "lib.so(ggml_abort+0x14e)" otherwise
    assert {"ggml_abort", "ggml_flash_attn_ext", "build_attn_mha", "llama_init_from_model"} <= set(crash["frames"])
    assert "llama_init_from_model" in crash["key_frames"]
    assert run.get("phase")["phase"] == "load"


@pytest.mark.slow
def test_http_failure_of_a_running_server_is_recorded_with_its_answer(tmp_path, reallama):
    prompt = tmp_path / "long.txt"
    prompt.write_text("hello world " * 400)  # more tokens than the tiny model's 256-token context
    log, _ = inject(tmp_path, reallama, "cpu", "", signal.SIGKILL, "--prompt", f"@{prompt}", num_gpu=(0,))
    (run,) = log.runs
    assert run.outcome == "http-error" and run.get("http_status") == 400
    assert "exceeds the available context size" in run.get("error")
    phase = run.get("phase")
    assert (
        phase["phase"] == "unknown" and "rejected the request" in phase["reason"] and "kept running" in phase["reason"]
    )
    assert run.get("crash") is None and run.get("overhead")["server_exit"]["after_stop"] == 0


@pytest.mark.slow
def test_a_sweep_killed_hard_leaves_no_server_behind(tmp_path, reallama, long_model):
    import subprocess

    from tests.sweep.sweephelp import REPO, gfxgate_argv, gfxgate_env

    model = Path(shutil.copy(long_model, tmp_path / "tiny.gguf"))
    worklog = tmp_path / "w.jsonl"
    # 900 tokens (~1 s on one thread): the server is still generating when the sweep is killed
    args = ["sweep", "--model-file", str(model), "--num-gpu", "0", "--num-predict", "900", "--worklog", str(worklog)]
    args += ["--no-probe-gpu", "--llama-server", f"cpu={shlex.join(server(reallama))}"]
    sweeper = subprocess.Popen(gfxgate_argv(*args), cwd=REPO, env=gfxgate_env(), stderr=subprocess.DEVNULL)
    finder = Injector(
        Path(str(worklog) + ".logs"), model, r"processing task", signal.SIGCONT
    )  # harmless: finds the pid
    finder.start()
    finder.join(60)
    pid = finder.sent_to
    assert pid is not None
    sweeper.kill()  # SIGKILL: no finally, no cleanup in gfxgate
    sweeper.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _state(pid) not in (None, "Z"):
        time.sleep(0.05)
    state = _state(pid)  # None: reaped; "Z": exited, waiting for init (slow to reap here) to collect it
    if state not in (None, "Z"):  # do not leave it running when the test fails
        os.kill(pid, signal.SIGKILL)
    assert state in (None, "Z"), f"llama-server outlived the sweep that started it (state {state})"
    # killed, not asked to stop: on SIGTERM llama-server logs its clean-up and first waits for the in-flight
    # request, whose client is gone (a CI run once found it still running 10 s later)
    assert "cleaning up before exit" not in finder.log.read_text(errors="replace")


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def test_parse_log_reads_the_last_load():
    lines = [
        "0.00.043.263 I load_backend: loaded Vulkan backend from /x/libggml-vulkan.so",
        "load_backend: loaded CPU backend from /x/libggml-cpu-zen4.so",
        "0.01.220.782 I llama_prepare_model_devices: using device Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits)) (unknown id) - 2048 MiB free",
        "0.01.233.061 I load_tensors: offloaded 2/5 layers to GPU",
        "load_tensors: offloaded 3/5 layers to GPU",
        "0.01.238.124 I srv  llama_server: model loaded",
    ]
    facts = parse_log(lines)
    assert facts.backends == ["Vulkan", "CPU"]
    assert facts.devices == ["Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits))"]
    assert facts.offloaded == (3, 5) and facts.loaded_line == 5


def test_parse_log_reads_a_prefix_split_by_an_interleaved_warning():
    # The head of a real CPU-set log (Debian sid llama-server, build 11669, -ngl 2): the logger thread wrote the
    # timestamp, the main thread's fprintf warning landed after it, and the level letter began the next line.
    lines = [
        "0.00.010.884 warning: no usable GPU found, --gpu-layers option will be ignored",
        "warning: one possible reason is that llama.cpp was compiled without GPU support",
        "warning: consult docs/build.md for compilation instructions",
        "I load_backend: loaded CPU backend from /x/sets/cpu/libggml-cpu-zen4.so",
        "0.00.011.225 I srv  llama_server: initializing ...",
    ]
    facts = parse_log(lines)
    assert facts.backends == ["CPU"] and facts.no_gpu
    assert parse_log(["load_backend: loaded bogus"]).backends == []
