"""Facts about sweep runs, read from their worklog lines: GPU offload, crash label, phase, the table cell's text.

Pure functions of :class:`~gfxgate.sweep.worklog.Run` records; the result model (``sweep/model.py``), the
hypotheses (``sweep/hypotheses.py``) and the runtime verdicts of ``scan --runtime`` (``sweep/verdicts.py``) are
built from them.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any, Iterable, Sequence

from gfxgate.sweep.worklog import Run


_DEVICE_BACKENDS = (
    ("vulkan", "vulkan"),
    ("rocm", "rocm"),
    ("hip", "rocm"),
    ("cuda", "cuda"),
    ("none", "cpu"),
    ("cpu", "cpu"),
)
BACKEND_NAMES = ("rocm", "vulkan", "cuda", "cpu")


def _backend_of_device(name: str) -> str | None:
    lowered = name.strip().lower()
    return next((backend for prefix, backend in _DEVICE_BACKENDS if lowered.startswith(prefix)), None)


def backend_of(run: Run) -> str | None:
    """The backend a run exercised: the llama-server command's ``--device``/``-dev`` (``none``: the CPU), else the
    device its log used (``Vulkan0`` → vulkan, ``ROCm0`` → rocm), else the endpoint's name when it is a backend's
    (``--endpoint vulkan=…``); None when nothing says."""
    command = list((run.record.get("endpoint") or {}).get("command") or ())
    for flag in ("--device", "-dev"):
        if flag in command[:-1]:
            return _backend_of_device(str(command[command.index(flag) + 1]).split(",")[0])
    devices = (run.get("offload") or {}).get("devices") or ()
    if devices:
        return _backend_of_device(str(devices[0]))
    name = (run.endpoint or "").strip().lower()
    if name in BACKEND_NAMES:
        return name
    loaded = (run.get("offload") or {}).get("backends") or ()
    return "cpu" if loaded and all(str(b).lower() == "cpu" for b in loaded) else None  # only the CPU backend loaded


def is_gpu_run(run: Run) -> bool:
    """num_gpu ≠ 0 asks for GPU offload (-1: as many layers as fit)."""
    return run.num_gpu != 0


def vram(run: Run) -> tuple[int | None, int | None]:
    """(size, size_vram) of the run's model in ``/api/ps`` after the run; (None, None) when unknown."""
    ps = run.get("ps_after") or {}
    for entry in ps.get("models") or ():
        name = entry.get("model") or ""
        if name in (run.model, f"{run.model}:latest"):
            return entry.get("size"), entry.get("size_vram")
    return None, None


def layers(run: Run) -> tuple[int, int] | None:
    """(N, M) from the server log's ``offloaded N/M layers to GPU`` (llama-server runs); None when not shown.

    Only with a GPU device in use: llama.cpp still prints ``offloaded 5/5 layers`` under ``--device none``.
    """
    offload = run.get("offload") or {}
    if not offload.get("devices"):
        return None
    if isinstance(offload.get("layers"), int) and isinstance(offload.get("of"), int):
        return offload["layers"], offload["of"]
    return None


def offloaded(run: Run) -> bool | None:
    """Did the successful run really put part of the model on the GPU? None when neither /api/ps nor the log said.

    Ollama runs: ``size_vram`` in /api/ps. llama-server runs: the log's ``offloaded N/M layers``; a process
    whose log shows backends but no GPU device (the CPU-only set) offloaded nothing.
    """
    size, size_vram = vram(run)
    if size_vram is not None:
        return size_vram > 0
    counted = layers(run)
    if counted is not None:
        return counted[0] > 0
    offload = run.get("offload") or {}
    if offload.get("backends") and not offload.get("devices"):
        return False
    return None


def offload_text(run: Run) -> str:
    """``2/5 layers`` (log) / ``812/1536 MiB`` (/api/ps) / ``no GPU device`` / ``—``."""
    counted = layers(run)
    if counted is not None:
        return f"{counted[0]}/{counted[1]} layers"
    size, size_vram = vram(run)
    if size_vram is not None:
        return f"{size_vram / 2**20:.0f}/{size / 2**20:.0f} MiB" if size else f"{size_vram / 2**20:.0f} MiB"
    if offloaded(run) is False:
        return "no GPU device"
    return "—"


def gpu_pass(run: Run) -> bool:
    """A GPU run that answered, unless /api/ps shows that nothing was offloaded (a silent CPU fallback)."""
    return run.ok and is_gpu_run(run) and offloaded(run) is not False


