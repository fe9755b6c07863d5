"""Upstream's own documentation as a compared source: where Ollama's docs and its release build disagree.

The ``ollama-docs`` row says whether the docs at a version list a target among the supported Linux LLVM targets; the
release rows say whether that release builds and ships it. Users read the docs, so a matrix whose two sides disagree
says so in its notes, each side with its evidence line; the sentence is built from the two cells, never fixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Mapping, NamedTuple

from gfxgate.model import Status

if TYPE_CHECKING:  # annotations only
    from gfxgate.gate.matrix import GateMatrix
    from gfxgate.model import Verdict

DOCS_LAYER = "ollama-docs"
RELEASE_LAYERS = ("cmake-presets", "release-packaging")  # what the release compiles and what it keeps in the package


class DocsCell(NamedTuple):
    """What a disagreement note reads of one cell: its status, summary and first evidence location."""

    status: Status
    summary: str
    where: str


def cells_of_matrix(matrix: GateMatrix) -> tuple[dict[tuple[str, str], DocsCell], dict[str, str]]:
    """The cells and layer titles of a :class:`GateMatrix`."""

    def where(verdict: Verdict) -> str:
        located = [e for e in verdict.evidence if e.location is not None]
        return str(located[0].location) if located else ""

    cells = {key: DocsCell(v.status, v.summary, where(v)) for key, v in matrix.cells.items()}
    return cells, {layer.id: layer.title for layer in matrix.layers}


def cells_of_json(matrix: Mapping[str, Any]) -> tuple[dict[tuple[str, str], DocsCell], dict[str, str]]:
    """The cells and layer titles of a gate matrix's JSON (``gfxgate scan --format json``: what `diff` compares)."""
    cells = {}
    for layer in matrix.get("layers") or ():
        for cell in layer.get("cells") or ():
            located = [e.get("where") for e in cell.get("evidence") or () if e.get("where")]
            cells[(layer["id"], cell["target"])] = DocsCell(
                Status(cell["status"]), cell.get("summary") or "", located[0] if located else ""
            )
    return cells, {layer["id"]: layer.get("title", layer["id"]) for layer in matrix.get("layers") or ()}


def disagreements(
    cells: Mapping[tuple[str, str], DocsCell], titles: Mapping[str, str], targets: Iterable[str]
) -> tuple[tuple[str, str], ...]:
    """(target, note) per target and release row that contradicts the docs: docs list it and the release blocks it,
    or the docs leave it out and the release builds and ships it."""
    notes = []
    for target in targets:
        docs = cells.get((DOCS_LAYER, target))
        if docs is None or docs.status not in (Status.ALLOWED, Status.BLOCKED):
            continue
        ref = docs.where.split(":", 1)[0].split("@", 1)[-1] if docs.where else "this version"
        release = [(layer, cells.get((layer, target))) for layer in RELEASE_LAYERS]
        if docs.status is Status.ALLOWED:
            for layer, cell in release:
                if cell is not None and cell.status is Status.BLOCKED:
                    notes.append(
                        (
                            target,
                            f"the docs at {ref} list {target} ({docs.where}), but {titles.get(layer, layer)} "
                            f"is blocked: {cell.summary} ({cell.where})",
                        )
                    )
        elif all(cell is not None and cell.status is Status.ALLOWED for _, cell in release):
            notes.append(
                (
                    target,
                    f"the docs at {ref} do not list {target} ({docs.where}), but the release builds and ships "
                    "it: "
                    + "; ".join(
                        f"{titles.get(layer, layer)}: {cell.summary} ({cell.where})"
                        for layer, cell in release
                        if cell is not None
                    ),
                )
            )
    return tuple(notes)
