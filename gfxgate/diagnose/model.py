"""What a diagnosis is made of (frozen dataclasses): facts, GPUs, runs, findings and what stayed unknown.

Like :class:`gfxgate.model.Verdict`, nothing here exists without its evidence: a :class:`Finding`, a
:class:`Gpu`, a :class:`Fact`, a :class:`Run` or a :class:`Conclusion` refuses to be built without at least one
``log:line`` :class:`~gfxgate.model.Evidence` (:class:`~gfxgate.model.NeedsEvidence`), and an :class:`Unknown` without
a reason.
"""

from __future__ import annotations

from dataclasses import field

from gfxgate.model import Evidence, Location, NeedsEvidence, Verdict
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, json_dataclass, json_field

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Fact(NeedsEvidence):
    """Something the log establishes (a version, an override in effect, a backend loaded)."""

    name: str
    value: str
    evidence: tuple[Evidence, ...]

    evidence_for = "fact {self.name!r}"


@dataclass(frozen=True)
class Gpu(NeedsEvidence):
    """A device the log names: its gfx target when the line gives one, the backend/library that saw it."""

    name: str
    target: str | None  # gfx900, gfx900:xnack- … (None for Vulkan lines, which name no gfx target)
    backend: str
    evidence: tuple[Evidence, ...]
    detail: str = ""

    evidence_for = "gpu {self.name!r}"
    vendor: str | None = None  # amd, nvidia, intel (diagnose/vendor.py), None for a CPU device such as llvmpipe
    role: str = ""  # used / left out / kept, and why (the run's buffers, the scheduler's choice, a discovery line)

    @property
    def processor(self) -> str | None:
        return self.target.split(":", 1)[0] if self.target else None


@json_dataclass(frozen=True)
class Finding(NeedsEvidence):
    """A recognised failure: the message, its gate layer, the verdict it implies, remedies and where upstream prints it."""

    message: str  # catalogue id
    family: str
    title: str
    layer: str
    evidence: tuple[Evidence, ...]
    target: str | None = None
    target_reason: str = ""  # how the target was decided, or why it could not be
    # None when the target is unknown or the match is stale; the JSON has its status too
    verdict: Verdict | None = json_field(
        default=None, before={"status": lambda f: f.verdict.status.value if f.verdict else None}
    )
    remedy: str = ""
    workarounds: tuple[str, ...] = ()
    printed_at: tuple[Location, ...] = json_field(default=(), value=lambda locations: [str(loc) for loc in locations])
    printed_note: str = ""  # where the printing code was searched, or why it was not
    stale: str | None = None  # why this match does not fit the log's version (then no verdict)
    context: tuple[str, ...] = ()  # crash frames, phase, override notes
    run: int | None = None  # index into Diagnosis.runs
    vendor: str | None = None  # whose GPU the finding is about (diagnose/vendor.py); its remedy is that vendor's

    evidence_for = "finding {self.message!r}"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.stale and self.verdict is not None:
            raise ValueError(f"finding {self.message!r} is stale and cannot carry a verdict")


@dataclass(frozen=True)
class Buffer:
    """One device's model buffer in a run (llama.cpp's ``<device> model buffer size = N MiB``): where weights live."""

    buffer: str  # CUDA0, ROCm0, Vulkan0, CPU_Mapped, CPU
    mib: float

    @property
    def on_cpu(self) -> bool:
        return self.buffer.upper().startswith("CPU")


@dataclass(frozen=True)
class Run(NeedsEvidence):
    """One runner / llama-server start and how it ended."""

    index: int
    outcome: str  # ok, cpu-only, failed, incomplete
    summary: str
    evidence: tuple[Evidence, ...]
    phase: str = ""  # load / compute / … for failed runs (the sweep's crash localisation)
    offload: str = ""  # "29/29"
    backends: tuple[str, ...] = ()
    frames: tuple[str, ...] = ()
    placement: tuple[Buffer, ...] = ()  # the model buffers of the run, per device

    evidence_for = "run '{self.index}'"

    @property
    def gpu_devices(self) -> tuple[str, ...]:
        return tuple(b.buffer for b in self.placement if not b.on_cpu)


@dataclass(frozen=True)
class Conclusion(NeedsEvidence):
    """The sentence a user needs first (the model ran on the CPU, discovery dropped the GPU, the runner crashed
    while loading / computing), computed from the runs and findings it cites."""

    kind: str  # ran-on-gpu, ran-on-cpu, dropped-by-discovery, crashed-loading, crashed-computing, failed, out-of-memory, …
    text: str
    evidence: tuple[Evidence, ...]
    remedy: str = ""  # what to do, where the conclusion itself decides it (the wrong device, no GPU runner)

    evidence_for = "conclusion {self.kind!r}"


@dataclass(frozen=True)
class Unknown:
    what: str
    reason: str

    def __post_init__(self) -> None:
        if not self.reason:
            raise ValueError(f"unknown {self.what!r} without a reason")


@json_dataclass(frozen=True)
class Diagnosis(JsonRecord):
    """Everything one log established, recognised, and could not establish (its JSON: its fields, ``version`` too)."""

    log: str
    log_kind: str | None  # "ollama", "llama.cpp" or None
    lines: int = json_field(before={"version": lambda d: d.version})
    recognised: int  # lines that matched a catalogue message
    conclusions: tuple[Conclusion, ...] = ()
    facts: tuple[Fact, ...] = ()
    gpus: tuple[Gpu, ...] = ()
    runs: tuple[Run, ...] = ()
    findings: tuple[Finding, ...] = ()
    unknowns: tuple[Unknown, ...] = ()
    notes: tuple[str, ...] = field(default=())
    vendors: tuple[str, ...] = ()  # the GPU vendors the log names (diagnose/vendor.py): whose advice it may get

    def fact(self, name: str) -> Fact | None:
        return next((f for f in self.facts if f.name == name), None)

    @property
    def version(self) -> str | None:
        fact = self.fact("ollama-version") or self.fact("llama.cpp-build")
        return fact.value if fact else None

    @property
    def verdicts(self) -> tuple[Verdict, ...]:
        return tuple(f.verdict for f in self.findings if f.verdict is not None)
