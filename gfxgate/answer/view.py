"""What the answer reads of one release: the protocols a live gate matrix and a stored timeline implement.

:class:`StatusView` is the status of each (layer, target) at one release, where it was read and its evidence: a
live ``GateMatrix`` (gate/matrix.py) and the embedded timeline at one release (``timeline/snapshot.py:
Cells.at(tag)``) both implement it, so a check written once over it (the override checks,
:mod:`gfxgate.answer.override`) gives the same verdict whichever way the release was read. :class:`MatrixView` is
what ``decide`` reads besides: the cells themselves (their summaries and remedies), the layers, the targets and the
sources' refs.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol, Sequence

from gfxgate.model import Evidence, Status, Verdict


class StatusView(Protocol):
    """The statuses of one release, per (layer, target)."""

    def status_of(self, layer: str, target: str) -> Status | None:
        """The cell's status; None when the view has no such cell (a target or layer it does not hold)."""
        ...

    def where_of(self, layer: str, target: str) -> str:
        """Where the status was read, as a clause's words ("at repo@tag:path:line"); "" when not known."""
        ...

    def evidence_of(self, layer: str, target: str) -> tuple[Evidence, ...]:
        """The cell's evidence (a stored timeline keeps none per cell: ())."""
        ...


class MatrixView(StatusView, Protocol):
    """A gate matrix as ``decide`` reads it: its cells, layers, targets and the sources' refs."""

    @property
    def cells(self) -> Mapping[tuple[str, str], Verdict]: ...

    @property
    def layers(self) -> Sequence[Any]: ...  # each with .id, .title and .backends

    @property
    def targets(self) -> Sequence[str]: ...

    @property
    def sources(self) -> Sequence[Any]: ...  # each with .name and .ref
