"""The one-target answer: "gfx900: ROCm out of the box up to v0.12.3; from v0.12.4 ROCm needs …; Vulkan opt-in from …".

Computed from the timeline's cells, never written: per backend, the runs of releases over which that backend's
state and route phrase stay the same; each clause carries the evidence of the flips that start its run (the
layers that backend's routes read), or, for the first release of the range, the evidence of the route itself.
"""

from __future__ import annotations

from typing import Any

from gfxgate.serial import JsonRecord, json_dataclass, json_field
from gfxgate.timeline.model import Cell, Clause, Ev, Timeline


@json_dataclass(frozen=True)
class Answer(JsonRecord):
    target: str = json_field(skip=True)  # the caller writes it with the cells
    sentence: str
    clauses: tuple[Clause, ...]


def _runs(cells: tuple[Cell, ...], backend: str) -> list[tuple[Cell, Cell, str, str | None]]:
    """(first cell, last cell, state, phrase) for each run of cells with the same state of ``backend``."""
    runs: list[list[Any]] = []
    for c in cells:
        b = c.backend(backend)
        key = (b.state, b.phrase) if b else ("undecided", None)
        if runs and (runs[-1][2], runs[-1][3]) == key:
            runs[-1][1] = c
        else:
            runs.append([c, c, key[0], key[1]])
    return [tuple(r) for r in runs]


def _evidence(cell: Cell, backend: str, first_of_range: bool, layers: frozenset[str]) -> tuple[Ev, ...]:
    """The evidence of the flips at ``cell`` on ``layers`` (those ``backend``'s routes read), else of its state."""
    state = cell.backend(backend)
    if not first_of_range and cell.start:
        flips = [f for f in cell.start if f.layer in layers] or list(cell.start)
        found = tuple(e for f in flips for e in f.evidence)
        if found:
            return found
    return state.evidence if state else ()


def _describe(state: str, phrase: str | None) -> str:
    if state == "route":
        return phrase or "works"
    return "has no route" if state == "none" else "undecided"


def answer(timeline: Timeline, target: str) -> Answer:
    cells = timeline.row(target).cells
    first_tag = timeline.tags[0]
    groups: list[list[Clause]] = []
    for backend, title in timeline.backends:
        if backend == "cpu":
            continue
        runs = _runs(cells, backend)
        undecided_before = None
        if len(runs) > 1 and runs[0][2] == "undecided":
            undecided_before = runs[1][0].first
            runs = runs[1:]
        if backend != "rocm":  # a backend that did not exist yet: start the clause where it appears
            while len(runs) > 1 and runs[0][2] == "none":
                runs = runs[1:]
        group: list[Clause] = []
        for i, (start, end, state, phrase) in enumerate(runs):
            desc = _describe(state, phrase)
            at_start = start.first == first_tag
            more = len(runs) > 1
            if i == 0:
                if more and (at_start or undecided_before):
                    text = f"{title} {desc} up to {end.last}" + (f" (from {start.first}; undecided before)" if undecided_before else "")
                elif at_start:
                    text = f"{title} {desc} at every release"
                else:
                    text = f"{title} {desc} from {start.first}" + (" (undecided before)" if undecided_before else "")
            elif backend == "rocm":
                text = f"from {start.first} {title} {desc}"
            else:
                text = f"{desc.removeprefix('has ')} from {start.first}"
            group.append(Clause(backend, start.first, text, _evidence(start, backend, at_start, timeline.key.backend_layers(backend))))
        if group:
            groups.append(group)
    joined = []
    for g in groups:
        if g[0].backend == "rocm":
            joined.append("; ".join(c.text for c in g))
        else:
            joined.append(", ".join(c.text for c in g))
    sentence = f"{target}: " + "; ".join(joined)
    return Answer(target, sentence, tuple(c for g in groups for c in g))
