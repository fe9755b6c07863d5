"""The result model: statuses, evidence, verdicts and the gate matrix (frozen dataclasses).

A :class:`Verdict` never exists without its evidence; an ``unknown`` verdict carries its reason.
Everything here is pure data: formatters render it, nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Literal, Mapping

from gfxgate.serial import JsonRecord, document, json_field, to_json

JSON_SCHEMA_VERSION = 1


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


@dataclass(frozen=True)
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
class Layer(JsonRecord):
    """One row of the gate matrix (``rules/layers.yaml``): the question it answers and the backends it decides."""

    id: str
    title: str
    kind: Literal["source", "artifact", "runtime"]
    question: str
    backends: tuple[str, ...] = ()  # the GPU backends the layer decides ("rocm", "vulkan"); () = all

    @property
    def rocm_only(self) -> bool:
        return self.backends == ("rocm",)


@dataclass(frozen=True)
class SourceInfo(JsonRecord):
    """Which upstream version a matrix was built from."""

    name: str
    url: str
    ref: str
    commit: str | None
    origin: str  # "snapshot", "git" or "directory"


@dataclass(frozen=True)
class RuleLocation:
    """Where a gate rule is defined, as the rules loader read it: ``uri`` is its rules file as this repository
    names it (``rules/gates/x.yaml``; a ``--rules DIR`` file relative to the working folder, or a file URI) and
    ``line`` the 1-based line of its entry. SARIF results point here."""

    rule: str
    layer: str
    uri: str
    line: int


@dataclass(frozen=True)
class GateMatrix:
    """Rows are layers, columns are targets; every cell is a :class:`Verdict`."""

    targets: tuple[str, ...]
    layers: tuple[Layer, ...]
    cells: Mapping[tuple[str, str], Verdict]
    sources: tuple[SourceInfo, ...] = ()
    notes: tuple[str, ...] = field(default=())
    routes: tuple[Any, ...] = ()  # gfxgate.gate.route.Route per target: the answer the matrix ends with
    rule_locations: tuple[RuleLocation, ...] = ()  # the rules the matrix was built with, in load order

    def route(self, target: str) -> Any:
        return next((r for r in self.routes if r.target == target), None)

    def cell(self, layer: str, target: str) -> Verdict:
        return self.cells[(layer, target)]

    def row(self, layer: str) -> list[Verdict]:
        return [self.cells[(layer, t)] for t in self.targets]

    def to_json(self) -> dict[str, Any]:
        """The matrix as ``gfxgate scan --format json`` writes it: each layer with its cells in target order."""
        return document("gate-matrix", {
            "targets": to_json(self.targets),
            "sources": to_json(self.sources),
            "layers": [{**layer.to_json(), "cells": to_json(self.row(layer.id))} for layer in self.layers],
            "routes": to_json(self.routes),
            "notes": to_json(self.notes),
        }, version=JSON_SCHEMA_VERSION)