def crash_label(run: Run) -> str | None:
    crash = run.get("crash") or {}
    if crash.get("signals"):
        return crash["signals"][0]
    if crash.get("exit_status") is not None:
        return f"exit status {crash['exit_status']}"
    if crash.get("terminated"):
        return "runner terminated"
    return None


def phase_of(run: Run) -> tuple[str, str]:
    phase = run.get("phase") or {}
    return phase.get("phase", "unknown"), phase.get("reason", "")


def failure_text(run: Run) -> str:
    """``HTTP 500, SIGSEGV`` / ``timeout after 5 s`` / ``connection error``."""
    if run.outcome == "timeout":
        return f"timeout after {run.get('timeout_s', 0):g} s"
    if run.outcome == "connection-error":
        return "connection error"
    parts = []
    if run.get("http_status"):
        parts.append(f"HTTP {run.get('http_status')}")
    label = crash_label(run)
    if label:
        parts.append(label)
    elif run.outcome == "crash":
        parts.append("runner terminated")
    if not parts:
        parts.append(run.outcome)
    return ", ".join(parts)


def seconds(run: Run) -> float | None:
    total = (run.get("durations_ns") or {}).get("total")
    if total:
        return total / 1e9
    return run.get("wall_s")


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def ok_text(runs: Sequence[Run]) -> str:
    secs = _median(seconds(r) for r in runs)
    evals = _median(r.get("eval_count") for r in runs)
    parts = []
    if secs is not None:
        parts.append(f"{secs:.1f} s")
    if evals is not None:
        parts.append(f"eval_count={int(evals) if float(evals).is_integer() else evals}")
    shown = ordered(f"{n}/{m} layers" for n, m in (pair for pair in map(layers, runs) if pair is not None))
    if len(shown) == 1:
        parts.append(f"{shown[0]} on GPU")
    return f"({', '.join(parts)})" if parts else ""


def cell_text(runs: Sequence[Run]) -> str:
    """The seed's cell: ``OK (46.7 s, eval_count=512)`` / ``FAIL (HTTP 500, SIGSEGV)``; counts over repeats."""
    if not runs:
        return "—"
    good = [r for r in runs if r.ok]
    bad = [r for r in runs if not r.ok]
    count = "" if len(runs) == 1 else f" {len(good)}/{len(runs)}"
    if not bad:
        return f"OK{count} {ok_text(good)}".strip()
    reasons = Counter(failure_text(r) for r in bad)
    why = "; ".join(text if n == 1 or len(bad) == 1 else f"{n}× {text}" for text, n in reasons.most_common())
    if not good:
        return f"FAIL{count} ({why})"
    return f"FLAKY{count} OK {ok_text(good)}; FAIL ({why})"


def ordered(values: Iterable[Any]) -> tuple[Any, ...]:
    """``values`` without repeats, in first-seen order."""
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return tuple(out)


# -- llama-server runs: speed, the device used, VRAM and per-device placement ----------------------------------
def tokens_per_s(run: Run) -> float | None:
    value = run.get("tokens_per_s")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def first_token_s(run: Run) -> float | None:
    """Time to the first token: streamed (Ollama ``first_token_s``) or llama.cpp's prompt time (``prompt_ms``:
    the first token is sampled from the prompt's logits, so it is ready when the prompt is evaluated)."""
    value = run.get("first_token_s")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    prompt = (run.get("durations_ns") or {}).get("prompt_eval")
    return prompt / 1e9 if isinstance(prompt, (int, float)) and not isinstance(prompt, bool) else None


def devices_used(run: Run) -> tuple[str, ...]:
    """The device(s) that held the run's model weights (``offload.on_gpu``); older records: the ``using device`` line."""
    offload = run.get("offload") or {}
    if "on_gpu" in offload:
        return tuple(offload["on_gpu"] or ())
    return tuple(d.split(" ", 1)[0] for d in offload.get("devices") or ())


def device_target(run: Run, device: str) -> str | None:
    """``sm_90`` for ``CUDA0`` (or ``gfx900`` for ``ROCm0``): ggml_cuda_init's ``Device 0:`` line names CUDA/HIP
    device 0; a Vulkan device gets none (that line is the CUDA module's, even when it is the same GPU)."""
    for prefix in ("CUDA", "ROCm", "HIP"):
        if device.startswith(prefix) and device[len(prefix) :].isdigit():
            for gpu in (run.get("offload") or {}).get("gpus") or ():
                if isinstance(gpu, dict) and gpu.get("index") == int(device[len(prefix) :]) and gpu.get("target"):
                    return str(gpu["target"])
    return None


