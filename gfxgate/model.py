"""The verdict vocabulary every pipeline shares: statuses, evidence, verdicts, sources (frozen dataclasses).

The gate matrix, the artifact scan, the sweep, diagnose, trace and the timeline all speak it; the records of
the gate matrix alone (layers, rule locations, the matrix) are in :mod:`gfxgate.gate.matrix`.
A :class:`Verdict` never exists without its evidence; an ``unknown`` verdict carries its reason.
Everything here is pure data: formatters render it, nothing here does I/O.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar, Iterable

from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, json_dataclass, json_field


# The operating systems a release is answered for (`--os`); a rule, layer, route or workaround without `os:` describes
# the Linux release (every rule written before the OS axis did).
OSES = ("linux", "windows")
DEFAULT_OS = "linux"


def os_of(raw: dict) -> tuple[str, ...]:
    """The operating systems a rules entry describes: its `os:` list, else Linux alone."""
    return tuple(raw.get("os") or (DEFAULT_OS,))


class Status(str, Enum):
    """What a layer says about a target. Ordered from most to least restrictive (see RANK)."""

    BLOCKED = "blocked"
    OVERRIDE_REQUIRED = "override-required"
    PARTIAL = "partial"
    ALLOWED = "allowed"
    UNKNOWN = "unknown"
    NOT_SCANNED = "not-scanned"
    NOT_MEASURED = "not-measured"

    def __str__(self) -> str:
        return self.value


# How strongly a status restricts a target; used to combine several rules feeding one layer.
RANK = {
    Status.BLOCKED: 0,
    Status.OVERRIDE_REQUIRED: 1,
    Status.PARTIAL: 2,
    Status.ALLOWED: 3,
}


def combine(statuses: Iterable[Status]) -> Status:
    """The most restrictive decided status; ``unknown`` when none of them decides."""
    decided = [s for s in statuses if s in RANK]
    return min(decided, key=RANK.__getitem__) if decided else Status.UNKNOWN


def need_evidence(evidence: tuple, what: str) -> None:
    """The one check that a record which must carry evidence has some: ``ValueError`` "<what> without evidence"."""
    if not evidence:
        raise ValueError(f"{what} without evidence")


class NeedsEvidence:
    """Mixin for a frozen dataclass that refuses to exist without ``evidence``: its ``__post_init__`` is
    :func:`need_evidence`, naming the record by the class's one-line ``evidence_for`` (a ``str.format`` template
    over ``self``, e.g. ``"fact {self.name!r}"``). A ``ClassVar``, so it is no field and never reaches the JSON."""

    __slots__ = ()
    evidence: tuple
    evidence_for: ClassVar[str]

    def __post_init__(self) -> None:
        need_evidence(self.evidence, self.evidence_for.format(self=self))


class PerBackend:
    """Mixin for an answer with one entry per GPU backend (``backends``, each with a ``backend`` name)."""

    __slots__ = ()
    backends: tuple

    def backend(self, backend: str) -> Any:
        """The entry for ``backend`` ("rocm", "vulkan", "cpu"), or None."""
        return next((b for b in self.backends if b.backend == backend), None)


@dataclass(frozen=True, kw_only=True)
class Location(JsonRecord):
    """Where a piece of evidence is: ``repo@ref:path:line`` (commit kept for reproducibility).

    For installed artifacts ``repo`` is ``"file"``, ``ref`` is empty and ``path`` is the file path;
    ``offset`` then locates the evidence inside the file.
    """

    repo: str
    ref: str = ""
    commit: str | None = None
    path: str
    line: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        head = f"{self.repo}@{self.ref}:{self.path}" if self.ref else self.path
        if self.line is not None:
            head += f":{self.line}"
        if self.offset is not None:
            head += f"@0x{self.offset:x}"
        return head


@json_dataclass(frozen=True)
class Evidence(JsonRecord):
    """One observation: where, the matched text (one line), and which rule or probe saw it."""

    source: str  # rule id, artifact scanner, or sweep run id
    location: Location | None = json_field(after={"where": lambda e: str(e.location) if e.location else None})
    text: str = ""
    note: str = ""


@dataclass(frozen=True)
class Verdict(JsonRecord):
    """A status for one (layer, target) cell, with the evidence that decides it."""

    layer: str
    target: str
    status: Status
    summary: str
    evidence: tuple[Evidence, ...] = ()
    remedy: str | None = None
    reason: str | None = None  # why the status is unknown / not scanned
    workarounds: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.status in RANK and not self.evidence:
            raise ValueError(f"verdict {self.layer}/{self.target} is {self.status} without evidence")
        if self.status not in RANK and not (self.reason or self.evidence):
            raise ValueError(f"verdict {self.layer}/{self.target} is {self.status} without a reason")


@dataclass(frozen=True)
class SourceInfo(JsonRecord):
    """Which upstream version a result (a gate matrix, a trace) was built from."""

    name: str
    url: str
    ref: str
    commit: str | None
    origin: str  # "snapshot", "git" or "directory"
