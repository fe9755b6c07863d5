"""An in-process HTTP server that speaks Ollama's documented REST API, for the sweep tests.

It is a real server on 127.0.0.1 (port 0): the official ``ollama`` client and ``httpx`` talk to it over
TCP. It follows https://github.com/ollama/ollama/blob/main/docs/api.md for ``/api/generate`` (NDJSON
stream with chunked transfer encoding, or one JSON object), ``/api/ps``, ``/api/version``, ``/api/show``
and ``/api/tags``, and can behave as

* ``healthy``   — answers every generate, offloading ``num_gpu`` layers (``-1``: all) as ``/api/ps`` shows;
* ``crash-gpu`` — like Ollama's Vulkan backend on a Vega 56 in the seed: with ``num_gpu`` ≠ 0 the runner
  loads, starts, then dies with SIGSEGV in ``ggml_backend_sched_graph_compute_async`` → ``computeBatch``;
  the log file gets the lines a real server writes and the client gets HTTP 500 with Ollama's error body;
* ``crash-load`` — the runner dies while loading tensors, before "llama runner started";
* ``hang``      — accepts the generate and answers only after ``hang_s`` (longer than the client timeout);
* ``drop``      — reads the generate request, then closes the connection without a response;
* ``garbage``   — answers a generate with HTTP 200 and a body that is not JSON (a proxy's error page).

``die_after=N`` makes the server close its listening socket when generate request N+1 arrives (a
server dying mid-sweep): that request's connection is dropped, later ones are refused.
All waits are bounded, so a test can never hang on this server.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

MODEL = "qwen3.5:2b"
DIGEST = "b0e4f2c3a1d5968e7f6a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f70"
BLOCKS = 28  # repeating layers; Ollama offloads BLOCKS + 1 (the output layer) for num_gpu=-1
MODEL_SIZE = 2_742_000_000


@dataclass
class Behaviour:
    mode: str = "healthy"  # healthy | crash-gpu | crash-load | hang | drop
    version: str = "0.12.3"
    log_path: Path | None = None
    die_after: int | None = None
    hang_s: float = 3.0
    drip_s: float = 0.0  # real time between streamed tokens (a slow drip)
    delay_s: float = 0.0  # real time a generate takes (to make a sweep slow enough to interrupt)
    hold_after: int | None = None  # generates after this many wait for ``hold`` (a sweep caught mid-cell, not raced)
    hold: threading.Event | None = None
    cpu_ms_per_token: float = 88.0  # simulated timings the server reports
    gpu_ms_per_token: float = 21.0


@dataclass
class State:
    behaviour: Behaviour
    generates: int = 0
    loaded: dict[str, Any] | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stopping: threading.Event = field(default_factory=threading.Event)
    runner_port: int = 39111


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _slog(level: str, source: str, msg: str, **attrs: Any) -> str:
    stamp = _now().strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    extra = "".join(
        f" {k}={json.dumps(v) if isinstance(v, str) and (' ' in v or not v) else v}" for k, v in attrs.items()
    )
    return f"time={stamp} level={level} source={source} msg={json.dumps(msg)}{extra}"


def _gin(status: int, seconds: float, method: str, path: str) -> str:
    stamp = _now().strftime("%Y/%m/%d - %H:%M:%S")
    return f'[GIN] {stamp} | {status} | {seconds:>12.6f}s |       127.0.0.1 | {method:<8} "{path}"'


def _layers(num_gpu: int) -> int:
    return BLOCKS + 1 if num_gpu < 0 else min(num_gpu, BLOCKS + 1)


def load_lines(state: State, num_gpu: int) -> list[str]:
    layers = _layers(num_gpu)
    state.runner_port += 1
    blob = f"/var/lib/ollama/models/blobs/sha256-{DIGEST}"
    return [
        _slog("INFO", "server.go:216", "enabling flash attention"),
        _slog(
            "INFO",
            "server.go:398",
            "starting runner",
            cmd=f"/usr/bin/ollama runner --ollama-engine --model {blob} --port {state.runner_port}",
        ),
        _slog("INFO", "runner.go:1252", "starting ollama engine"),
        _slog("INFO", "ggml.go:136", "", architecture="qwen35", file_type="Q4_K_M", name="Qwen3.5 2B"),
        "load_backend: loaded Vulkan backend from /usr/lib/ollama/libggml-vulkan.so",
        "ggml_vulkan: 0 = AMD Radeon RX Vega (RADV VEGA10) (radv) | uma: 0 | fp16: 1 | warp size: 64",
        _slog(
            "INFO", "server.go:503", "offloading layers", requested=num_gpu, layers_offloaded=layers, total=BLOCKS + 1
        ),
        f"load_tensors: offloaded {layers}/{BLOCKS + 1} layers to GPU",
    ]


def started_line() -> str:
    return _slog("INFO", "server.go:1289", "llama runner started in 2.07 seconds")


def segv_lines(state: State) -> list[str]:
    """A Go runtime crash report with cgo frames, as Ollama's runner prints it when ggml faults."""
    return [
        "SIGSEGV: segmentation violation",
        "PC=0x7f3a1c2b4e10 m=11 sigcode=1 addr=0x18",
        "signal arrived during cgo execution",
        "",
        "goroutine 36 gp=0xc000602a80 m=11 mp=0xc000580808 [syscall]:",
        "runtime.cgocall(0x5631f0c4a1d0, 0xc0000b5b58)",
        "\truntime/cgocall.go:167 +0x4b fp=0xc0000b5b30 sp=0xc0000b5af8 pc=0x5631f016c0cb",
        "github.com/ollama/ollama/ml/backend/ggml._Cfunc_ggml_backend_sched_graph_compute_async(0x7f39d8001e30, 0x7f39d86f2b10)",
        "\t_cgo_gotypes.go:496 +0x4a fp=0xc0000b5b58 sp=0xc0000b5b30 pc=0x5631f05a3b6a",
        "github.com/ollama/ollama/ml/backend/ggml.(*Context).ComputeWithNotify.func1(...)",
        "\tgithub.com/ollama/ollama/ml/backend/ggml/ggml.go:826",
        "github.com/ollama/ollama/ml/backend/ggml.(*Context).ComputeWithNotify(0xc0004a6140, 0xc000512080, {0xc00050a0e8, 0x1, 0x1})",
        "\tgithub.com/ollama/ollama/ml/backend/ggml/ggml.go:826 +0xd1 fp=0xc0000b5bd0 sp=0xc0000b5b58 pc=0x5631f05b0c71",
        "github.com/ollama/ollama/runner/ollamarunner.(*Server).computeBatch(0xc0001d4000, {0x22, {0x5631f1a2c0a8, 0xc0004a6140}, {0x5631f1a3b1d8, 0xc0004ee1e0}, {0xc000514000, 0x200, 0x200}, {{0x5631f1a3b1d8, 0xc0004ee228}, {0xc000514c00, 0x200, 0x200}, {0x0, 0x0, 0x0}, {0x0, 0x0, 0x0}, {0xc0004f6000, 0x200, 0x200}, ...}, ...})",
        "\tgithub.com/ollama/ollama/runner/ollamarunner/runner.go:716 +0x6a5 fp=0xc0000b5f08 sp=0xc0000b5bd0 pc=0x5631f0643b45",
        "github.com/ollama/ollama/runner/ollamarunner.(*Server).run.gowrap1()",
        "\tgithub.com/ollama/ollama/runner/ollamarunner/runner.go:451 +0x2d fp=0xc0000b5fe0 sp=0xc0000b5f08 pc=0x5631f0640cad",
        "runtime.goexit({})",
        "\truntime/asm_amd64.s:1700 +0x1 fp=0xc0000b5fe8 sp=0xc0000b5fe0 pc=0x5631f0177061",
        "created by github.com/ollama/ollama/runner/ollamarunner.(*Server).run in goroutine 1",
        "\tgithub.com/ollama/ollama/runner/ollamarunner/runner.go:451 +0x239",
        "",
        "rax    0x0",
        "rip    0x7f3a1c2b4e10",
        _slog(
            "ERROR",
            "server.go:1489",
            "post predict",
            error=f'Post "http://127.0.0.1:{state.runner_port}/completion": EOF',
        ),
        _slog("INFO", "sched.go:518", "llama runner process has terminated: exit status 2"),
    ]


