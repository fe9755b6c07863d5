"""Sweep endpoints that are llama.cpp's own ``llama-server``, started by gfxgate once per cell.

``--llama-server NAME=COMMAND`` names the argv prefix that starts a llama-server with one backend set (a
wrapper, an ``env VAR=…`` prefix, ``--device Vulkan0`` …; shell-split, never run through a shell). For every
cell the driver

1. starts ``COMMAND -m MODEL --host 127.0.0.1 --port FREE -np 1 -c 4096`` plus the offload
   flag mapped as Ollama ≥ v0.30 maps num_gpu when it starts its own llama-server (ollama v0.32.15
   ``llm/llama_server.go:404-410``: N > 0 → ``-ngl N``, 0 → ``-ngl 0``, -1 → no flag, llama-server decides);
   ``--log-verbosity 4`` (what Ollama passes, ``appendLlamaServerLogArgs``) goes right after the llama-server
   executable, before the command's own flags: llama.cpp loads its backends while it parses ``--device``, so a
   verbosity given after that flag comes too late for the ``load_backend``/``ggml_cuda_init``/``Device 0:`` lines;
   stdout and stderr go through one pipe to one log file per run, kept next to the worklog and bounded
   (host.proc.LogPump: the first and the last lines, each cut to MAX_LINE_BYTES);
2. waits for ``GET /health`` to answer 200 (503 while the model loads), watching the process;
3. sends one ``POST /completion`` (n_predict, seed, temperature 0) and records llama.cpp's token counts and
   timings;
4. stops the server (SIGTERM to its process group, SIGKILL after a grace period; the group is killed in the
   end even when the server had exited, so no helper it forked outlives the cell) and reads the log.

The record has the same schema as an Ollama run (``endpoint.kind`` is ``llama-server``), plus
``offload`` (backends loaded, the devices that hold the model, layers offloaded N of M, the per-device placement of
model/KV/compute buffers, read from the log), ``devices_listed`` (``COMMAND --list-devices``, once per endpoint),
``vram_sampled`` (the server process's GPU memory in a sampler's log, ``--gpu-memory-log``) and ``overhead`` (spawn, health
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
import time
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from gfxgate.errors import TargetError, UsageError
from gfxgate.host import proc as hostproc
from gfxgate.logs import crash as crashmod
from gfxgate.records import dataclass
from gfxgate.sweep.deadline import DEADLINE, DeadlineTransport
from gfxgate.sweep.evidence import Collected, LogTail, utcnow
from gfxgate.sweep.worklog import record_fields
from gfxgate.sweep.runner import filler, parse_named, run_id as make_run_id
from gfxgate.targets import catalog

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
VERSION_MAX_BYTES = 65536  # of the --version answer; the command is killed past them
# The per-run log file (WORKLOG.logs/RUN.log): the server's first lines (its load: backends, device, offload),
# then its last ones (a crash), each line cut to MAX_LINE_BYTES; a line in between says what was left out.
MAX_LINE_BYTES = 4096
LOG_HEAD_LINES, LOG_HEAD_BYTES = 8000, 2 << 20
LOG_TAIL_LINES, LOG_TAIL_BYTES = 8000, 2 << 20
PUMP_JOIN_S = 5.0  # after the server's group is killed, how long the copy of its output may take to finish

# What llama.cpp prints (llama-server at --log-verbosity ≥ 3; with or without the "0.00.043.263 I " prefix).
# llama.cpp's logger writes from its own thread while plain fprintf(stderr) warnings come from the main thread, so
# a warning can land between the timestamp and the level letter: "0.00.010.884 warning: no usable GPU found, …"
# then "I load_backend: loaded CPU backend from …" (seen on a real run). Either half of the prefix may be missing.
_PREFIX = r"^(?:\d+\.\d+\.\d+\.\d+ )?(?:[A-Z] )?"
BACKEND_RE = re.compile(_PREFIX + r"load_backend: loaded (?P<name>.+?) backend from (?P<path>\S+)")
DEVICE_RE = re.compile(_PREFIX + r"\S*: using device (?P<dev>\S+) \((?P<desc>.*?)\)(?: \(|\s+-|$)")
OFFLOADED_RE = re.compile(_PREFIX + r"load_tensors: offloaded (?P<n>\d+)/(?P<m>\d+) layers to GPU")
NO_GPU_RE = re.compile(r"no usable GPU found")
# "load_tensors:        CUDA0 model buffer size =   816.11 MiB", "llama_kv_cache:  Vulkan0 KV buffer size = …",
# "llama_context:  CUDA_Host  output buffer size = …", "llama_context:        CUDA0 compute buffer size = …"
BUFFER_RE = re.compile(
    _PREFIX
    + r"\w+:\s+(?P<buf>\S+)\s+(?P<kind>model|KV|compute|output) buffer size =\s*(?P<mib>[0-9]+(?:\.[0-9]+)?) MiB"
)
# debug level (-lv 5): "load_tensors: layer  12 assigned to device CUDA0, is_swa = 0"
ASSIGNED_RE = re.compile(_PREFIX + r"load_tensors: layer\s+(?P<layer>\d+) assigned to device (?P<dev>[^,\s]+)")
# `llama-server --list-devices`: "  CUDA0: NVIDIA H200 (143155 MiB, 142583 MiB free)"
LISTED_RE = re.compile(
    r"^\s+(?P<dev>[A-Za-z][\w-]*\d+): (?P<desc>.*?) \((?P<total>\d+) MiB, (?P<free>\d+) MiB free\)\s*$"
)
# nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader: "12345, /…/llama-server, 1234 MiB"
GPU_APP_RE = re.compile(r"^\s*(?P<pid>\d+),\s*(?P<name>[^,]*),\s*(?P<mib>\d+) MiB\s*$")
VERBOSITY_FLAGS = ("-lv", "--verbosity", "--log-verbosity")
# ggml_cuda_init (ggml-cuda.cu): "  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143155 MiB";
# built with HIP: "  Device 0: AMD Radeon RX Vega, gfx900:xnack- (0x900), VMM: no, Wave Size: 64, VRAM: 8176 MiB"
CUDA_DEVICE_RE = re.compile(
    _PREFIX
    + r"\s*Device (?P<index>\d+): (?P<name>[^,]+), (?:compute capability (?P<cc>\d+\.\d+)|(?P<gfx>gfx[0-9a-f]+(?::[a-z]+[+-])*) \(0x[0-9a-f]+\))"
)
LOADING_RE = re.compile(r"load_model: loading model|llama_model_loader: loaded meta data|load_tensors:")
LOADED_RE = re.compile(r"llama_server: model loaded|main: model loaded|server is listening|llama_server: listening on")
TASK_RE = re.compile(r"launch_slot_|processing task|new prompt, n_ctx_slot")
ERROR_LINE_RE = re.compile(r"^\d+\.\d+\.\d+\.\d+ E |\berror\b", re.IGNORECASE)
LOGGED_ERROR_RE = re.compile(r"^\d+\.\d+\.\d+\.\d+ E ")  # llama.cpp's own error level
# the device (or, on the CPU, the process) had no room: the run does not fit at this context
OOM_RE = re.compile(
    r"failed to allocate|insufficient memory|out of memory|ErrorOutOfDeviceMemory|OutOfDeviceMemory|cudaMalloc failed|hipMalloc failed",
    re.IGNORECASE,
)
LOAD_ERROR_RE = re.compile(
    r"error loading model|failed to load model|failed to open GGUF|gguf_init_from_file|exiting due to model loading error|couldn't bind",
    re.IGNORECASE,
)


def is_host_buffer(name: str) -> bool:
    """A buffer in system memory: ``CPU``, ``CPU_Mapped``, ``CPU_REPACK``, ``CUDA_Host``, ``Vulkan_Host`` …"""
    return name.startswith("CPU") or name.endswith("_Host")


def server_argv(
    command: Sequence[str],
    model: Path,
    port: int,
    num_gpu: int,
    *,
    ctx: int | None = None,
    flash_attn: str | None = None,
    kv_type: str | None = None,
) -> tuple[list[str], str]:
    """The argv of one cell's server, and a note when gfxgate's verbosity could not go first.

    ``--log-verbosity`` goes right after the llama-server executable (the first argv element whose file name starts
    with ``llama-server``; a wrapper or ``env …`` prefix stays in front of it), before the command's own flags: a
    ``--device`` there loads the backends while it is parsed. A command that sets a verbosity itself keeps its own.
    """
    argv = list(command)
    note = ""
    if not any(a in VERBOSITY_FLAGS for a in argv[1:]):
        exe = next((i for i, a in enumerate(argv) if os.path.basename(a).startswith("llama-server")), None)
        if exe is None:
            note = (
                f"no llama-server executable in the endpoint command ({argv[0]!r} …): --log-verbosity "
                f"{LOG_VERBOSITY} follows its own flags, so a --device there hides the backend load lines"
            )
            argv += ["--log-verbosity", LOG_VERBOSITY]
        else:
            argv[exe + 1 : exe + 1] = ["--log-verbosity", LOG_VERBOSITY]
    argv += [
        "-m",
        str(model),
        "--host",
        HOST,
        "--port",
        str(port),
        "-np",
        "1",
        "-c",
        str(ctx or CTX_SIZE),
        *ngl_args(num_gpu),
    ]
    if flash_attn is not None:
        argv += ["-fa", flash_attn]
    if kv_type is not None:
        argv += ["-ctk", kv_type, "-ctv", kv_type]
    return argv, note


def parse_listed_devices(text: str) -> list[dict[str, Any]]:
    """``llama-server --list-devices``: [{"device": "CUDA0", "description": "NVIDIA H200", "total_mib", "free_mib"}]."""
    out = []
    for line in text.splitlines():
        match = LISTED_RE.match(line)
        if match:
            out.append(
                {
                    "device": match["dev"],
                    "description": match["desc"],
                    "total_mib": int(match["total"]),
                    "free_mib": int(match["free"]),
                }
            )
    return out


def sampled_vram(lines: Sequence[str], pid: int | None) -> dict[str, Any]:
    """The largest GPU memory nvidia-smi saw the server process ``pid`` hold, from a sampler's CSV lines."""
    seen = [int(m["mib"]) for m in map(GPU_APP_RE.match, lines) if m and pid is not None and int(m["pid"]) == pid]
    return {"samples": len(seen), "max_mib": max(seen) if seen else None}


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
    shell = Path(exe).name in ("sh", "bash", "dash", "zsh", "ksh")  # `sh -c '…'`: the shell's -c, not llama-server's
    for flag in ("-c", "--ctx-size"):  # gfxgate's own -c (4096, or --ctx) follows the command's and would win
        if flag in argv[1:] and not (shell and flag == "-c"):
            raise UsageError(f"--llama-server {text!r}: leave {flag} out; give the context with --ctx N")
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
    oom_line: int | None = None  # the first "failed to allocate" / "out of memory" line
    oom_text: str = ""
    error_line: int | None = None  # the first line llama.cpp logged at its error level
    error_text: str = ""
    buffers: dict[tuple[str, str], float] = field(default_factory=dict)  # (buffer, model|KV|compute|output) -> MiB
    assigned: dict[int, str] = field(default_factory=dict)  # layer -> device, from debug-level lines
    gpus: list[dict[str, Any]] = field(default_factory=list)  # ggml_cuda_init's "Device N:" lines (CUDA or HIP)

    @property
    def on_gpu(self) -> list[str]:
        """The devices that hold model weights (non-host model buffers), in the log's order."""
        return ordered_unique(buf for (buf, kind) in self.buffers if kind == "model" and not is_host_buffer(buf))

    @property
    def all_host(self) -> bool:
        """Model buffers were printed and every one is in system memory (``--device none``, a CPU-only set)."""
        return any(kind == "model" for _, kind in self.buffers) and not self.on_gpu

    def placement(self, n_of: tuple[int, int] | None) -> list[dict[str, Any]]:
        """Per buffer (device or host buffer type): model/KV/compute MiB and the layers it holds, where the log shows them.

        Layers per device come from the debug-level ``layer N assigned to device D`` lines when present; otherwise,
        with one GPU device, it holds the N of ``offloaded N/M`` and the host the rest; with several, they are unknown
        (verbosity 4 prints the buffer sizes, not the split).
        """
        names = ordered_unique(buf for buf, _ in self.buffers)
        counts: dict[str, int] = {}
        for device in self.assigned.values():
            counts[device] = counts.get(device, 0) + 1
        gpus = self.on_gpu
        out = []
        for name in names:
            host = is_host_buffer(name)
            if self.assigned:
                held = (
                    counts.get(name, 0)
                    if not host
                    else (counts.get("CPU", 0) if name == _host_model_buffer(self) else None)
                )
            elif n_of is not None and len(gpus) == 1 and not self.all_host:
                held = n_of[0] if name == gpus[0] else (n_of[1] - n_of[0] if name == _host_model_buffer(self) else None)
            elif n_of is not None and self.all_host:
                held = n_of[1] if name == _host_model_buffer(self) else None
            else:
                held = None
            row: dict[str, Any] = {"buffer": name, "host": host}
            for kind in ("model", "KV", "compute", "output"):
                if (name, kind) in self.buffers:
                    row[f"{kind.lower()}_mib"] = self.buffers[(name, kind)]
            row["layers"] = held
            out.append(row)
        return out

    def to_json(self, first_line_no: int = 1) -> dict[str, Any]:
        def no(index: int | None) -> int | None:
            return None if index is None else index + first_line_no

        n, m = self.offloaded if self.offloaded else (None, None)
        out: dict[str, Any] = {
            "source": "llama-server log",
            "backends": list(self.backends),
            "devices": list(self.devices),
            "layers": n,
            "of": m,
            "line": no(self.offloaded_line),
            "no_usable_gpu": self.no_gpu,
            "model_loaded_line": no(self.loaded_line),
        }
        if self.gpus:
            out["gpus"] = list(self.gpus)
        if self.oom_line is not None:
            out["out_of_memory"] = {"line": no(self.oom_line), "text": self.oom_text}
        if self.error_line is not None:
            out["first_error"] = {"line": no(self.error_line), "text": self.error_text}
        if self.buffers:
            out["on_gpu"] = self.on_gpu  # the device(s) this run used: they hold the model's weights
            out["placement"] = self.placement(self.offloaded)
            out["vram_mib"] = round(sum(mib for (buf, _), mib in self.buffers.items() if not is_host_buffer(buf)), 2)
            out["buffers_mib"] = {
                kind: round(sum(mib for (_, k), mib in self.buffers.items() if k == kind), 2)
                for kind in ("model", "KV", "compute", "output")
                if any(k == kind for _, k in self.buffers)
            }
            if self.all_host and n:
                # llama.cpp prints "offloaded N/M" from -ngl even when no GPU device takes a layer (--device none)
                out["layers"], out["log_layers"] = 0, n
                out["no_gpu_reason"] = (
                    "every model buffer is in system memory ("
                    + ", ".join(buf for buf, kind in self.buffers if kind == "model")
                    + ")"
                )
        return out


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
            facts.buffers.clear()  # each load prints its offload line, then its buffers
        match = BUFFER_RE.search(line)
        if match:
            facts.buffers[(match["buf"], match["kind"])] = float(match["mib"])
        match = ASSIGNED_RE.search(line)
        if match:
            facts.assigned[int(match["layer"])] = match["dev"]
        match = CUDA_DEVICE_RE.search(line)
        if match and not any(g["index"] == int(match["index"]) for g in facts.gpus):
            facts.gpus.append(_gpu_of(match, index))
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
        if facts.error_line is None and LOGGED_ERROR_RE.search(line):
            facts.error_line, facts.error_text = index, " ".join(line.split())[:200]
        if facts.oom_line is None and OOM_RE.search(line):
            facts.oom_line, facts.oom_text = index, " ".join(line.split())[:200]
    return facts


