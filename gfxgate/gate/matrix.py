"""The gate matrix: rows are layers (``rules/layers.yaml``), columns are targets, every cell a verdict.

Built by :func:`gfxgate.gate.engine.build_matrix`, completed by ``gate/scan.py`` and ``gate/workarounds.py``,
rendered by ``gfxgate/report/``; ``history/`` and ``timeline/`` build one per release. Pure data, no I/O; the
shared vocabulary of its cells (statuses, evidence, verdicts, sources) is :mod:`gfxgate.model`.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any, Literal, Mapping

from gfxgate.model import Evidence, SourceInfo, Status, Verdict
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, document, json_field, to_json

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Layer(JsonRecord):
    """One row of the gate matrix (``rules/layers.yaml``): the question it answers and the backends it decides."""

    id: str
    title: str
    kind: Literal["source", "artifact", "runtime"]
    question: str
    backends: tuple[str, ...] = ()  # the GPU backends the layer decides ("rocm", "vulkan"); () = all
    vendors: tuple[str, ...] = ("amd",)  # whose targets' matrices have this row (rules/layers.yaml `vendors:`)
    os: tuple[str, ...] = json_field(default=("linux",), skip=True)  # the releases (OS) it is a row of (`os:`)

    @property
    def rocm_only(self) -> bool:
        return self.backends == ("rocm",)


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
    os: str = "linux"  # the release's OS the matrix answers for (`--os`; written to JSON when not Linux)

    def route(self, target: str) -> Any:
        return next((r for r in self.routes if r.target == target), None)

    def cell(self, layer: str, target: str) -> Verdict:
        return self.cells[(layer, target)]

    def row(self, layer: str) -> list[Verdict]:
        return [self.cells[(layer, t)] for t in self.targets]

    # the status view the answer reads (gfxgate.answer.view.StatusView), as the stored timeline implements it too
    def status_of(self, layer: str, target: str) -> Status | None:
        cell = self.cells.get((layer, target))
        return cell.status if cell is not None else None

    def where_of(self, layer: str, target: str) -> str:
        cell = self.cells.get((layer, target))
        return (
            f"at {cell.evidence[0].location}"
            if cell is not None and cell.evidence and cell.evidence[0].location
            else ""
        )

    def evidence_of(self, layer: str, target: str) -> tuple[Evidence, ...]:
        cell = self.cells.get((layer, target))
        return cell.evidence if cell is not None else ()

    def to_json(self) -> dict[str, Any]:
        """The matrix as ``gfxgate scan --format json`` writes it: each layer with its cells in target order."""
        return document(
            "gate-matrix",
            {
                "targets": to_json(self.targets),
                "sources": to_json(self.sources),
                "layers": [{**layer.to_json(), "cells": to_json(self.row(layer.id))} for layer in self.layers],
                "routes": to_json(self.routes),
                "notes": to_json(self.notes),
                **({"os": self.os} if self.os != "linux" else {}),
            },
            version=JSON_SCHEMA_VERSION,
        )