def device_description(run: Run, device: str) -> str:
    """``CUDA0 (NVIDIA H200) sm_90``: the log's ``using device`` text (with the target its ``Device N:`` line gives),
    else ``--list-devices``, else the bare name."""
    target = device_target(run, device)
    for text in (run.get("offload") or {}).get("devices") or ():
        if text.split(" ", 1)[0] == device:
            return f"{text} {target}" if target else text
    for listed in (run.get("devices_listed") or {}).get("devices") or ():
        if listed.get("device") == device:
            return f"{device} ({listed.get('description')}, {listed.get('total_mib')} MiB)"
    return device


def vram_log_mib(run: Run) -> float | None:
    """MiB of the model, KV and compute buffers on GPU devices, from the server log's buffer lines."""
    value = (run.get("offload") or {}).get("vram_mib")
    return float(value) if isinstance(value, (int, float)) else None


def vram_sampled_mib(run: Run) -> int | None:
    """The most GPU memory nvidia-smi saw the server process hold during the run (``--gpu-memory-log``)."""
    value = (run.get("vram_sampled") or {}).get("max_mib")
    return value if isinstance(value, int) else None


def placement_text(run: Run) -> str:
    """``CUDA0: 16 layers, 389.8 MiB weights; CPU_Mapped: 13 layers, 342.5 MiB`` (model buffers, from the log)."""
    parts = []
    for row in (run.get("offload") or {}).get("placement") or ():
        if "model_mib" not in row:
            continue
        layers = f"{row['layers']} layers, " if isinstance(row.get("layers"), int) else ""
        parts.append(f"{row['buffer']}: {layers}{row['model_mib']:.1f} MiB")
    return "; ".join(parts)


# -- the context sweep: prefill speed, memory, and whether a failure was the device running out of memory -------------
def prefill_tokens_per_s(run: Run) -> float | None:
    """Prompt tokens per second: the record's ``prefill_tokens_per_s``, else prompt_eval_count over its duration."""
    value = run.get("prefill_tokens_per_s")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    count, duration = run.get("prompt_eval_count"), (run.get("durations_ns") or {}).get("prompt_eval")
    if isinstance(count, int) and isinstance(duration, (int, float)) and count > 0 and duration > 0:
        return count / (duration / 1e9)
    return None


def kv_mib(run: Run) -> float | None:
    """MiB of KV cache the server allocated (its buffer lines, every device and the host)."""
    value = ((run.get("offload") or {}).get("buffers_mib") or {}).get("KV")
    return float(value) if isinstance(value, (int, float)) else None


def tool_used_mib(run: Run) -> int | None:
    """The most memory nvidia-smi / rocm-smi / sysfs said one GPU held while the server held the model."""
    used = [
        int(d["used_mib"])
        for d in ((run.get("device_memory") or {}).get("devices") or ())
        if isinstance(d, dict) and isinstance(d.get("used_mib"), int)
    ]
    return max(used) if used else None


_OOM_WORDS = (
    "out of memory",
    "failed to allocate",
    "insufficient memory",
    "requires more system memory",
    "cannot be allocated",
    "outofdevicememory",
    "cudamalloc failed",
    "hipmalloc failed",
)


def out_of_memory(run: Run) -> str | None:
    """The line or error that says the run did not fit in memory (the log's first allocation failure), or None."""
    if run.ok:
        return None
    logged = (run.get("offload") or {}).get("out_of_memory") or {}
    if isinstance(logged, dict) and logged.get("text"):
        return str(logged["text"])
    error = str(run.get("error") or "")
    return error if any(word in error.lower() for word in _OOM_WORDS) else None


def failure_line(run: Run) -> str | None:
    """What says why a failed run failed: its allocation failure, else the first line the server logged at error
    level, else the run's error; None for a run that answered."""
    if run.ok:
        return None
    logged = (run.get("offload") or {}).get("first_error") or {}
    return (
        out_of_memory(run)
        or (str(logged["text"]) if isinstance(logged, dict) and logged.get("text") else None)
        or (str(run.get("error")) if run.get("error") else None)
    )
