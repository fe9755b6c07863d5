"""Sweep endpoints that are llama.cpp's own ``llama-server``, started by gfxgate once per cell.

``--llama-server NAME=COMMAND`` names the argv prefix that starts a llama-server with one backend set (a
wrapper, an ``env VAR=…`` prefix, ``--device Vulkan0`` …; shell-split, never run through a shell). For every
cell the driver

1. starts ``COMMAND -m MODEL --host 127.0.0.1 --port FREE --log-verbosity 4 -np 1 -c 4096`` plus the offload
   flag mapped as Ollama ≥ v0.30 maps num_gpu when it starts its own llama-server (ollama v0.32.15
   ``llm/llama_server.go:404-410``: N > 0 → ``-ngl N``, 0 → ``-ngl 0``, -1 → no flag, llama-server decides);
   ``--log-verbosity 4`` is what Ollama passes too (``appendLlamaServerLogArgs``), so the load lines are in
   the log; stdout and stderr go to one log file per run, kept next to the worklog;
2. waits for ``GET /health`` to answer 200 (503 while the model loads), watching the process;
3. sends one ``POST /completion`` (n_predict, seed, temperature 0) and records llama.cpp's token counts and
   timings;
4. stops the server (SIGTERM to its process group, SIGKILL after a grace period) and reads the log.

The record has the same schema as an Ollama run (``endpoint.kind`` is ``llama-server``), plus
``offload`` (backends, device, layers offloaded N of M, read from the log) and ``overhead`` (spawn, health
wait, stop: the sweep's own cost beside the inference time). A server that dies (signal or exit status),
an HTTP failure or a timeout is a failed run; its phase is ``load`` when the server died before it served
(no ``/health`` 200 and no ``model loaded`` line) and ``compute`` when it died with ``/completion`` in flight
after the model loaded.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from gfxgate.errors import UsageError
from gfxgate.sweep import crash as crashmod
from gfxgate.sweep.deadline import DEADLINE, DeadlineTransport
from gfxgate.sweep.evidence import Collected, utcnow
from gfxgate.sweep.worklog import record_fields

if TYPE_CHECKING:
    from gfxgate.sweep.runner import Cell, SweepRunner

KIND_NAME = "llama-server"
HOST = "127.0.0.1"
CTX_SIZE = 4096
LOG_VERBOSITY = "4"  # what Ollama passes (llm/llama_server.go appendLlamaServerLogArgs)
HEALTH_POLL_S = 0.02
HEALTH_TIMEOUT_S = 2.0  # one /health poll, wall clock
VERSION_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0
DEATH_GRACE_S = 5.0  # after a dropped connection, how long to wait for the process to be reaped
EXCERPT_LINES = 20
MAX_LOG_LINES = 20000

# What llama.cpp prints (llama-server at --log-verbosity ≥ 3; with or without the "0.00.043.263 I " prefix).
# llama.cpp's logger writes from its own thread while plain fprintf(stderr) warnings come from the main thread, so
# a warning can land between the timestamp and the level letter: "0.00.010.884 warning: no usable GPU found, …"
# then "I load_backend: loaded CPU backend from …" (seen on a real run). Either half of the prefix may be missing.
_PREFIX = r"^(?:\d+\.\d+\.\d+\.\d+ )?(?:[A-Z] )?"
BACKEND_RE = re.compile(_PREFIX + r"load_backend: loaded (?P<name>.+?) backend from (?P<path>\S+)")
DEVICE_RE = re.compile(_PREFIX + r"\S*: using device (?P<dev>\S+) \((?P<desc>.*?)\)(?: \(|\s+-|$)")
OFFLOADED_RE = re.compile(_PREFIX + r"load_tensors: offloaded (?P<n>\d+)/(?P<m>\d+) layers to GPU")
NO_GPU_RE = re.compile(r"no usable GPU found")
LOADING_RE = re.compile(r"load_model: loading model|llama_model_loader: loaded meta data|load_tensors:")
LOADED_RE = re.compile(r"llama_server: model loaded|main: model loaded|server is listening|llama_server: listening on")
TASK_RE = re.compile(r"launch_slot_|processing task|new prompt, n_ctx_slot")
ERROR_LINE_RE = re.compile(r"^\d+\.\d+\.\d+\.\d+ E |\berror\b", re.IGNORECASE)
LOAD_ERROR_RE = re.compile(r"error loading model|failed to load model|failed to open GGUF|gguf_init_from_file|exiting due to model loading error|couldn't bind", re.IGNORECASE)


def ngl_args(num_gpu: int) -> list[str]:
    """The offload flag for num_gpu, exactly as Ollama ≥ v0.30 passes it (v0.32.15 llm/llama_server.go:404-410)."""
    if num_gpu > 0:
        return ["-ngl", str(num_gpu)]
    if num_gpu == 0:
        return ["-ngl", "0"]
    return []  # -1: no flag; llama-server decides how many layers fit


@dataclass(frozen=True)
class LlamaServerEndpoint:
    """A backend given as the command that starts llama-server; the models are GGUF files."""

    name: str
    command: tuple[str, ...]
    model_files: tuple[tuple[str, Path], ...] = ()
    kind: ClassVar[str] = KIND_NAME

    @property
    def url(self) -> str:  # shown in reports where an Ollama endpoint shows its URL
        return "llama-server: " + shlex.join(self.command)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(label for label, _ in self.model_files)

    def model_path(self, label: str) -> Path:
        return dict(self.model_files)[label]

    def run_cell(self, runner: SweepRunner, cell: Cell) -> dict[str, Any]:
        return LlamaServerDriver.for_runner(runner).run_cell(self, cell)


def parse_llama_server(text: str, model_files: Sequence[Path] = ()) -> LlamaServerEndpoint:
    """``NAME=COMMAND`` (``vulkan='llama-server --device Vulkan0'``): COMMAND is shell-split, never run by a shell."""
    from gfxgate.sweep.runner import parse_named

    name, command = parse_named(text, "--llama-server", "NAME=COMMAND, e.g. vulkan='llama-server --device Vulkan0'")
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise UsageError(f"--llama-server {text!r}: cannot split the command ({exc})") from None
    if not argv:
        raise UsageError(f"--llama-server {text!r}: the command is empty")
    exe = argv[0]
    if shutil.which(exe) is None:
        raise UsageError(f"--llama-server {text!r}: {exe!r} is not an executable (not found, or not on PATH)")
    for flag in ("-m", "--model", "--port", "--host", "-ngl", "--gpu-layers", "--n-gpu-layers"):
        if flag in argv[1:]:
            raise UsageError(f"--llama-server {text!r}: leave {flag} out; gfxgate sets it for every cell")
    return LlamaServerEndpoint(name, argv, model_labels(model_files))


def model_labels(paths: Sequence[Path]) -> tuple[tuple[str, Path], ...]:
    """(label, path) per --model-file: the label (file name) is the model column of the worklog and report."""
    out: dict[str, Path] = {}
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise UsageError(f"--model-file {path}: not a file")
        if not os.access(path, os.R_OK):
            raise UsageError(f"--model-file {path}: not readable")
        label = path.name
        if label in out and out[label].resolve() != path.resolve():
            raise UsageError(f"--model-file: two files are named {label!r}; give them distinct names")
        out[label] = path.resolve()
    return tuple(out.items())


# -- evidence from the llama.cpp log ------------------------------------------------------------------------
@dataclass
class LogFacts:
    """What the llama-server log says about backends, the device, offload and the load/compute boundary."""

    backends: list[str] = field(default_factory=list)  # "Vulkan", "CPU"
    devices: list[str] = field(default_factory=list)  # "Vulkan0 (llvmpipe (LLVM 15.0.6, 256 bits))"
    offloaded: tuple[int, int] | None = None  # last "offloaded N/M layers to GPU"
    offloaded_line: int | None = None  # index into the lines
    no_gpu: bool = False
    loading_line: int | None = None  # first load marker
    loaded_line: int | None = None  # "model loaded": the load/compute boundary
    task_line: int | None = None  # the first request started processing
    load_error_line: int | None = None

    def to_json(self, first_line_no: int = 1) -> dict[str, Any]:
        def no(index: int | None) -> int | None:
            return None if index is None else index + first_line_no

        n, m = self.offloaded if self.offloaded else (None, None)
        return {
            "source": "llama-server log",
            "backends": list(self.backends),
            "devices": list(self.devices),
            "layers": n,
            "of": m,
            "line": no(self.offloaded_line),
            "no_usable_gpu": self.no_gpu,
            "model_loaded_line": no(self.loaded_line),
        }


def parse_log(lines: Sequence[str]) -> LogFacts:
    facts = LogFacts()
    for index, line in enumerate(lines):
        match = BACKEND_RE.search(line)
        if match and match["name"] not in facts.backends:
            facts.backends.append(match["name"])
        match = DEVICE_RE.search(line)
        if match:
            device = f"{match['dev']} ({match['desc']})"
            if device not in facts.devices:
                facts.devices.append(device)
        match = OFFLOADED_RE.search(line)
        if match:  # llama.cpp may load twice (fitting params, then for real): the last one counts
            facts.offloaded, facts.offloaded_line = (int(match["n"]), int(match["m"])), index
        if NO_GPU_RE.search(line):
            facts.no_gpu = True
        if facts.loading_line is None and LOADING_RE.search(line):
            facts.loading_line = index
        if facts.loaded_line is None and LOADED_RE.search(line):
            facts.loaded_line = index
        if facts.loaded_line is not None and facts.task_line is None and TASK_RE.search(line):
            facts.task_line = index
        if facts.load_error_line is None and LOAD_ERROR_RE.search(line):
            facts.load_error_line = index
    return facts


def signal_name(returncode: int | None) -> str | None:
    if returncode is None or returncode >= 0:
        return None
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


# -- the driver ---------------------------------------------------------------------------------------------
@dataclass
class Exchange:
    """What happened to one server process, step by step (all times in seconds from the spawn)."""

    argv: list[str]
    port: int
    log_path: Path
    proc: subprocess.Popen | None = None
    spawn_error: str = ""
    spawn_s: float = 0.0
    ready_s: float | None = None  # /health answered 200
    health_polls: int = 0
    last_health: str = ""
    request_s: float | None = None  # /completion sent
    answered_s: float | None = None
    stop_s: float | None = None
    stop_note: str = ""
    returncode: int | None = None  # after the run, before we stopped it (None: it was alive)
    stopped_rc: int | None = None  # after our stop
    status: int | None = None
    body: Any = None
    error: str = ""
    outcome: str = "ok"
    died_during: str = ""  # "load" / "compute" when the process ended on its own


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


class LlamaServerDriver:
    """Runs llama-server cells for one SweepRunner (model digests are computed once per sweep)."""

    def __init__(self, runner: SweepRunner) -> None:
        self.runner = runner
        self._digests: dict[Path, str] = {}
        self._versions: dict[str, str | None] = {}

    @classmethod
    def for_runner(cls, runner: SweepRunner) -> LlamaServerDriver:
        driver = getattr(runner, "_llama_driver", None)
        if driver is None:
            driver = cls(runner)
            runner._llama_driver = driver  # type: ignore[attr-defined]
        return driver

    def logs_dir(self) -> Path:
        worklog = Path(self.runner.writer.path)
        folder = worklog.with_name(worklog.name + ".logs")
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def digest(self, path: Path) -> str | None:
        if path not in self._digests:
            sha = hashlib.sha256()
            try:
                with open(path, "rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        sha.update(block)
            except OSError:
                return None
            self._digests[path] = "sha256:" + sha.hexdigest()
        return self._digests[path]

    def version(self, endpoint: LlamaServerEndpoint) -> str | None:
        """``COMMAND --version`` once per endpoint (llama.cpp prints ``version: N (commit)``)."""
        if endpoint.name not in self._versions:
            output = _run_bounded([*endpoint.command, "--version"], min(VERSION_TIMEOUT_S, self.runner.plan.timeout))
            match = re.search(r"version: (\S+(?: \([^)]*\))?)", output)
            self._versions[endpoint.name] = f"llama.cpp {match[1]}" if match else None
        return self._versions[endpoint.name]

    # -- one cell ---------------------------------------------------------------------------------------
    def run_cell(self, endpoint: LlamaServerEndpoint, cell: Cell) -> dict[str, Any]:
        plan = self.runner.plan
        model_path = endpoint.model_path(cell.model)
        run_id = f"{endpoint.name}-g{cell.num_gpu}-r{cell.repeat}-{uuid.uuid4().hex[:8]}"
        log_path = self.logs_dir() / f"{run_id}.log"
        started = utcnow()
        t0 = time.monotonic()
        ex = self._exchange(endpoint, cell, model_path, log_path)
        wall = time.monotonic() - t0
        ended = utcnow()

        lines = _read_lines(log_path)
        facts = parse_log(lines)
        collected = Collected("server-log", str(log_path), tuple(lines), "" if lines else "llama-server wrote no log lines", True, 1 if lines else None)
        signature, phase = self._classify(ex, lines, facts)
        if signature.found and ex.outcome == "http-error":
            ex.outcome = "crash"
        body = ex.body if isinstance(ex.body, dict) else {}
        timings = body.get("timings") if isinstance(body.get("timings"), dict) else {}
        text = body.get("content") if isinstance(body.get("content"), str) else ""
        eval_count = _int(timings.get("predicted_n"), body.get("tokens_predicted"))
        prompt_count = _int(timings.get("prompt_n"), body.get("tokens_evaluated"))
        options = plan.options(cell.num_gpu)
        notes = [f"llama-server argv: {shlex.join(ex.argv)}"]
        if ex.stop_note:
            notes.append(ex.stop_note)
        if facts.no_gpu:
            notes.append("llama-server: no usable GPU found, -ngl ignored (CPU-only backend set)")
        return {
            **record_fields(cell, plan, host=self.runner.host, started=started, ended=ended, wall=wall),
            "run_id": run_id,
            "endpoint": {"name": endpoint.name, "url": endpoint.url, "kind": KIND_NAME, "command": list(endpoint.command)},
            "server_version": self.version(endpoint),
            "model_file": str(model_path),
            "model_digest": self.digest(model_path),
            "model_details": None,
            "options": options,
            "server_args": ex.argv[len(endpoint.command):],
            "keep_alive": None,
            "stream": False,
            "first_token_s": None,
            "outcome": ex.outcome,
            "http_status": ex.status,
            "error": ex.error or None,
            "response_preview": text[:200] if text else None,
            "done_reason": body.get("stop_type"),
            "eval_count": eval_count,
            "prompt_eval_count": prompt_count,
            "durations_ns": {
                "total": _ns((ex.answered_s - ex.request_s) if ex.answered_s is not None and ex.request_s is not None else None),
                "load": _ns(ex.ready_s),
                "prompt_eval": _ns_ms(timings.get("prompt_ms")),
                "eval": _ns_ms(timings.get("predicted_ms")),
            },
            "tokens_per_s": round(float(timings["predicted_per_second"]), 2)
            if isinstance(timings.get("predicted_per_second"), (int, float))
            else None,
            "ps_after": {"ok": False, "note": "llama-server has no /api/ps; offload is read from its log (see offload)", "models": []},
            "offload": facts.to_json(),
            "overhead": {
                "spawn_s": round(ex.spawn_s, 4),
                "health_wait_s": _round(ex.ready_s - ex.spawn_s if ex.ready_s is not None else None),
                "health_polls": ex.health_polls,
                "completion_s": _round(ex.answered_s - ex.request_s if ex.answered_s is not None and ex.request_s is not None else None),
                "stop_s": _round(ex.stop_s),
                "server_exit": {"returncode": ex.returncode, "signal": signal_name(ex.returncode), "after_stop": ex.stopped_rc},
            },
            "evidence": [collected.to_json()],
            "server_log": str(log_path),
            "crash_log_source": str(log_path) if signature.found else None,
            "crash": signature.to_json() if signature.found else None,
            "phase": phase.to_json(),
            "log_tail": list(lines[-EXCERPT_LINES:]) if ex.outcome != "ok" and not signature.excerpt else [],
            "environment": self.runner._environment_probes(),
            "notes": notes,
        }

    def _exchange(self, endpoint: LlamaServerEndpoint, cell: Cell, model: Path, log_path: Path) -> Exchange:
        import httpx

        plan = self.runner.plan
        port = free_port()
        argv = [*endpoint.command, "-m", str(model), "--host", HOST, "--port", str(port), "--log-verbosity", LOG_VERBOSITY, "-np", "1", "-c", str(CTX_SIZE), *ngl_args(cell.num_gpu)]
        ex = Exchange(argv, port, log_path)
        t0 = time.monotonic()
        with open(log_path, "wb") as log:
            try:
                ex.proc = subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                ex.spawn_error = f"could not start {argv[0]}: {exc.strerror or exc}"
        ex.spawn_s = time.monotonic() - t0
        if ex.proc is None:
            ex.outcome, ex.error, ex.died_during = "crash", ex.spawn_error, "load"
            return ex
        base = f"http://{HOST}:{port}"
        try:
            # every request ends by its wall-clock deadline: a server dripping bytes or never answering is a timeout
            transport = DeadlineTransport(plan.timeout)
            timeout = httpx.Timeout(plan.timeout, connect=min(plan.timeout, 10.0))
            with httpx.Client(trust_env=False, timeout=timeout, transport=transport) as client:
                if self._wait_ready(ex, client, base, t0, plan.timeout):
                    self._complete(ex, client, base, t0, cell)
        finally:
            self._stop(ex, t0)
        return ex

    def _wait_ready(self, ex: Exchange, client: Any, base: str, t0: float, timeout: float) -> bool:
        import httpx

        deadline = t0 + timeout
        while True:
            rc = ex.proc.poll()
            if rc is not None:
                ex.returncode, ex.outcome, ex.died_during = rc, "crash", "load"
                ex.error = _death_text(rc) + " before /health answered ok"
                return False
            if time.monotonic() > deadline:
                ex.outcome = "timeout"
                ex.error = f"/health did not answer ok within {timeout:g} s (last: {ex.last_health or 'no answer'})"
                ex.died_during = "load"
                return False
            ex.health_polls += 1
            try:
                poll = min(HEALTH_TIMEOUT_S, max(0.1, deadline - time.monotonic()))
                response = client.get(f"{base}/health", timeout=poll, extensions={DEADLINE: time.monotonic() + poll})
                ex.last_health = f"HTTP {response.status_code}"
                if response.status_code == 200:
                    ex.ready_s = time.monotonic() - t0
                    return True
            except httpx.HTTPError as exc:
                ex.last_health = type(exc).__name__
            time.sleep(HEALTH_POLL_S)

    def _complete(self, ex: Exchange, client: Any, base: str, t0: float, cell: Cell) -> None:
        import httpx

        plan = self.runner.plan
        payload = {"prompt": plan.prompt, "n_predict": plan.num_predict, "seed": plan.seed, "temperature": 0, "cache_prompt": False}
        ex.request_s = time.monotonic() - t0
        try:
            response = client.post(f"{base}/completion", json=payload)
        except httpx.TimeoutException as exc:
            ex.outcome, ex.error = "timeout", f"no complete answer within {plan.timeout:g} s ({type(exc).__name__}: {exc})"
            ex.died_during = "compute"
            return
        except httpx.TransportError as exc:
            ex.error = f"/completion failed: {type(exc).__name__}: {exc}"
            rc = _wait_exit(ex.proc, DEATH_GRACE_S)
            if rc is not None:
                ex.returncode, ex.outcome, ex.died_during = rc, "crash", "compute"
                ex.error = _death_text(rc) + f" with /completion in flight ({type(exc).__name__})"
            else:
                ex.outcome = "connection-error"
            return
        ex.answered_s = time.monotonic() - t0
        ex.status = response.status_code
        try:
            ex.body = response.json()
        except ValueError:
            ex.body = None
        if response.status_code != 200:
            ex.outcome = "http-error"
            ex.error = _error_text(ex.body) or f"HTTP {response.status_code}"
        elif not isinstance(ex.body, dict) or "content" not in ex.body:
            ex.outcome, ex.error = "http-error", "malformed /completion answer (no content)"
        rc = ex.proc.poll()
        if rc is not None:  # answered, then died
            ex.returncode = rc

    def _stop(self, ex: Exchange, t0: float) -> None:
        proc = ex.proc
        if proc is None:
            return
        if ex.returncode is None:
            ex.returncode = proc.poll()
        if ex.returncode is not None:
            ex.stop_s = 0.0
            return
        start = time.monotonic()
        sent = "SIGTERM"
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            if ex.outcome == "timeout":  # a stopped (SIGSTOP) server must run to act on SIGTERM
                os.killpg(proc.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
        rc = _wait_exit(proc, STOP_GRACE_S)
        if rc is None:
            sent = "SIGKILL"
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = proc.wait()
        ex.stop_s = time.monotonic() - start
        ex.stopped_rc = rc
        if sent == "SIGKILL":
            ex.stop_note = f"llama-server ignored SIGTERM for {STOP_GRACE_S:g} s; killed with SIGKILL"

    def _classify(self, ex: Exchange, lines: Sequence[str], facts: LogFacts) -> tuple[crashmod.CrashSignature, crashmod.Phase]:
        logged = crashmod.parse_crash(lines)  # GGML_ASSERT / backtrace frames, when llama.cpp printed them
        if ex.outcome == "ok":
            return crashmod.CrashSignature(), crashmod.Phase("none", "the run succeeded")
        boundary = facts.loaded_line
        if ex.outcome == "timeout":
            if ex.died_during == "load" and boundary is not None:
                return logged, crashmod.Phase(
                    "timeout", f"the log says the model loaded ({_at(lines, boundary, 'model loaded')}) but {ex.error}: the server hung"
                )
            if ex.died_during == "load":
                where = _at(lines, facts.loading_line, "load started") if facts.loading_line is not None else "no load line in the log"
                return logged, crashmod.Phase("timeout", f"llama-server did not become ready while loading ({ex.error}); {where}")
            return logged, crashmod.Phase(
                "timeout", f"no /completion answer within the timeout after the model loaded ({_at(lines, boundary, 'model loaded')})"
            )
        if ex.returncode is not None and ex.died_during:
            sig = signal_name(ex.returncode)
            frames = logged.frames
            key = logged.key_frames
            first = logged.first_line if logged.first_line is not None else max(0, len(lines) - 1)
            anchor = facts.load_error_line if ex.died_during == "load" and facts.load_error_line is not None else None
            excerpt = _excerpt(lines, anchor if anchor is not None else first, boundary, logged)
            signature = crashmod.CrashSignature(
                signals=tuple(dict.fromkeys(([sig] if sig and not sig.startswith("signal ") else []) + list(logged.signals))),
                exit_status=ex.returncode if ex.returncode > 0 else None,
                terminated=True,
                frames=frames,
                key_frames=key,
                first_line=first if lines else None,
                excerpt=excerpt,
            )
            if ex.died_during == "load" or (boundary is None and not any(f in crashmod.COMPUTE_FRAMES for f in key)):
                if facts.load_error_line is not None:
                    why = f"log line {facts.load_error_line + 1}: {_short(lines[facts.load_error_line])}"
                elif facts.loading_line is not None:
                    why = f"last load line {_last_index(lines) + 1}: {_short(lines[_last_index(lines)])}"
                else:
                    why = "the log has no load line yet"
                return signature, crashmod.Phase(
                    "load", f"llama-server {_death_text(ex.returncode)} before it served (/health never ok, no 'model loaded'); {why}"
                )
            task = f"; request started at log line {facts.task_line + 1}" if facts.task_line is not None else ""
            frames_text = f" in {' → '.join(f for f in key if f in crashmod.COMPUTE_FRAMES)}" if key else ""
            return signature, crashmod.Phase(
                "compute",
                f"llama-server {_death_text(ex.returncode)}{frames_text} with /completion in flight, after the model loaded "
                f"({_at(lines, boundary, 'model loaded')}){task}",
            )
        if ex.outcome == "connection-error":
            return logged, crashmod.Phase("transport", f"the HTTP exchange failed while the server kept running: {ex.error}")
        # An HTTP failure from a server that kept running: 4xx rejects the request (not a backend failure),
        # 5xx after the model loaded is a failure while serving it, located by the log's error line.
        errors = [i for i in range(facts.task_line or boundary or 0, len(lines)) if ERROR_LINE_RE.search(lines[i])]
        logged_error = f"; log line {errors[0] + 1}: {_short(lines[errors[0]])}" if errors else ""
        if ex.status is not None and 400 <= ex.status < 500:
            return logged, crashmod.Phase(
                "unknown", f"llama-server rejected the request (HTTP {ex.status}: {_short(ex.error)}) and kept running{logged_error}"
            )
        if boundary is not None:
            return logged, crashmod.Phase(
                "compute",
                f"llama-server answered HTTP {ex.status}: {_short(ex.error)!r} after the model loaded "
                f"({_at(lines, boundary, 'model loaded')}){logged_error}",
            )
        return logged, crashmod.classify_phase(ex.outcome, lines, logged, ex.error, 1)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when gfxgate dies (even by SIGKILL), so no server outlives its sweep.

    Linux ``prctl(PR_SET_PDEATHSIG)``; it survives the exec of ``env …`` and wrappers. Elsewhere a no-op (a sweep
    killed hard may then leave its server running; a normal end, Ctrl-C or a failed cell always stops it).
    SIGKILL, not SIGTERM: on SIGTERM llama-server first cancels its in-flight request, which waits for the HTTP
    handler to notice its client is gone; with the sweep dead there is nobody left to escalate, and a CI run saw
    a server still running 10 s after its sweep was killed mid-generation. A server whose sweep is gone has
    nothing left to finish for anyone.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


def _run_bounded(argv: Sequence[str], seconds: float) -> str:
    """stdout + stderr of a short command, ``seconds`` at most: the command runs in its own process group, which
    is killed at the limit (a wrapper's child holding the pipe open cannot keep us waiting); "" on any failure."""
    try:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=_die_with_parent,
        )
    except OSError:
        return ""
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return ""
    return (out or b"")[:65536].decode("utf-8", errors="replace")


