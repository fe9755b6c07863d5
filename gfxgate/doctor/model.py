"""What doctor found on one machine (frozen dataclasses, JSON through gfxgate.serial; schema: doctor.schema.json)."""

from __future__ import annotations

from typing import Any

from gfxgate.host.access import Node, UserAccess
from gfxgate.host.install import Installs
from gfxgate.host.sysfs import Gpu
from gfxgate.host.units import Unit
from gfxgate.machine import MachineFacts
from gfxgate.model import Evidence, NeedsEvidence, Verdict
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, json_field


@dataclass(frozen=True)
class FixStep(NeedsEvidence, JsonRecord):
    """One thing to do on this machine, from a route step (``workaround``) or a machine row (access)."""

    workaround: str  # the workaround id of the route step, or "access"
    what: str
    commands: tuple[str, ...]  # exact text to run or write
    evidence: tuple[Evidence, ...]
    done: bool = False  # the machine already does it (evidence: where)
    check: str | None = (
        None  # a route step's check at the version: "live — …", or "not checked — why" (answer/route.py)
    )
    origin: str = "route"  # "route": a step of the release's route; "machine": what this machine's files or runs add

    evidence_for = "fix step {self.workaround}"


@dataclass(frozen=True)
class BackendVerdict(JsonRecord):
    backend: str
    title: str
    state: str  # "runs", "needs steps", "no route", "undecided"
    label: str
    steps: tuple[FixStep, ...] = ()
    reason: str | None = None

    @classmethod
    def without_route(cls, backend: Any) -> BackendVerdict:
        """A backend the Route gives no route (answer.route.BackendAnswer without an option): undecided, or no route,
        with why."""
        return cls(
            backend.backend,
            backend.title,
            "undecided" if backend.undecided else "no route",
            "-",
            reason="; ".join(backend.undecided or backend.refused) or None,
        )


@dataclass(frozen=True)
class TargetReport(JsonRecord):
    target: str
    gpu: str  # the marketing name
    version: str | None  # the ollama release judged
    matrix_from: str  # "snapshot at the pin v0.17.5", "sources at v0.32.15", "timeline snapshot"
    rows: tuple[Verdict, ...]  # the gate matrix column + the machine rows (access, environment)
    backends: tuple[BackendVerdict, ...]
    answer: str  # the route sentence
    pin: str | None = None  # the release to pin, with why
    notes: tuple[str, ...] = ()
    layer_backends: tuple[tuple[str, tuple[str, ...]], ...] = ()  # which backends each gate layer gates
    pin_commands: tuple[str, ...] = ()  # the pin as commands for this machine's layout
    pin_gives_up: str | None = None  # what the pinned release does not have
    packaged: tuple[str, ...] = ()  # distribution packages that carry this target's code (rules/installs.yaml)
    runtime: tuple[str, ...] = ()  # recorded runs on this target (rules/runtime.yaml), with their conditions


@dataclass(frozen=True)
class Live(JsonRecord):
    url: str
    kind: str = "ollama"  # "ollama" (/api/version, /api/ps) or "llama-server" (/props)
    version: str | None = None
    models: tuple[dict[str, Any], ...] = ()  # /api/ps: name, size, size_vram, on_gpu ("100 % GPU")
    error: str | None = None


@dataclass(frozen=True)
class MachineReport(JsonRecord):
    root: str
    gpus: tuple[Gpu, ...]
    amdgpu_loaded: bool
    installs: Installs
    unit: Unit | None
    process_env: tuple[tuple[str, str], ...] = ()
    process_env_from: str | None = None
    nodes: tuple[Node, ...] = ()
    access: tuple[UserAccess, ...] = ()
    live: Live | None = None
    logs: tuple[str, ...] = ()
    targets: tuple[TargetReport, ...] = ()
    unreadable: tuple[str, ...] = ()  # what could not be read (without root)
    notes: tuple[str, ...] = ()
    facts: MachineFacts | None = None  # the installed runners and the runs, as the answer reads them
    os: str = json_field(default="linux", skip=True)  # the tree's OS: "windows" for a captured Windows install