def _gpu_of(match: re.Match, index: int) -> dict[str, Any]:
    """One ``Device N:`` line: the GPU's name and its target (``sm_90`` from a compute capability, ``gfx900``)."""
    gpu: dict[str, Any] = {"index": int(match["index"]), "name": match["name"].strip(), "line": index + 1}
    if match["cc"]:
        arch = catalog().from_compute_capability(match["cc"])
        gpu.update(compute_capability=match["cc"], target=arch.name if arch else None)
    else:
        try:
            gpu["target"] = str(catalog().parse(match["gfx"]))
        except TargetError:
            gpu["target"] = None
        gpu["gfx"] = match["gfx"]
    return gpu


def _host_model_buffer(facts: LogFacts) -> str | None:
    """The host buffer that holds the CPU's layers: the first host model buffer (``CPU_Mapped``, ``CPU``)."""
    return next((buf for (buf, kind) in facts.buffers if kind == "model" and is_host_buffer(buf)), None)


def ordered_unique(items: Any) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


TRIM_RE = re.compile(
    r"ggml_cuda_init|^(?:\S+ )?(?:[A-Z] )?\s*Device \d+: |ggml_vulkan: |^(?:\S+ )?(?:[A-Z] )?build: |system_info: "
)


def trim_log(lines: Sequence[str]) -> list[str]:
    """The lines of a llama-server log that the sweep reads (backends, devices, offload, buffers, load/compute
    boundary, errors) and the build and GPU lines diagnose reads: a committed sample keeps these, not the whole log."""
    keep = (
        BACKEND_RE,
        DEVICE_RE,
        OFFLOADED_RE,
        NO_GPU_RE,
        BUFFER_RE,
        ASSIGNED_RE,
        LOADED_RE,
        LOAD_ERROR_RE,
        OOM_RE,
        TRIM_RE,
    )
    return [line for line in lines if any(pattern.search(line) for pattern in keep)]


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
    proc: hostproc.Process | None = None
    pump: hostproc.LogPump | None = None
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
    argv_note: str = ""
    prompt_text: str | None = None  # the prompt sent where it is not the plan's (--prompt-tokens)
    prompt_note: str = ""
    device_memory: dict[str, Any] | None = None  # host.devmem while the server held the model


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
        self._devices: dict[str, dict[str, Any]] = {}
        gpu_memory_log: Path | None = getattr(runner.plan, "gpu_memory_log", None)
        self._gpu_memory = LogTail.at_end(gpu_memory_log) if gpu_memory_log else None

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
            output = _version_output([*endpoint.command, "--version"], min(VERSION_TIMEOUT_S, self.runner.plan.timeout))
            match = re.search(r"version: (\S+(?: \([^)]*\))?)", output)
            self._versions[endpoint.name] = f"llama.cpp {match[1]}" if match else None
        return self._versions[endpoint.name]

    def version_source(self, endpoint: LlamaServerEndpoint) -> dict[str, Any]:
        """Where ``server_version`` came from, and what it does not say: a build without git metadata (a source
        tarball) prints ``version: 0 (unknown)``; ``-DLLAMA_BUILD_COMMIT=…`` at configure time names the commit."""
        version = self.version(endpoint)
        out: dict[str, Any] = {"command": shlex.join([*endpoint.command, "--version"])}
        if version is None:
            out["note"] = "the command printed no 'version: N (commit)' line"
        elif re.search(r"\(unknown\)|commit unknown", version):  # "0 (unknown)", "0.5.0-dev (build 0, commit unknown)"
            out["note"] = (
                "built without git metadata (a source tarball?): the commit is unknown; configure with "
                "-DLLAMA_BUILD_COMMIT=<commit> to record it"
            )
        elif re.search(r"^llama\.cpp 0 |\(build 0,", version):
            out["note"] = (
                "build number 0 (no git history): the commit names the source tree, the build number is not a b-tag"
            )
        return out

    def listed_devices(self, endpoint: LlamaServerEndpoint) -> dict[str, Any]:
        """``COMMAND --list-devices`` once per endpoint: the devices that command's backends can offload to."""
        if endpoint.name not in self._devices:
            output = _version_output(
                [*endpoint.command, "--list-devices"], min(VERSION_TIMEOUT_S, self.runner.plan.timeout)
            )
            devices = parse_listed_devices(output)
            self._devices[endpoint.name] = {
                "command": shlex.join([*endpoint.command, "--list-devices"]),
                "devices": devices,
            }
            if not devices:
                self._devices[endpoint.name]["note"] = "no device listed" if output else "the command printed nothing"
        return self._devices[endpoint.name]

    # -- one cell ---------------------------------------------------------------------------------------
    def run_cell(self, endpoint: LlamaServerEndpoint, cell: Cell) -> dict[str, Any]:
        plan = self.runner.plan
        model_path = endpoint.model_path(cell.model)

        run_id = make_run_id(cell)
        log_path = self.logs_dir() / f"{run_id}.log"
        started = utcnow()
        t0 = time.monotonic()
        ex = self._exchange(endpoint, cell, model_path, log_path)
        wall = time.monotonic() - t0
        ended = utcnow()

        lines = _read_lines(log_path)
        facts = parse_log(lines)
        collected = Collected(
            "server-log",
            str(log_path),
            tuple(lines),
            "" if lines else "llama-server wrote no log lines",
            True,
            1 if lines else None,
        )
        signature, phase = self._classify(ex, lines, facts)
        if signature.found and ex.outcome == "http-error":
            ex.outcome = "crash"
        body: dict[str, Any] = ex.body if isinstance(ex.body, dict) else {}
        timings: dict[str, Any] = body["timings"] if isinstance(body.get("timings"), dict) else {}
        text = body.get("content") if isinstance(body.get("content"), str) else ""
        eval_count = _int(timings.get("predicted_n"), body.get("tokens_predicted"))
        prompt_count = _int(timings.get("prompt_n"), body.get("tokens_evaluated"))
        options = plan.options(cell.num_gpu, cell.ctx)
        notes = [f"llama-server argv: {shlex.join(ex.argv)}"]
        if ex.prompt_note:
            notes.append(ex.prompt_note)
        if ex.argv_note:
            notes.append(ex.argv_note)
        if ex.stop_note:
            notes.append(ex.stop_note)
        if ex.pump is not None and ex.pump.error:
            notes.append(f"server log {log_path}: writing stopped: {ex.pump.error}")
        if facts.no_gpu:
            notes.append("llama-server: no usable GPU found, -ngl ignored (CPU-only backend set)")
        return {
            **record_fields(
                cell, plan, host=self.runner.host, started=started, ended=ended, wall=wall, prompt=ex.prompt_text
            ),
            "run_id": run_id,
            "endpoint": {
                "name": endpoint.name,
                "url": endpoint.url,
                "kind": KIND_NAME,
                "command": list(endpoint.command),
            },
            "server_version": self.version(endpoint),
            "server_version_source": self.version_source(endpoint),
            "devices_listed": self.listed_devices(endpoint),
            "server_pid": ex.proc.pid if ex.proc is not None else None,
            "model_file": str(model_path),
            "model_digest": self.digest(model_path),
            "model_details": None,
            "options": options,
            "server_args": ex.argv[len(endpoint.command) :],
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
                "total": _ns(
                    (ex.answered_s - ex.request_s) if ex.answered_s is not None and ex.request_s is not None else None
                ),
                "load": _ns(ex.ready_s),
                "prompt_eval": _ns_ms(timings.get("prompt_ms")),
                "eval": _ns_ms(timings.get("predicted_ms")),
            },
            "tokens_per_s": round(float(timings["predicted_per_second"]), 2)
            if isinstance(timings.get("predicted_per_second"), (int, float))
            else None,
            "prefill_tokens_per_s": round(float(timings["prompt_per_second"]), 2)
            if isinstance(timings.get("prompt_per_second"), (int, float))
            else None,
            "device_memory": ex.device_memory,
            "ps_after": {
                "ok": False,
                "note": "llama-server has no /api/ps; offload is read from its log (see offload)",
                "models": [],
            },
            "offload": facts.to_json(),
            "vram_sampled": self._sampled_vram(ex),
            "overhead": {
                "spawn_s": round(ex.spawn_s, 4),
                "health_wait_s": _round(ex.ready_s - ex.spawn_s if ex.ready_s is not None else None),
                "health_polls": ex.health_polls,
                "completion_s": _round(
                    ex.answered_s - ex.request_s if ex.answered_s is not None and ex.request_s is not None else None
                ),
                "stop_s": _round(ex.stop_s),
                "server_exit": {
                    "returncode": ex.returncode,
                    "signal": signal_name(ex.returncode),
                    "after_stop": ex.stopped_rc,
                },
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

    def _sampled_vram(self, ex: Exchange) -> dict[str, Any] | None:
        """The server's GPU memory per ``--gpu-memory-log`` (nvidia-smi's compute apps, sampled beside the sweep)."""
        if self._gpu_memory is None:
            return None
        collected = self._gpu_memory.read_new()  # the lines written during this run
        pid = ex.proc.pid if ex.proc is not None else None
        return {
            "source": "nvidia-smi",
            "where": collected.where,
            **sampled_vram(collected.lines, pid),
            **({"note": collected.note} if collected.note else {}),
        }

    def _exchange(self, endpoint: LlamaServerEndpoint, cell: Cell, model: Path, log_path: Path) -> Exchange:
        import httpx

        plan = self.runner.plan
        port = free_port()
        argv, ex_note = server_argv(
            endpoint.command, model, port, cell.num_gpu, ctx=cell.ctx, flash_attn=cell.flash_attn, kv_type=cell.kv_type
        )
        ex = Exchange(argv, port, log_path)
        ex.argv_note = ex_note
        t0 = time.monotonic()
        log = open(log_path, "wb")
        try:
            ex.proc = hostproc.spawn(argv, stdout=hostproc.PIPE, stderr=hostproc.STDOUT)
        except OSError as exc:
            ex.spawn_error = f"could not start {argv[0]}: {exc.strerror or exc}"
            log.close()
        ex.spawn_s = time.monotonic() - t0
        if ex.proc is None:
            ex.outcome, ex.error, ex.died_during = "crash", ex.spawn_error, "load"
            return ex
        ex.pump = ex.proc.pump_output(
            log,
            max_line=MAX_LINE_BYTES,
            head_lines=LOG_HEAD_LINES,
            head_bytes=LOG_HEAD_BYTES,
            tail_lines=LOG_TAIL_LINES,
            tail_bytes=LOG_TAIL_BYTES,
        )
        base = f"http://{HOST}:{port}"
        try:
            # every request ends by its wall-clock deadline: a server dripping bytes or never answering is a timeout
            transport = DeadlineTransport(plan.timeout)
            timeout = httpx.Timeout(plan.timeout, connect=min(plan.timeout, 10.0))
            with httpx.Client(trust_env=False, timeout=timeout, transport=transport) as client:
                if self._wait_ready(ex, ex.proc, client, base, t0, plan.timeout):
                    self._complete(ex, ex.proc, client, base, t0, cell)
                    if ex.returncode is None:  # the server still holds the model: what the devices hold now
                        ex.device_memory = self.runner.device_memory()
        finally:
            try:
                self._stop(ex, t0)
            finally:  # the group is dead, so the pipe ends (unless a helper left the group and holds it)
                ex.pump.join(PUMP_JOIN_S)
        return ex

    def _wait_ready(
        self, ex: Exchange, proc: hostproc.Process, client: Any, base: str, t0: float, timeout: float
    ) -> bool:
        import httpx

        deadline = t0 + timeout
        while True:
            rc = proc.poll()
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

    def _complete(self, ex: Exchange, proc: hostproc.Process, client: Any, base: str, t0: float, cell: Cell) -> None:
        import httpx

        plan = self.runner.plan
        prompt: Any = plan.prompt
        if cell.prompt_tokens is not None:
            prompt = self._prompt_ids(ex, client, base, cell.prompt_tokens)
        payload = {
            "prompt": prompt,
            "n_predict": plan.num_predict,
            "seed": plan.seed,
            "temperature": 0,
            "cache_prompt": False,
        }
        ex.request_s = time.monotonic() - t0
        try:
            response = client.post(f"{base}/completion", json=payload)
        except httpx.TimeoutException as exc:
            ex.outcome, ex.error = (
                "timeout",
                f"no complete answer within {plan.timeout:g} s ({type(exc).__name__}: {exc})",
            )
            ex.died_during = "compute"
            return
        except httpx.TransportError as exc:
            ex.error = f"/completion failed: {type(exc).__name__}: {exc}"
            rc = proc.wait(DEATH_GRACE_S)
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
        rc = proc.poll()
        if rc is not None:  # answered, then died
            ex.returncode = rc

    def _prompt_ids(self, ex: Exchange, client: Any, base: str, tokens: int) -> Any:
        """A prompt of exactly ``tokens`` token ids, cut from the filler text as this server's model tokenizes it
        (``POST /tokenize``); the filler text itself when the server cannot tokenize (the server's own
        ``prompt_n`` says how long it was)."""
        import httpx

        words = tokens
        ex.prompt_text = filler(words)
        try:
            for _ in range(4):  # a word is one token or more: a few words too many at most
                response = client.post(f"{base}/tokenize", json={"content": ex.prompt_text, "add_special": False})
                ids = response.json().get("tokens") if response.status_code == 200 else None
                if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
                    break
                if len(ids) >= tokens:
                    ex.prompt_note = (
                        f"prompt: {tokens} token ids of the filler text, tokenized by the server (/tokenize)"
                    )
                    return ids[:tokens]
                words = words * 2 + 1
                ex.prompt_text = filler(words)
        except (httpx.HTTPError, ValueError, AttributeError):
            pass
        ex.prompt_note = "prompt: filler text (the server did not tokenize it); its length is the server's prompt_n"
        return ex.prompt_text

    def _stop(self, ex: Exchange, t0: float) -> None:
        """End the server: its whole process group, also when the leader already exited (a helper it forked
        would otherwise outlive the sweep)."""
        proc = ex.proc
        if proc is None:
            return
        if ex.returncode is None:
            ex.returncode = proc.poll()
        if ex.returncode is not None:
            proc.close()
            ex.stop_s = 0.0
            return
        start = time.monotonic()
        # a stopped (SIGSTOP) server must run to act on SIGTERM
        rc, killed = proc.stop(STOP_GRACE_S, resume=ex.outcome == "timeout")
        ex.stop_s = time.monotonic() - start
        ex.stopped_rc = rc
        if killed:
            ex.stop_note = f"llama-server ignored SIGTERM for {STOP_GRACE_S:g} s; killed with SIGKILL"

    def _classify(
        self, ex: Exchange, lines: Sequence[str], facts: LogFacts
    ) -> tuple[crashmod.CrashSignature, crashmod.Phase]:
        logged = crashmod.parse_crash(lines)  # GGML_ASSERT / backtrace frames, when llama.cpp printed them
        if ex.outcome == "ok":
            return crashmod.CrashSignature(), crashmod.Phase("none", "the run succeeded")
        boundary = facts.loaded_line
        if ex.outcome == "timeout":
            if ex.died_during == "load" and boundary is not None:
                return logged, crashmod.Phase(
                    "timeout",
                    f"the log says the model loaded ({_at(lines, boundary, 'model loaded')}) but {ex.error}: the server hung",
                )
            if ex.died_during == "load":
                where = (
                    _at(lines, facts.loading_line, "load started")
                    if facts.loading_line is not None
                    else "no load line in the log"
                )
                return logged, crashmod.Phase(
                    "timeout", f"llama-server did not become ready while loading ({ex.error}); {where}"
                )
            return logged, crashmod.Phase(
                "timeout",
                f"no /completion answer within the timeout after the model loaded ({_at(lines, boundary, 'model loaded')})",
            )
        if ex.returncode is not None and ex.died_during:
            sig = signal_name(ex.returncode)
            frames = logged.frames
            key = logged.key_frames
            first = logged.first_line if logged.first_line is not None else max(0, len(lines) - 1)
            anchor = facts.load_error_line if ex.died_during == "load" and facts.load_error_line is not None else None
            excerpt = _excerpt(lines, anchor if anchor is not None else first, boundary, logged)
            signature = crashmod.CrashSignature(
                signals=tuple(
                    dict.fromkeys(([sig] if sig and not sig.startswith("signal ") else []) + list(logged.signals))
                ),
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
                    "load",
                    f"llama-server {_death_text(ex.returncode)} before it served (/health never ok, no 'model loaded'); {why}",
                )
            task = f"; request started at log line {facts.task_line + 1}" if facts.task_line is not None else ""
            frames_text = f" in {' → '.join(f for f in key if f in crashmod.COMPUTE_FRAMES)}" if key else ""
            return signature, crashmod.Phase(
                "compute",
                f"llama-server {_death_text(ex.returncode)}{frames_text} with /completion in flight, after the model loaded "
                f"({_at(lines, boundary, 'model loaded')}){task}",
            )
        if ex.outcome == "connection-error":
            return logged, crashmod.Phase(
                "transport", f"the HTTP exchange failed while the server kept running: {ex.error}"
            )
        # An HTTP failure from a server that kept running: 4xx rejects the request (not a backend failure),
        # 5xx after the model loaded is a failure while serving it, located by the log's error line.
        errors = [i for i in range(facts.task_line or boundary or 0, len(lines)) if ERROR_LINE_RE.search(lines[i])]
        logged_error = f"; log line {errors[0] + 1}: {_short(lines[errors[0]])}" if errors else ""
        if ex.status is not None and 400 <= ex.status < 500:
            return logged, crashmod.Phase(
                "unknown",
                f"llama-server rejected the request (HTTP {ex.status}: {_short(ex.error)}) and kept running{logged_error}",
            )
        if boundary is not None:
            return logged, crashmod.Phase(
                "compute",
                f"llama-server answered HTTP {ex.status}: {_short(ex.error)!r} after the model loaded "
                f"({_at(lines, boundary, 'model loaded')}){logged_error}",
            )
        return logged, crashmod.classify_phase(ex.outcome, lines, logged, ex.error, 1)


def _version_output(argv: Sequence[str], seconds: float) -> str:
    """stdout + stderr of ``COMMAND --version``: ``seconds`` and VERSION_MAX_BYTES at most (host.proc kills its
    process group at either limit, and always at the end); "" when it did not run or did not finish."""
    try:
        done = hostproc.run_bounded(
            argv, timeout=seconds, max_output=VERSION_MAX_BYTES, merge_stderr=True, die_with_parent=True
        )
    except OSError:
        return ""
    if done.timed_out:
        return ""
    return done.stdout[:VERSION_MAX_BYTES].decode("utf-8", errors="replace")


def _read_lines(path: Path) -> list[str]:
    try:
        data = path.read_bytes()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[-MAX_LOG_LINES:]


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


def _excerpt(
    lines: Sequence[str], first: int, boundary: int | None, logged: crashmod.CrashSignature
) -> tuple[str, ...]:
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
