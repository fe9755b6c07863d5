"""The sweep loop: one generate call per endpoint x model x num_gpu x repeat, through the official client.

Each run is appended to the worklog as soon as it ends, so an interrupted sweep loses at most the run in
flight, and a rerun skips every cell already recorded. A failing server never stops the sweep: its
cells become recorded failures (HTTP error, crash, timeout, connection error) with their evidence.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
import time
import uuid
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Protocol, Sequence, runtime_checkable
from urllib.parse import urlsplit
import stat

from gfxgate.errors import InputError, NetworkError, Terminated, UsageError
from gfxgate.logs import crash as crashmod
from gfxgate.records import dataclass
from gfxgate.sweep.deadline import DeadlineTransport
from gfxgate.sweep.evidence import Collected, LogTail, gpu_probes, journal_window, utcnow
from gfxgate.sweep.worklog import RunRecord, WorklogWriter, cell_key, record_fields
from gfxgate.host.devmem import device_memory
from gfxgate.fsio import file_kind, read_input

DEFAULT_NUM_GPU = (0, 1, 2, -1)
DEFAULT_PROMPT = "Explain in three sentences why the sky is blue."
CONNECT_TIMEOUT_S = 10.0
INFO_TIMEOUT_S = 15.0
MAX_PROMPT_BYTES = 16 << 20
FAILED_LOG_TAIL = 20
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")  # llama-server -ctk/-ctv


class SweepEndpoint(Protocol):
    """What a plan, its cells and their records read of an endpoint: an Ollama server (Endpoint) or a server
    gfxgate starts per cell (llamaserver.LlamaServerEndpoint, which runs its own cells: RunsOwnCells)."""

    kind: ClassVar[str]

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...


@runtime_checkable
class RunsOwnCells(SweepEndpoint, Protocol):
    def run_cell(self, runner: SweepRunner, cell: Cell) -> dict[str, Any]: ...


@dataclass(frozen=True)
class Endpoint:
    name: str
    url: str
    kind: ClassVar[str] = "ollama"  # other kinds (llama-server) carry their own run_cell


def parse_endpoint(text: str) -> Endpoint:
    """``NAME=URL`` (``rocm=http://127.0.0.1:11435``); a bare ``host:port`` gets ``http://``."""
    name, url = parse_named(text, "--endpoint", "NAME=URL, e.g. rocm=http://127.0.0.1:11435")
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        raise UsageError(f"--endpoint {text!r}: bad port in {url!r}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(
            f"--endpoint {text!r}: {url!r} is not an http(s) URL", hint="e.g. vulkan=http://127.0.0.1:11434"
        )
    if parts.query or parts.fragment:
        raise UsageError(f"--endpoint {text!r}: the URL must not carry a query or fragment")
    del port
    return Endpoint(name, url.rstrip("/"))


def parse_named(text: str, option: str, form: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value:
        raise UsageError(f"{option} {text!r}: expected {form}")
    if not all(ch.isalnum() or ch in "-_." for ch in name):
        raise UsageError(f"{option} {text!r}: the name may use letters, digits, '-', '_' and '.' only")
    return name, value


def parse_num_gpu(values: Sequence[str]) -> tuple[int, ...]:
    out: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            try:
                number = int(part)
            except ValueError:
                raise UsageError(f"--num-gpu {value!r}: {part!r} is not an integer") from None
            if number < -1:
                raise UsageError(f"--num-gpu {value!r}: {number} is below -1 (-1 means 'as many layers as fit')")
            if number not in out:
                out.append(number)
    return tuple(out) or DEFAULT_NUM_GPU


@dataclass(frozen=True)
class Cell:
    endpoint: SweepEndpoint
    model: str
    num_gpu: int
    repeat: int
    ctx: int | None = None  # num_ctx / llama-server -c; None: the server's default
    prompt_tokens: int | None = None  # a prompt of this many tokens; None: the plan's prompt
    flash_attn: str | None = None  # llama-server -fa on|off; None: the server's default
    kv_type: str | None = None  # llama-server -ctk/-ctv; None: the server's default (f16)
    warmup: bool = False  # recorded and counted, left out of the statistics
    prompt_spec: str | None = None  # --prompt-tokens as given ("512", "50%"): what stays fixed across contexts

    @property
    def key(self) -> str:
        return cell_key(
            self.endpoint.name,
            self.model,
            self.num_gpu,
            self.repeat,
            ctx=self.ctx,
            prompt_tokens=self.prompt_tokens,
            flash_attn=self.flash_attn,
            kv_type=self.kv_type,
            warmup=self.warmup,
        )

    def __str__(self) -> str:
        axes = "".join(
            f" {name}={value}"
            for name, value in (
                ("ctx", self.ctx),
                ("prompt", self.prompt_tokens),
                ("fa", self.flash_attn),
                ("kv", self.kv_type),
            )
            if value is not None
        )
        run = f"warm-up #{self.repeat + 1}" if self.warmup else f"#{self.repeat + 1}"
        return f"{self.endpoint.name} {self.model} num_gpu={self.num_gpu}{axes} {run}"


@dataclass(frozen=True)
class SweepPlan:
    endpoints: tuple[SweepEndpoint, ...]
    models: tuple[str, ...]
    num_gpus: tuple[int, ...] = DEFAULT_NUM_GPU
    repeats: int = 1
    num_predict: int = 512
    prompt: str = DEFAULT_PROMPT
    seed: int = 42
    timeout: float = 600.0
    keep_alive: str = "5m"
    unload: bool = True
    stream: bool = False
    gpu_target: str | None = None
    server_logs: Mapping[str, Path] = field(default_factory=dict)
    journal_units: Mapping[str, str] = field(default_factory=dict)
    probe_gpu: bool = True
    gpu_memory_log: Path | None = (
        None  # a GPU sampler's CSV (nvidia-smi --query-compute-apps=pid,process_name,used_memory)
    )
    contexts: tuple[int | None, ...] = (None,)  # --ctx
    prompt_tokens: tuple[str | None, ...] = (None,)  # --prompt-tokens: "512" or "50%" (of the context)
    flash_attn: tuple[str | None, ...] = (None,)  # --flash-attn on,off
    kv_types: tuple[str | None, ...] = (None,)  # --kv-type f16,q8_0
    warmup: int = 0  # warm-up runs per endpoint and configuration, before its repeats

    def __post_init__(self) -> None:
        names = [e.name for e in self.endpoints]
        if not names:
            raise UsageError("give at least one --endpoint NAME=URL")
        if len(set(names)) != len(names):
            raise UsageError(f"endpoint names must be unique: {', '.join(names)}")
        if not self.models and any(e.kind == "ollama" for e in self.endpoints):
            raise UsageError("give at least one --model")
        for label, mapping in (("--server-log", self.server_logs), ("--journal-unit", self.journal_units)):
            unknown = sorted(set(mapping) - set(names))
            if unknown:
                raise UsageError(
                    f"{label} names unknown endpoint(s) {', '.join(unknown)} (endpoints: {', '.join(names)})"
                )
        for name, path in self.server_logs.items():
            _check_log_file(name, Path(path))
        if self.repeats < 1 or self.num_predict < 1 or self.timeout <= 0:
            raise UsageError("--repeat and --num-predict must be ≥ 1 and --timeout > 0")
        if self.warmup < 0:
            raise UsageError("--warmup must be ≥ 0")
        ollama = [e.name for e in self.endpoints if e.kind == "ollama"]
        if ollama and (self.flash_attn != (None,) or self.kv_types != (None,)):
            raise UsageError(
                f"--flash-attn and --kv-type start llama-servers with -fa / -ctk -ctv; the Ollama endpoint(s) "
                f"{', '.join(ollama)} were started with their own OLLAMA_FLASH_ATTENTION / OLLAMA_KV_CACHE_TYPE",
                hint="start one Ollama server per setting and give each its own --endpoint (rocm-fa=…, rocm-q8=…)",
            )
        for ctx in self.contexts:
            for text in self.prompt_tokens:
                tokens = prompt_length(text, ctx, self.num_predict)
                if tokens is not None and ctx is not None and tokens + self.num_predict > ctx:
                    raise UsageError(
                        f"--prompt-tokens {text} and --num-predict {self.num_predict} do not fit --ctx {ctx}",
                        hint="give a share of the context instead (--prompt-tokens 50%), or a shorter prompt",
                    )

    def configurations(self) -> list[tuple[int | None, int | None, str | None, str | None, str | None]]:
        """(ctx, prompt tokens, flash attention, KV type, prompt spec) of every configuration, small contexts first."""
        return [
            (ctx, prompt_length(text, ctx, self.num_predict), fa, kv, text)
            for ctx in self.contexts
            for text in self.prompt_tokens
            for fa in self.flash_attn
            for kv in self.kv_types
        ]

    def cells(self) -> list[Cell]:
        """A sweep that measures (repeats, or a context axis): runs alternate between endpoints (A B, then B A:
        ABBA), configuration by configuration, so a machine that drifts (heat, another job) does not favour one
        backend; each configuration's warm-up runs come first. A one-shot pass/fail sweep keeps endpoint-major order
        (a dead server's remaining cells fail fast, one after another)."""
        if self.repeats == 1 and self.warmup == 0 and self.configurations() == [(None, None, None, None, None)]:
            return [
                Cell(endpoint, model, num_gpu, 0)
                for endpoint in self.endpoints
                for model in (getattr(endpoint, "models", None) or self.models)
                for num_gpu in self.num_gpus
            ]
        out: list[Cell] = []
        models = ordered_unique(m for e in self.endpoints for m in (getattr(e, "models", None) or self.models))
        for model in models:
            serving = [e for e in self.endpoints if model in (getattr(e, "models", None) or self.models)]
            for num_gpu in self.num_gpus:
                for ctx, tokens, fa, kv, spec in self.configurations():
                    rounds = [(i, True) for i in range(self.warmup)] + [(i, False) for i in range(self.repeats)]
                    for turn, (index, warm) in enumerate(rounds):
                        for endpoint in serving if turn % 4 in (0, 3) else serving[::-1]:
                            out.append(Cell(endpoint, model, num_gpu, index, ctx, tokens, fa, kv, warm, spec))
        return out

    def options(self, num_gpu: int, ctx: int | None = None) -> dict[str, Any]:
        options = {"num_gpu": num_gpu, "num_predict": self.num_predict, "seed": self.seed, "temperature": 0}
        if ctx is not None:
            options["num_ctx"] = ctx
        return options

    def prompt_for(self, cell: Cell) -> str:
        """The prompt of a cell: the plan's, or filler words of about ``cell.prompt_tokens`` tokens (the server's
        own ``prompt_eval_count`` says how many it really was; llama-server cells send exact token ids instead)."""
        return self.prompt if cell.prompt_tokens is None else filler(cell.prompt_tokens)


FILLER = (
    "the quick brown fox jumps over the lazy dog while a small cat sleeps on a warm mat near the door and "
    "the rain falls on the old red roof of the house by the river "
).split()


def filler(tokens: int) -> str:
    """About ``tokens`` tokens of plain English (common words are one token each in the usual vocabularies)."""
    return " ".join(FILLER[i % len(FILLER)] for i in range(max(0, tokens)))


def prompt_length(text: str | None, ctx: int | None, num_predict: int) -> int | None:
    """``--prompt-tokens`` for one context: ``512``, or ``50%`` of the context (less the tokens to generate)."""
    if text is None:
        return None
    if text.endswith("%"):
        if ctx is None:
            raise UsageError(f"--prompt-tokens {text}: a share of the context needs --ctx")
        return max(1, int(ctx * float(text[:-1]) / 100) - num_predict)
    return int(text)


def parse_contexts(values: Sequence[str]) -> tuple[int | None, ...]:
    """``--ctx 2048,8192,32K``: context sizes in tokens (``K`` = 1024), smallest first."""
    out: set[int] = set()
    for part in (p.strip() for value in values for p in value.split(",")):
        if not part:
            continue
        scale = 1024 if part[-1] in "kK" else 1
        try:
            number = int(part[:-1] if scale > 1 else part) * scale
        except ValueError:
            raise UsageError(f"--ctx {part!r}: not a number of tokens (2048, 32K)") from None
        if not 16 <= number <= 1 << 24:
            raise UsageError(f"--ctx {part!r}: a context is 16 to 16M tokens")
        out.add(number)
    return tuple(sorted(out)) or (None,)


def parse_prompt_tokens(values: Sequence[str]) -> tuple[str | None, ...]:
    """``--prompt-tokens 128,50%``: prompt lengths in tokens, or shares of each context."""
    out: list[str] = []
    for part in (p.strip() for value in values for p in value.split(",")):
        if not part:
            continue
        number = part[:-1] if part.endswith("%") else part
        try:
            ok = 0 < float(number) <= 100 if part.endswith("%") else int(number) >= 1
        except ValueError:
            ok = False
        if not ok:
            raise UsageError(f"--prompt-tokens {part!r}: a number of tokens (≥ 1) or a share of the context (50%)")
        if part not in out:
            out.append(part)
    return tuple(out) or (None,)


def parse_choices(values: Sequence[str], option: str, allowed: Sequence[str]) -> tuple[str | None, ...]:
    """``--flash-attn on,off`` / ``--kv-type f16,q8_0``: each part one of ``allowed``."""
    out: list[str] = []
    for part in (p.strip().lower() for value in values for p in value.split(",")):
        if not part:
            continue
        if part not in allowed:
            raise UsageError(f"{option} {part!r}: one of {', '.join(allowed)}")
        if part not in out:
            out.append(part)
    return tuple(out) or (None,)


def ordered_unique(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


class Progress(Protocol):
    def begin(self, total: int, skipped: int) -> None: ...

    def run_started(self, cell: Cell) -> None: ...

    def run_finished(self, cell: Cell, run: RunRecord) -> None: ...

    def end(self) -> None: ...


class NoProgress:
    def begin(self, total: int, skipped: int) -> None:
        pass

    def run_started(self, cell: Cell) -> None:
        pass

    def run_finished(self, cell: Cell, run: RunRecord) -> None:
        pass

    def end(self) -> None:
        pass


@dataclass
class SweepSummary:
    planned: int = 0
    skipped: int = 0
    recorded: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)


def _is_loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


def _client(url: str, timeout: float):
    import httpx
    import ollama

    # httpx's timeout is per read: a server dripping a byte a second never trips it. The transport adds a
    # wall-clock deadline per request (status line, headers and body), in stream and non-stream mode alike.
    transport = DeadlineTransport(timeout)

    class DeadlineClient(ollama.Client):
        """ollama's Client keeping its transport: _answer_problem reads the head of a 200 answer's body from it."""

        gfxgate_transport: Any  # deadline.DeadlineTransport(): its class is made on first use

    # A proxy from HTTP(S)_PROXY must not sit between us and a server on this machine.
    client = DeadlineClient(
        host=url,
        timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S)),
        trust_env=not _is_loopback(url),
        transport=transport,
    )
    client.gfxgate_transport = transport
    return client