def _read_lines(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[-MAX_LOG_LINES:]


def _wait_exit(proc: subprocess.Popen, seconds: float) -> int | None:
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None


def _death_text(rc: int) -> str:
    sig = signal_name(rc)
    return f"was killed by {sig}" if sig else f"exited with status {rc}"


def _error_text(body: Any) -> str:
    """llama-server's error answer: ``{"error": {"code": 500, "message": "…", "type": "…"}}``."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("message") or json.dumps(error, sort_keys=True))[:300]
        if error:
            return str(error)[:300]
    return ""


def _excerpt(lines: Sequence[str], first: int, boundary: int | None, logged: crashmod.CrashSignature) -> tuple[str, ...]:
    if logged.excerpt:
        return logged.excerpt
    if not lines:
        return ()
    picked: list[str] = []
    if boundary is not None and boundary < first - EXCERPT_LINES:
        picked += [lines[boundary], "…"]
    start = max(0, first - EXCERPT_LINES + 1)
    picked += [line for line in lines[start : first + 4]]
    return tuple(picked)


def _last_index(lines: Sequence[str]) -> int:
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip():
            return index
    return 0


def _at(lines: Sequence[str], index: int | None, what: str) -> str:
    if index is None:
        return f"no '{what}' line in the log"
    return f"log line {index + 1}: {_short(lines[index])}"


def _short(text: str, limit: int = 140) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _int(*values: Any) -> int | None:
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _ns(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1e9)


def _ns_ms(ms: Any) -> int | None:
    return int(float(ms) * 1e6) if isinstance(ms, (int, float)) else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
