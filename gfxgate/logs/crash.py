"""Crash signatures and failure phases, parsed from server log lines (pure functions, no I/O).

Ollama's server log interleaves its own slog lines (``time=… level=INFO source=server.go:… msg="…"``),
llama.cpp/ggml lines (``load_tensors: offloaded 29/29 layers to GPU``) and, when the runner dies, the
Go runtime's crash report (``SIGSEGV: segmentation violation`` followed by goroutine stacks with cgo
frames such as ``_Cfunc_ggml_backend_sched_graph_compute_async`` and ``(*Server).computeBatch``) or a
C backtrace (``#3 0x… in ggml_backend_sched_graph_compute_async``). The phase of a failure is decided
by *where* the crash sits relative to the "runner started" marker and by which frames it shows.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from gfxgate.lazyre import lazy_compile
from gfxgate.serial import JsonRecord, json_dataclass, json_field

SIGNAL_RE = lazy_compile(r"\b(SIGSEGV|SIGABRT|SIGILL|SIGBUS|SIGFPE|SIGKILL|SIGTRAP)\b")
EXIT_STATUS_RE = lazy_compile(r"exit status (\d+)")
TERMINATED_RE = lazy_compile(r"llama runner process has terminated")
GGML_ABORT_RE = lazy_compile(r"GGML_ASSERT|ggml_abort|GGML_ABORT|core dumped|Segmentation fault|Aborted")
# Go stack frame: "pkg/path.(*Type).method(args)" or "pkg.func(args)" on its own line.
GO_FRAME_RE = lazy_compile(r"^(?:[\w./-]+\.)?(?:\(\*?[\w]+\)\.)?(?P<func>[A-Za-z_][\w]*)\(.*\)\s*$")
# C frames: gdb style "#3  0x00007f… in func (...)", backtrace_symbols "lib.so(func+0x1a)", libunwind "func + 26".
C_FRAME_RES = (
    lazy_compile(r"^#\d+\s+(?:0x[0-9a-fA-F]+\s+in\s+)?(?P<func>[A-Za-z_][\w:]*)"),
    lazy_compile(r"\((?P<func>[A-Za-z_][\w]*)\+0x[0-9a-fA-F]+\)"),
)

# Markers that the model finished loading and the runner serves requests (compute starts after them).
STARTED_RES = (
    lazy_compile(r"llama runner started"),
    lazy_compile(r'msg="?loaded model|model loaded', re.IGNORECASE),
)
# Markers of the load phase (seen before the runner starts).
LOADING_RES = (
    lazy_compile(r"starting (llama )?runner|msg=\"?starting"),
    lazy_compile(r"load_tensors|llama_model_load|llm_load|loading model|offloading|offloaded \d+/\d+ layers"),
)
COMPUTE_FRAMES = frozenset(
    {
        "ggml_backend_sched_graph_compute_async",
        "ggml_backend_sched_graph_compute",
        "ggml_backend_graph_compute_async",
        "ggml_graph_compute",
        "computeBatch",
        "ComputeWithNotify",
        "Compute",
        "llama_decode",
        "llama_decode_impl",
        "processBatch",
    }
)
LOAD_FRAMES = frozenset(
    {
        "llama_model_load",
        "llama_model_load_from_file",
        "llama_load_model_from_file",
        "ggml_backend_alloc_ctx_tensors_from_buft",
        "ggml_backend_buffer_alloc",
        "LoadModel",
        "loadModel",
        "initModel",
        "ggml_backend_dev_init",
        "llama_init_from_model",  # llama-server: the context (and its first graph) is created while loading
    }
)
EXCERPT_BEFORE = 3
EXCERPT_AFTER = 24


@json_dataclass(frozen=True)
class CrashSignature(JsonRecord):
    """What a runner crash looks like in the log: signal, exit status, the frames and the excerpt."""

    signals: tuple[str, ...] = ()
    exit_status: int | None = None
    terminated: bool = False
    frames: tuple[str, ...] = ()  # function names, innermost first, de-duplicated
    key_frames: tuple[str, ...] = ()  # the frames that locate the crash (compute or load functions)
    first_line: int | None = json_field(
        default=None, skip=True
    )  # index into the lines given, of the first crash marker
    excerpt: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return bool(self.signals or self.terminated or self.exit_status is not None or self.frames)

    @property
    def label(self) -> str:
        """Short label for a table cell: ``SIGSEGV``, ``exit status 2`` or ``runner terminated``."""
        if self.signals:
            return self.signals[0]
        if self.exit_status is not None:
            return f"exit status {self.exit_status}"
        if self.terminated:
            return "runner terminated"
        return "crash"

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> CrashSignature | None:
        if not data:
            return None
        return cls(
            signals=tuple(data.get("signals", ())),
            exit_status=data.get("exit_status"),
            terminated=bool(data.get("terminated")),
            frames=tuple(data.get("frames", ())),
            key_frames=tuple(data.get("key_frames", ())),
            excerpt=tuple(data.get("excerpt", ())),
        )


@json_dataclass(frozen=True)
class Phase(JsonRecord):
    """When a run failed: ``load``, ``compute``, ``timeout``, ``transport``, ``unknown`` (or ``none``)."""

    phase: str
    reason: str
    log_lines: tuple[int, ...] = json_field(default=(), skip=True)  # indices of the deciding log lines


def frame_name(line: str) -> str | None:
    """The function a stack-frame line names, or None when the line is not a frame."""
    text = line.strip()
    for regex in C_FRAME_RES:
        match = regex.search(text)
        if match:
            return _demangled(match["func"]).rsplit("::", 1)[-1]
    match = GO_FRAME_RE.match(text)
    if match and "=" not in text.split("(", 1)[0]:
        func = match["func"]
        return func[len("_Cfunc_") :] if func.startswith("_Cfunc_") else func
    return None


_MANGLED_PART = lazy_compile(r"(\d+)")


def _demangled(name: str) -> str:
    """The function of an Itanium-mangled name as backtrace_symbols prints it (``_ZNK17llm_graph_context10build_attnEP…``
    → ``build_attn``; a constructor ``_ZN13llama_contextC1E…`` → ``llama_context``); other names unchanged."""
    if not name.startswith("_Z"):
        return name
    rest = name[2:]
    nested = rest.startswith("N")
    rest = rest[1:] if nested else rest
    rest = rest.lstrip("KVr")
    parts: list[str] = []
    # (not rest[:1].isdigit(): "²" is a digit to str.isdigit, not to \d, and a log line may hold one)
    while (part := _MANGLED_PART.match(rest)) is not None:
        digits = part[1]
        size = int(digits)
        parts.append(rest[len(digits) : len(digits) + size])
        rest = rest[len(digits) + size :]
        if not nested:
            break
    return parts[-1] if parts else name


def parse_crash(lines: Sequence[str], error_text: str = "") -> CrashSignature:
    """Find the crash report in ``lines`` (and the client's error text); empty signature when none."""
    signals: list[str] = []
    exit_status: int | None = None
    terminated = bool(TERMINATED_RE.search(error_text))
    match = EXIT_STATUS_RE.search(error_text)
    if match:
        exit_status = int(match[1])
    first: int | None = None
    frames: list[str] = []
    for index, line in enumerate(lines):
        hit = False
        for sig in SIGNAL_RE.findall(line) if "SIG" in line else ():  # every signal name holds it: a C substring test
            hit = True  # spares the regex's try at every position of a line without one
            if sig not in signals:
                signals.append(sig)
        if TERMINATED_RE.search(line):
            terminated = hit = True
            status = EXIT_STATUS_RE.search(line)
            if status:
                exit_status = int(status[1])
        if GGML_ABORT_RE.search(line):
            hit = True
        if hit and first is None:
            first = index
        if first is not None and index > first:
            name = frame_name(line)
            if name and name not in frames and not line.strip().startswith(("runtime.", "runtime/")):
                frames.append(name)
    key = tuple(f for f in frames if f in COMPUTE_FRAMES or f in LOAD_FRAMES)
    excerpt: tuple[str, ...] = ()
    if first is not None:
        start = _last_marker_before(lines, first, STARTED_RES + LOADING_RES)
        start = first - EXCERPT_BEFORE if start is None or first - start > EXCERPT_BEFORE else start
        excerpt = _excerpt(lines, max(0, start), first, key)
    return CrashSignature(tuple(signals), exit_status, terminated, tuple(frames), key, first, excerpt)


def _excerpt(lines: Sequence[str], start: int, first: int, key_frames: tuple[str, ...]) -> tuple[str, ...]:
    """Context before the crash, the crash report's head, and every line naming a key frame."""
    out = list(range(start, min(len(lines), first + EXCERPT_AFTER)))
    for index in range(first + EXCERPT_AFTER, len(lines)):
        if any(f in lines[index] for f in key_frames) or TERMINATED_RE.search(lines[index]):
            out.append(index)
    picked: list[str] = []
    last = None
    for index in out:
        if last is not None and index != last + 1:
            picked.append("…")
        picked.append(lines[index].rstrip("\n"))
        last = index
    return tuple(picked)


def _last_marker_before(lines: Sequence[str], before: int, regexes: Sequence[re.Pattern]) -> int | None:
    for index in range(before - 1, -1, -1):
        if any(r.search(lines[index]) for r in regexes):
            return index
    return None


def classify_phase(
    outcome: str, lines: Sequence[str], crash: CrashSignature, error_text: str = "", first_line_no: int = 1
) -> Phase:
    """Decide the failure phase from the evidence, with the reason in words.

    ``first_line_no`` is the file line number of ``lines[0]``, so reasons cite real log lines.
    """
    if outcome == "ok":
        return Phase("none", "the run succeeded")
    if outcome == "timeout":
        started = _last_marker_before(lines, len(lines), STARTED_RES)
        where = (
            f"after the runner started (log: {_short(lines[started])})"
            if started is not None
            else "no runner-start marker"
        )
        return Phase("timeout", f"no complete answer within the request timeout; {where}")
    if outcome == "connection-error":
        return Phase("transport", f"the HTTP connection failed: {error_text or 'no response'}")
    lowered = error_text.lower()
    if "timed out waiting for llama runner to start" in lowered or "error loading model" in lowered:
        return Phase("load", f"the server reported a load failure: {_short(error_text)}")
    if crash.first_line is not None:
        started = _last_marker_before(lines, crash.first_line, STARTED_RES)
        compute = [f for f in crash.key_frames if f in COMPUTE_FRAMES]
        load = [f for f in crash.key_frames if f in LOAD_FRAMES]
        if started is not None:
            frames = f" in {' → '.join(compute)}" if compute else ""
            return Phase(
                "compute",
                f"runner crashed ({crash.label}){frames} after the model loaded "
                f"(log line {started + first_line_no}: {_short(lines[started])})",
                (started, crash.first_line),
            )
        if compute and not load:
            return Phase(
                "compute",
                f"runner crashed ({crash.label}) in compute frames {' → '.join(compute)}",
                (crash.first_line,),
            )
        loading = _last_marker_before(lines, crash.first_line, LOADING_RES)
        if load or loading is not None:
            what = (
                f"in {' → '.join(load)}"
                if load or loading is None
                else f"while loading (log line {loading + first_line_no}: {_short(lines[loading])})"
            )
            return Phase(
                "load", f"runner crashed ({crash.label}) {what}, before 'llama runner started'", (crash.first_line,)
            )
        return Phase("unknown", f"runner crashed ({crash.label}) but the log shows neither load nor start markers")
    if crash.terminated or crash.exit_status is not None:
        return Phase(
            "unknown",
            f"the server says {_short(error_text)!r} but no server log was captured "
            "(pass --server-log NAME=PATH or --journal-unit NAME=UNIT to locate the crash)",
        )
    return Phase("unknown", f"HTTP error without crash evidence: {_short(error_text) or 'no error text'}")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