def load_crash_lines() -> list[str]:
    return [
        "ggml_vulkan: Device memory allocation of size 1048576000 failed.",
        "SIGABRT: abort",
        "PC=0x7f3a1c0969fc m=0 sigcode=18446744073709551610",
        "signal arrived during cgo execution",
        "",
        "goroutine 1 gp=0xc000002380 m=0 mp=0x5631f1d4e8a0 [syscall]:",
        "github.com/ollama/ollama/ml/backend/ggml._Cfunc_ggml_backend_alloc_ctx_tensors_from_buft(0x7f39d8001e30, 0x7f39d86f2b10)",
        "\t_cgo_gotypes.go:312 +0x4a",
        "github.com/ollama/ollama/runner/ollamarunner.(*Server).loadModel(0xc0001d4000, {...})",
        "\tgithub.com/ollama/ollama/runner/ollamarunner/runner.go:1121 +0x2b5",
        _slog("INFO", "sched.go:518", "llama runner process has terminated: exit status 2"),
    ]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FakeOllama

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep pytest output clean
        pass

    # -- plumbing -----------------------------------------------------------------------------------
    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        return json.loads(raw or b"{}")

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _log(self, lines: list[str]) -> None:
        path = self.server.state.behaviour.log_path
        if path is None:
            return
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("".join(line + "\n" for line in lines))
            handle.flush()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    # -- routes -------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        state = self.server.state
        if self.path == "/api/version":
            self._json(200, {"version": state.behaviour.version})
        elif self.path == "/api/tags":
            self._json(200, {"models": [self._model_entry()]})
        elif self.path == "/api/ps":
            with state.lock:
                loaded = dict(state.loaded) if state.loaded else None
            models = []
            if loaded:
                size_vram = MODEL_SIZE * _layers(loaded["num_gpu"]) // (BLOCKS + 1)
                models.append(
                    {
                        **self._model_entry(),
                        "expires_at": "2026-12-02T14:05:00.000000000Z",
                        "size": MODEL_SIZE,
                        "size_vram": size_vram,
                        "context_length": 4096,
                    }
                )
            self._json(200, {"models": models})
        else:
            self._json(404, {"error": "404 page not found"})

    def do_POST(self) -> None:  # noqa: N802
        body = self._body()
        if self.path == "/api/show":
            if body.get("model") != MODEL:
                self._json(404, {"error": f"model '{body.get('model')}' not found"})
                return
            self._json(
                200,
                {
                    "modelfile": f"FROM {MODEL}",
                    "parameters": "temperature 0.6",
                    "template": "{{ .Prompt }}",
                    "details": self._model_entry()["details"],
                    "model_info": {"general.architecture": "qwen35", "qwen35.block_count": BLOCKS},
                    "capabilities": ["completion"],
                    "modified_at": "2026-11-20T09:12:44.118Z",
                },
            )
        elif self.path == "/api/generate":
            self._generate(body)
        else:
            self._json(404, {"error": "404 page not found"})

    def _model_entry(self) -> dict[str, Any]:
        return {
            "name": MODEL,
            "model": MODEL,
            "modified_at": "2026-11-20T09:12:44.118Z",
            "size": MODEL_SIZE,
            "digest": DIGEST,
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "qwen35",
                "families": ["qwen35"],
                "parameter_size": "2.3B",
                "quantization_level": "Q4_K_M",
            },
        }

    def _generate(self, body: dict[str, Any]) -> None:
        state = self.server.state
        behaviour = state.behaviour
        with state.lock:
            state.requests.append(body)
        model = body.get("model")
        options = body.get("options") or {}
        num_gpu = int(options.get("num_gpu", -1))
        if body.get("keep_alive") == 0 and not body.get("prompt"):
            with state.lock:
                state.loaded = None
            self._json(
                200,
                {
                    "model": model,
                    "created_at": _now().isoformat(),
                    "response": "",
                    "done": True,
                    "done_reason": "unload",
                },
            )
            return
        if model != MODEL:
            self._json(404, {"error": f"model '{model}' not found, try pulling it first"})
            return
        with state.lock:
            state.generates += 1
            count = state.generates
        if behaviour.die_after is not None and count > behaviour.die_after:
            self.server.die()
            self._drop()
            return
        if behaviour.delay_s:
            state.stopping.wait(behaviour.delay_s)
        if behaviour.hold is not None and behaviour.hold_after is not None and count > behaviour.hold_after:
            while not (behaviour.hold.is_set() or state.stopping.is_set()):
                behaviour.hold.wait(0.05)
        t0 = time.monotonic()
        if behaviour.mode == "drop":
            self._drop()
            return
        if behaviour.mode == "garbage":
            data = b"<html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if behaviour.mode == "hang":
            state.stopping.wait(behaviour.hang_s)
            if state.stopping.is_set():
                self._drop()
                return
        if behaviour.mode == "crash-load" and num_gpu != 0:
            self._log(
                load_lines(state, num_gpu)
                + load_crash_lines()
                + [_gin(500, time.monotonic() - t0, "POST", "/api/generate")]
            )
            with state.lock:
                state.loaded = None
            self._json(500, {"error": "llama runner process has terminated: exit status 2"})
            return
        if behaviour.mode == "crash-gpu" and num_gpu != 0:
            self._log(
                load_lines(state, num_gpu)
                + [started_line()]
                + segv_lines(state)
                + [_gin(500, time.monotonic() - t0 + 2.6, "POST", "/api/generate")]
            )
            with state.lock:
                state.loaded = None
            self._json(500, {"error": "llama runner process has terminated: exit status 2"})
            return
        self._answer(body, model, num_gpu, options)

    def _answer(self, body: dict[str, Any], model: str, num_gpu: int, options: dict[str, Any]) -> None:
        state = self.server.state
        behaviour = state.behaviour
        num_predict = int(options.get("num_predict", 128))
        if num_predict < 0:
            num_predict = 256
        eval_count = num_predict  # the prompt asks for more than num_predict tokens: generation hits the limit
        on_gpu = _layers(num_gpu) / (BLOCKS + 1)
        ms_per_token = behaviour.cpu_ms_per_token * (1 - on_gpu) + behaviour.gpu_ms_per_token * on_gpu
        load_ns = 2_071_553_180
        prompt_eval_count = max(1, len(str(body.get("prompt", "")).split()) + 9)
        prompt_eval_ns = int(prompt_eval_count * ms_per_token * 0.35 * 1e6)
        eval_ns = int(eval_count * ms_per_token * 1e6)
        total_ns = load_ns + prompt_eval_ns + eval_ns + 48_221_310
        with state.lock:
            reloading = state.loaded is None or state.loaded["num_gpu"] != num_gpu
        if reloading:
            self._log(load_lines(state, num_gpu) + [started_line()])
        with state.lock:
            state.loaded = {"model": model, "num_gpu": num_gpu}
        words = ["The", " sky", " looks", " blue", " because", " air", " scatters", " short", " wavelengths", "."]
        tokens = [words[i % len(words)] for i in range(eval_count)]
        created = _now().isoformat().replace("+00:00", "Z")
        final = {
            "model": model,
            "created_at": created,
            "done": True,
            "done_reason": "length",
            "total_duration": total_ns,
            "load_duration": load_ns if reloading else 61_120,
            "prompt_eval_count": prompt_eval_count,
            "prompt_eval_duration": prompt_eval_ns,
            "eval_count": eval_count,
            "eval_duration": eval_ns,
        }
        self._log([_gin(200, total_ns / 1e9, "POST", "/api/generate")])
        if body.get("stream", True):
            self.send_response(200)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for token in tokens:
                self._chunk({"model": model, "created_at": created, "response": token, "done": False})
                if behaviour.drip_s:
                    state.stopping.wait(behaviour.drip_s)
            self._chunk({**final, "response": ""})
            self.wfile.write(b"0\r\n\r\n")
        else:
            self._json(200, {**final, "response": "".join(tokens), "context": [151644, 872, 198]})

    def _chunk(self, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


class FakeOllama(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, behaviour: Behaviour) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = State(behaviour)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._dead = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> FakeOllama:
        self._thread.start()
        return self

    def die(self) -> None:
        """Stop accepting connections from inside a handler (the server 'crashes' mid-sweep)."""
        if self._dead.is_set():
            return
        self._dead.set()
        self.state.stopping.set()
        # Handlers run in their own threads, so waiting for serve_forever to exit here is safe; the
        # listening socket is closed before the handler returns, so the next request is refused.
        self.shutdown()
        self.server_close()

    def stop(self) -> None:
        self.state.stopping.set()
        if not self._dead.is_set():
            self._dead.set()
            self.shutdown()
            self.server_close()
        self._thread.join(timeout=5)