def _answer_problem(final: Any, client: Any) -> str | None:
    """A non-stream answer is ok only as a JSON object with done=true and no error (a 200 ``{"error": …}``
    is a failure, not a run); returns what is wrong, or None."""
    if isinstance(final, Mapping) or hasattr(final, "get"):
        if final.get("done") is True:
            return None
    head = bytes(getattr(getattr(client, "gfxgate_transport", None), "body_head", b""))
    try:
        body = json.loads(head.decode("utf-8", "replace"))
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("error"):
        return f"200 answer with an error: {' '.join(str(body['error']).split())[:300]}"
    return "answer is not a finished generation (no done=true)"


def server_version(url: str, timeout: float = INFO_TIMEOUT_S) -> str:
    """``GET /api/version`` (the Python client has no call for it); raises httpx errors."""
    import httpx

    with httpx.Client(
        timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT_S)),
        trust_env=not _is_loopback(url),
        transport=DeadlineTransport(timeout),
    ) as client:
        response = client.get(f"{url}/api/version")
    response.raise_for_status()
    body = response.json()
    if not isinstance(body, dict):
        raise ValueError(f"/api/version answered a JSON {type(body).__name__}, not an object")
    return str(body.get("version", ""))


def preflight(endpoints: Sequence[Endpoint], timeout: float = INFO_TIMEOUT_S) -> dict[str, str]:
    """Every endpoint answers /api/version, or a NetworkError names the ones that do not."""
    import httpx

    versions: dict[str, str] = {}
    dead: list[str] = []
    for endpoint in endpoints:
        try:
            versions[endpoint.name] = server_version(endpoint.url, min(timeout, INFO_TIMEOUT_S))
        except (httpx.HTTPError, ValueError) as exc:
            dead.append(f"{endpoint.name}={endpoint.url} ({_describe_transport(exc)})")
    if dead:
        raise NetworkError(
            "Ollama endpoint(s) not reachable: " + "; ".join(dead),
            hint="start the server(s) or fix --endpoint; nothing was run, the worklog is unchanged",
        )
    return versions


