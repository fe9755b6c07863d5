"""The one-target answer: "gfx900: ROCm out of the box up to v0.12.3; from v0.12.4 ROCm needs …; Vulkan opt-in from …".

Computed from the timeline's cells, never written: per backend, the runs of releases over which that backend's
state and route phrase stay the same; each clause carries the evidence of the flips that start its run (the
layers that backend's routes read), or, for the first release of the range, the evidence of the route itself.
A run with no route whose refusing layers change inside it (``BackendState.refused_by``; compute splits cells
there) cites each refusal with the releases it covers: "ROCm has no route up to v0.1.20 (gen_linux.sh), v0.1.21–v0.5.12
(clr@rocm-6.0.0:…)", each a clause with its own evidence, never the first refusal for the whole run.
"""

from __future__ import annotations

from typing import Any

from gfxgate.serial import JsonRecord, document, json_dataclass, json_field
from gfxgate.timeline.model import SCHEMA_VERSION, Cell, Clause, Ev, Timeline


@json_dataclass(frozen=True)
class Answer(JsonRecord):
    target: str = json_field(skip=True)  # the caller writes it with the cells
    sentence: str
    clauses: tuple[Clause, ...]


def _runs(cells: tuple[Cell, ...], backend: str) -> list[tuple[Cell, Cell, str, str | None, list[Cell]]]:
    """(first cell, last cell, state, phrase, the cells) for each run of cells with the same state of ``backend``."""
    runs: list[list[Any]] = []
    for c in cells:
        b = c.backend(backend)
        key = (b.state, b.phrase) if b else ("undecided", None)
        if runs and (runs[-1][2], runs[-1][3]) == key:
            runs[-1][1] = c
            runs[-1][4].append(c)
        else:
            runs.append([c, c, key[0], key[1], [c]])
    return [tuple(r) for r in runs]


def _refusals(run: list[Cell], backend: str) -> list[tuple[Cell, Cell, tuple[Ev, ...]]]:
    """The run's cells grouped by the layers that refuse ``backend``: (first, last, evidence) per refusal.

    One "has no route" over many releases can have several reasons (no ROCm build up to v0.1.20, then clr's missing
    row at the release's ROCm): each is said with the releases it covers, citing first the layer that starts it."""
    parts: list[list[Any]] = []
    for c in run:
        state = c.backend(backend)
        refusals = state.refused_by if state else ()
        layers = tuple(r.layer for r in refusals)
        if parts and parts[-1][3] == layers:
            parts[-1][1] = c
            continue
        before = set(parts[-1][3]) if parts else set()
        new = [r.evidence for r in refusals if r.layer not in before]
        evidence = tuple(dict.fromkeys(new + [r.evidence for r in refusals] + list(state.evidence if state else ())))
        parts.append([c, c, evidence, layers])
    return [(a, b, ev) for a, b, ev, _ in parts]


def _span(first: Cell, last: Cell) -> str:
    return first.first if first.first == last.last else f"{first.first}–{last.last}"


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
    groups: list[tuple[str, list[str], list[Clause]]] = []
    for backend, title in timeline.backends:
        if backend == "cpu" or all(c.backend(backend) is None for c in cells):
            continue  # the CPU fallback, or a backend no route of this target's vendor has (ROCm for sm_61)
        runs = _runs(cells, backend)
        undecided_before = None
        if len(runs) > 1 and runs[0][2] == "undecided":
            undecided_before = runs[1][0].first
            runs = runs[1:]
        if backend != "rocm":  # a backend that did not exist yet: start the clause where it appears
            while len(runs) > 1 and runs[0][2] == "none":
                runs = runs[1:]
        group: list[Clause] = []
        pieces: list[str] = []  # the sentence's text of each run (a run with several refusals cites each)
        for i, (start, end, state, phrase, run) in enumerate(runs):
            desc = _describe(state, phrase)
            at_start = start.first == first_tag
            more = len(runs) > 1
            if i == 0:
                if more and (at_start or undecided_before):
                    text = f"{title} {desc} up to {end.last}" + (
                        f" (from {start.first}; undecided before)" if undecided_before else ""
                    )
                elif at_start:
                    text = f"{title} {desc} at every release"
                else:
                    text = f"{title} {desc} from {start.first}" + (" (undecided before)" if undecided_before else "")
            elif backend == "rocm":
                text = f"from {start.first} {title} {desc}"
            else:
                text = f"{desc.removeprefix('has ')} from {start.first}"
            parts = _refusals(run, backend) if state == "none" else []
            if len(parts) > 1:  # each refusal with the releases it covers, and its own evidence
                head = (
                    text.removesuffix(f" up to {end.last}") if text.endswith(f" up to {end.last}") and i == 0 else None
                )
                spans = []
                for n, (a, b, evidence) in enumerate(parts):
                    where = evidence[0].where if evidence else "no evidence line"
                    span = f"up to {b.last}" if n == 0 and head is not None else _span(a, b)
                    spans.append(f"{span} ({where})")
                    group.append(Clause(backend, a.first, f"{title} {desc} {span}", evidence))
                pieces.append(f"{head} " + ", ".join(spans) if head is not None else f"{text}: " + ", ".join(spans))
                continue
            group.append(
                Clause(
                    backend,
                    start.first,
                    text,
                    _evidence(start, backend, at_start, timeline.key.backend_layers(backend)),
                )
            )
            pieces.append(text)
        if group:
            groups.append((backend, pieces, group))
    joined = []
    for backend, pieces, _ in groups:
        joined.append(("; " if backend == "rocm" else ", ").join(pieces))
    sentence = f"{target}: " + "; ".join(joined)
    return Answer(target, sentence, tuple(c for _, _, g in groups for c in g))


def timeline_json(timeline: Timeline) -> dict[str, Any]:
    """The timeline's JSON document (render's json, the embedded snapshot): here, beside the answer sentence it
    holds, so timeline/model.py imports nothing from this module (the model <-> sentence import circle of before)."""
    # Not a field list, so not json_field: a different view of the timeline (serial.py's "aggregate"). Half its
    # keys are derived from the whole timeline, not from one field: "range" (the first and last tag, their
    # count, ``probed``), "columns", each target's answer sentence (which reads every row) and
    # "missing_sources"; ``rows`` become "targets" with the answer spliced in; ``key`` is left out; and the keys
    # follow the document's reading order, not the fields'. Most keys would be a json_field exception.
    return document(
        "support-timeline",
        {
            "repo": timeline.repo,
            **({"os": timeline.os} if timeline.os != "linux" else {}),
            "origin": timeline.origin,
            "method": timeline.method,
            "prereleases": timeline.prereleases,
            "range": {
                "from": timeline.tags[0],
                "to": timeline.tags[-1],
                "tags": len(timeline.tags),
                "probed": timeline.probed,
            },
            "releases": list(timeline.tags),
            "backends": [{"id": b, "title": t} for b, t in timeline.backends],
            "columns": [{"from": a, "to": b} for a, b in timeline.columns()],
            "targets": [
                {
                    "target": row.target,
                    **answer(timeline, row.target).to_json(),
                    "cells": [c.to_json() for c in row.cells],
                }
                for row in timeline.rows
            ],
            "notes": list(timeline.notes),
            "missing_sources": [m.to_json() for m in timeline.missing_sources()],
            "unreadable": [u.to_json() for u in timeline.unreadable],
        },
        version=SCHEMA_VERSION,
    )