def _describe_transport(exc: BaseException) -> str:
    import httpx

    if isinstance(exc, httpx.TimeoutException):
        return f"timed out ({type(exc).__name__})"
    if isinstance(exc, (ConnectionError, httpx.ConnectError)):
        return "connection refused or host unreachable"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"server closed the connection: {exc}"
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return f"{type(exc).__name__}: {exc}"


@contextlib.contextmanager
def _ctrl_c_stops_between_runs():
    """SIGINT raises KeyboardInterrupt as usual, and is also remembered: Python raises it wherever the main
    thread is, including inside a finalizer or a library's ``except BaseException`` that can swallow it, and the
    sweep must still stop (exit 130) before its next run instead of finishing the plan. SIGTERM and SIGHUP (a
    service manager stopping the sweep, a closed terminal) are handled the same way and raise
    :class:`~gfxgate.errors.Terminated` (exit 143 / 129): the cell's server is stopped, the worklog kept. Outside
    the main thread nothing changes; a signal that is not at its default (SIGINT: Python's handler) is left
    alone, so ``nohup`` and background jobs keep ignoring what they ignore."""
    interrupted = Interrupted()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def on_signal(signum, frame):
        interrupted.signum = signum
        interrupted.set()
        interrupted.raise_()

    defaults = {
        signal.SIGINT: signal.default_int_handler,
        signal.SIGTERM: signal.SIG_DFL,
        signal.SIGHUP: signal.SIG_DFL,
    }
    installed = {}
    for signum, default in defaults.items():
        if signal.getsignal(signum) is default:
            installed[signum] = signal.signal(signum, on_signal)
    try:
        yield interrupted
    finally:
        for signum, previous in installed.items():
            signal.signal(signum, previous)


class Interrupted(threading.Event):
    """Set by a SIGINT / SIGTERM / SIGHUP during the sweep; :meth:`raise_` raises what that signal means."""

    signum: int = signal.SIGINT

    def raise_(self) -> None:
        if self.signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(self.signum)


class SweepRunner:
    """Runs the cells of a plan that the worklog does not have yet."""

    def __init__(
        self,
        plan: SweepPlan,
        writer: WorklogWriter,
        progress: Progress | None = None,
        *,
        client_factory: Callable[[str, float], Any] = _client,
    ) -> None:
        self.plan = plan
        self.writer = writer
        self.progress = progress or NoProgress()
        self.client_factory = client_factory
        self.host = socket.gethostname()
        self._info: dict[str, dict[str, Any]] = {}
        self._environment: list[dict[str, Any]] | None = None

    def run(self, finished: set[str] | frozenset[str] = frozenset()) -> SweepSummary:
        cells = self.plan.cells()
        todo = [c for c in cells if c.key not in finished]
        summary = SweepSummary(planned=len(cells), skipped=len(cells) - len(todo))
        self.progress.begin(len(todo), summary.skipped)
        try:
            with _ctrl_c_stops_between_runs() as interrupted:
                for cell in todo:
                    if interrupted.is_set():  # a Ctrl-C whose KeyboardInterrupt something swallowed
                        interrupted.raise_()
                    self._run_one(cell, summary)
        finally:
            self.progress.end()
        return summary

    def _run_one(self, cell: Cell, summary: SweepSummary) -> None:
        self.progress.run_started(cell)
        run = RunRecord(self.run_cell(cell))  # the one run type, written and then shown as the reader reads it
        self.writer.append(run)
        summary.recorded += 1
        summary.outcomes[run.outcome] = summary.outcomes.get(run.outcome, 0) + 1
        self.progress.run_finished(cell, run)

    # -- one run ------------------------------------------------------------------------------------
    def run_cell(self, cell: Cell) -> dict[str, Any]:
        if isinstance(cell.endpoint, RunsOwnCells):  # a server gfxgate starts per cell (gfxgate/sweep/llamaserver.py)
            return cell.endpoint.run_cell(self, cell)
        import httpx  # here, after llama-server's cells: they need neither (ollama and its pydantic, ~0.2 s)
        import ollama

        plan = self.plan
        info = self._endpoint_info(cell.endpoint, cell.model)
        log_path = plan.server_logs.get(cell.endpoint.name)
        tail = LogTail.at_end(log_path) if log_path else None
        client = self.client_factory(cell.endpoint.url, plan.timeout)
        prompt = plan.prompt_for(cell)
        started = utcnow()
        t0 = time.monotonic()
        first_token_s: float | None = None
        status: int | None = 200  # the HTTP status; None where no answer came
        outcome, error, final, text = "ok", "", None, ""
        try:
            if plan.stream:
                parts: list[str] = []
                for chunk in client.generate(
                    model=cell.model,
                    prompt=prompt,
                    options=plan.options(cell.num_gpu, cell.ctx),
                    keep_alive=plan.keep_alive,
                    stream=True,
                ):
                    if first_token_s is None and chunk.get("response"):
                        first_token_s = round(time.monotonic() - t0, 3)
                    parts.append(chunk.get("response") or "")
                    if chunk.get("done"):
                        final = chunk
                    elif time.monotonic() - t0 > plan.timeout:  # a slow drip must not outlive the timeout
                        raise httpx.ReadTimeout(f"stream still running after {plan.timeout:g} s")
                text = "".join(parts)
                if final is None:
                    outcome, status, error = "connection-error", None, "stream ended without a final done=true message"
            else:
                final = client.generate(
                    model=cell.model,
                    prompt=prompt,
                    options=plan.options(cell.num_gpu, cell.ctx),
                    keep_alive=plan.keep_alive,
                    stream=False,
                )
                text = final.get("response") or ""
                problem = _answer_problem(final, client)
                if problem:
                    outcome, status, error = "http-error", 200, problem
        except ollama.ResponseError as exc:
            status = exc.status_code if exc.status_code and exc.status_code > 0 else None
            error = str(exc.error)
            outcome = "http-error"
        except httpx.TimeoutException as exc:
            outcome, status, error = "timeout", None, f"no answer within {plan.timeout:g} s ({type(exc).__name__})"
        except (ConnectionError, httpx.TransportError) as exc:
            outcome, status, error = "connection-error", None, _describe_transport(exc)
        except (ValueError, TypeError, AttributeError) as exc:
            # JSONDecodeError, pydantic ValidationError, a JSON list or string where the client expects an
            # object (TypeError/AttributeError inside the ollama client): not an Ollama answer
            outcome, status, error = "http-error", None, f"malformed response: {' '.join(str(exc).split())[:200]}"
        finally:
            wall = time.monotonic() - t0
            ended = utcnow()
        _close(client)
        aux = self.client_factory(cell.endpoint.url, min(plan.timeout, INFO_TIMEOUT_S))
        ps_after = self._ps(aux)
        memory = self.device_memory()  # the model is still loaded (keep_alive): what the device holds now
        collected: list[Collected] = []
        if tail is not None:
            collected.append(tail.read_new())
        unit = plan.journal_units.get(cell.endpoint.name)
        if unit:
            collected.append(journal_window(unit, started, ended))
        chosen = _crash_source(collected)
        lines = list(chosen.lines) if chosen else []
        line_source = chosen.where if chosen else None
        signature = crashmod.parse_crash(lines, error)
        if outcome == "http-error" and (signature.found or crashmod.TERMINATED_RE.search(error)):
            outcome = "crash"
        phase = crashmod.classify_phase(outcome, lines, signature, error, (chosen.first_line_no or 1) if chosen else 1)
        unload_note = self._unload(aux, cell) if plan.unload else "unload disabled (--no-unload)"
        _close(aux)

        record: dict[str, Any] = {
            **record_fields(cell, plan, host=self.host, started=started, ended=ended, wall=wall, prompt=prompt),
            "run_id": run_id(cell),
            "endpoint": {"name": cell.endpoint.name, "url": cell.endpoint.url, "kind": cell.endpoint.kind},
            "server_version": info.get("version"),
            "model_digest": info.get("digest"),
            "model_details": info.get("details"),
            "options": plan.options(cell.num_gpu, cell.ctx),
            "keep_alive": plan.keep_alive,
            "stream": plan.stream,
            "first_token_s": first_token_s,
            "outcome": outcome,
            "http_status": status,
            "error": error or None,
            "response_preview": text[:200] if text else None,
            "done_reason": final.get("done_reason") if final is not None else None,
            "eval_count": final.get("eval_count") if final is not None else None,
            "prompt_eval_count": final.get("prompt_eval_count") if final is not None else None,
            "durations_ns": {
                key: (final.get(f"{key}_duration") if final is not None else None)
                for key in ("total", "load", "prompt_eval", "eval")
            },
            "tokens_per_s": _tokens_per_s(final),
            "prefill_tokens_per_s": _tokens_per_s(final, "prompt_eval"),
            "device_memory": memory,
            "ps_after": ps_after,
            "evidence": [c.to_json() for c in collected],
            "crash_log_source": line_source,
            "crash": signature.to_json() if signature.found else None,
            "phase": phase.to_json(),
            "log_tail": list(lines[-FAILED_LOG_TAIL:]) if outcome != "ok" and not signature.excerpt else [],
            "environment": self._environment_probes(),
            "notes": [n for n in (info.get("note"), unload_note) if n],
        }
        return record

    # -- helpers with their own timeouts ---------------------------------------------------------------
    def _endpoint_info(self, endpoint: SweepEndpoint, model: str) -> dict[str, Any]:
        key = f"{endpoint.name}|{model}"
        cached = self._info.get(key)
        if cached is not None:  # asked once per sweep: a dead or stuck server must not cost extra timeouts
            return cached
        import httpx

        info: dict[str, Any] = {"version": None, "digest": None, "details": None}
        notes: list[str] = []
        timeout = min(self.plan.timeout, INFO_TIMEOUT_S)
        try:
            info["version"] = server_version(endpoint.url, timeout)
        except (httpx.HTTPError, ValueError) as exc:
            notes.append(f"/api/version failed: {_describe_transport(exc)}")
        client = self.client_factory(endpoint.url, timeout)
        try:
            for entry in client.list().models:
                if entry.model in (model, f"{model}:latest"):
                    info["digest"] = entry.digest
            shown = client.show(model)
            details = shown.details
            if details is not None:
                info["details"] = {
                    k: v
                    for k, v in details.model_dump().items()
                    if k in ("family", "parameter_size", "quantization_level", "format")
                }
        except Exception as exc:  # noqa: BLE001 - model info is optional evidence; the run records the failure
            notes.append(f"model info ({model}) unavailable: {_describe_transport(exc)}")
        finally:
            _close(client)
        info["note"] = "; ".join(notes) or None
        self._info[key] = info
        return info

    def _ps(self, client: Any) -> dict[str, Any]:
        try:
            models = client.ps().models
        except Exception as exc:  # noqa: BLE001 - /api/ps is evidence, its failure is a note
            return {"ok": False, "note": f"/api/ps failed: {_describe_transport(exc)}", "models": []}
        return {
            "ok": True,
            "note": "",
            "models": [
                {
                    "model": m.model or m.name,
                    "digest": m.digest,
                    "size": int(m.size) if m.size is not None else None,
                    "size_vram": int(m.size_vram) if m.size_vram is not None else None,
                    "context_length": m.context_length,
                }
                for m in models
            ],
        }

    def _unload(self, client: Any, cell: Cell) -> str:
        """Ask the server to unload the model so the next cell loads it again with its own num_gpu."""
        try:
            client.generate(model=cell.model, prompt="", keep_alive=0)
        except Exception as exc:  # noqa: BLE001 - recorded as a note; the next cell reloads anyway
            return f"unload request failed: {_describe_transport(exc)}"
        return ""

    def device_memory(self) -> dict[str, Any] | None:
        """What nvidia-smi, rocm-smi and amdgpu's sysfs say the GPUs hold now (host.devmem); None with --no-probe-gpu."""
        if not self.plan.probe_gpu:
            return None

        return device_memory()

    def _environment_probes(self) -> list[dict[str, Any]]:
        if self._environment is None:
            probes = gpu_probes(self.plan.gpu_target) if self.plan.probe_gpu else []
            self._environment = [{**p.to_json(), "excerpt": list(p.lines[:40])} for p in probes] or [
                {"source": "gpu-probes", "ok": False, "note": "GPU probes disabled (--no-probe-gpu)"}
            ]
        return self._environment


def run_id(cell: Cell) -> str:
    """``vulkan-g-1-c8192-r0-1a2b3c4d``: endpoint, num_gpu, context (where set), repeat (``w``: a warm-up run)."""
    ctx = f"-c{cell.ctx}" if cell.ctx is not None else ""
    return (
        f"{cell.endpoint.name}-g{cell.num_gpu}{ctx}-{'w' if cell.warmup else 'r'}{cell.repeat}-{uuid.uuid4().hex[:8]}"
    )


def _crash_source(collected: Sequence[Collected]) -> Collected | None:
    """The log to search for a crash: the first source that shows one, else the first with lines."""
    with_lines = [c for c in collected if c.lines]
    for c in with_lines:
        if crashmod.parse_crash(c.lines).first_line is not None:
            return c
    return with_lines[0] if with_lines else None


def _tokens_per_s(final: Any, stage: str = "eval") -> float | None:
    """Tokens per second of Ollama's decode (``eval``) or prefill (``prompt_eval``) stage."""
    if final is None:
        return None
    count, duration = final.get(f"{stage}_count"), final.get(f"{stage}_duration")
    if not count or not duration:
        return None
    return round(count / (duration / 1e9), 2)


def _check_log_file(name: str, path: Path) -> None:
    """A --server-log must be a regular file (a folder crashed mid-sweep, a FIFO hung it); checked up front."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return  # the server creates it when it starts; LogTail reads nothing until then
    except OSError as exc:
        raise InputError(f"--server-log {name}={path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):
        raise InputError(f"--server-log {name}={path}: is {file_kind(mode)}; name the log file the server writes")


def _close(client: Any) -> None:
    close = getattr(client, "close", None)
    if close is not None:
        close()


def read_prompt(value: str | None) -> str:
    """``--prompt TEXT`` or ``--prompt @FILE``."""
    if value is None:
        return DEFAULT_PROMPT
    if value.startswith("@"):
        path = Path(value[1:])
        try:  # a regular file only (a FIFO would block, /dev/zero never ends), at most MAX_PROMPT_BYTES
            return read_input(path, f"--prompt {value!r}: ", limit=MAX_PROMPT_BYTES).decode("utf-8")
        except OSError as exc:
            raise InputError(f"--prompt {value!r}: cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise InputError(
                f"--prompt {value!r}: {path} is not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
            ) from None
    return value
