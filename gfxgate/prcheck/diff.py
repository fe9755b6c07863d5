"""Compare two gate matrices cell by cell: what flipped, for which target, with both evidences.

The input is the JSON form of :class:`gfxgate.gate.matrix.GateMatrix` (``gfxgate scan --format json``),
so a diff can compare reports made on different machines or days. A change is classified by the
statuses alone:

- ``regression``: both decided, the new one more restrictive (allowed → blocked, partial → override-required …)
- ``improvement``: both decided, the new one less restrictive
- ``drift``: the new status decides nothing (→ unknown, not scanned) while the old one was different —
  typically a rule that stopped matching upstream
- ``resolved``: the old status decided nothing, the new one does
- ``evidence``: same status, but the evidence moved (other file, line or text)
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping
import re

from gfxgate.errors import NetworkError
from gfxgate.model import RANK, Status
from gfxgate.serial import JsonRecord, document, json_dataclass, json_field, json_key
from gfxgate.sources.resolve import load_pins
from gfxgate.gate.docs import cells_of_json, disagreements

REGRESSION, IMPROVEMENT, DRIFT, RESOLVED, EVIDENCE = "regression", "improvement", "drift", "resolved", "evidence"
KINDS = (REGRESSION, DRIFT, IMPROVEMENT, RESOLVED, EVIDENCE)  # report order: worst first


def classify(old: str, new: str) -> str | None:
    """The kind of change from status ``old`` to status ``new`` (``None``: same status)."""
    if old == new:
        return None
    old_s, new_s = Status(old), Status(new)
    if new_s not in RANK:
        return DRIFT
    if old_s not in RANK:
        return RESOLVED
    return REGRESSION if RANK[new_s] < RANK[old_s] else IMPROVEMENT


def _evidence_key(cell: Mapping[str, Any]) -> tuple:
    """Evidence without the version it was read at: a bump that only renames the tag changes nothing."""
    out = []
    for ev in cell.get("evidence") or ():
        loc = ev.get("location") or {}
        out.append((ev.get("source"), loc.get("repo"), loc.get("path"), loc.get("line"), ev.get("text")))
    return tuple(out)


@json_dataclass(frozen=True)
class CellChange(JsonRecord):
    layer: str
    layer_title: str
    target: str
    kind: str
    old: Mapping[str, Any] = json_field(value=lambda cell: slim_verdict(cell))  # the verdict JSON of the old matrix
    new: Mapping[str, Any] = json_field(value=lambda cell: slim_verdict(cell))

    old_status = json_key("old", "status")
    new_status = json_key("new", "status")

    @property
    def rule_ids(self) -> tuple[str, ...]:
        """The gate rules whose evidence decides either side (sorted, unique)."""
        return tuple(sorted({e["source"] for side in (self.old, self.new) for e in side.get("evidence") or ()}))


def slim_verdict(cell: Mapping[str, Any]) -> dict[str, Any]:
    """A verdict for side-by-side display: status, summary, evidence (where, text, rule), remedy, reason."""
    return {
        "status": cell["status"],
        "summary": cell.get("summary") or "",
        "evidence": [
            {
                "where": e.get("where"),
                "text": e.get("text") or "",
                "rule": e.get("source"),
                "commit": (e.get("location") or {}).get("commit"),
            }
            for e in cell.get("evidence") or ()
        ],
        "remedy": cell.get("remedy"),
        "reason": cell.get("reason"),
    }


@json_dataclass(frozen=True)
class MatrixDiff(JsonRecord):
    targets: tuple[str, ...]
    old_sources: tuple[Mapping[str, Any], ...]
    new_sources: tuple[Mapping[str, Any], ...]
    changes: tuple[CellChange, ...] = json_field(before={"counts": lambda d: d.counts()})
    notes: tuple[str, ...] = ()

    def of_kind(self, kind: str) -> list[CellChange]:
        return [c for c in self.changes if c.kind == kind]

    def regressions(self, targets: Iterable[str] | None = None) -> list[CellChange]:
        wanted = None if targets is None else set(targets)
        return [c for c in self.of_kind(REGRESSION) if wanted is None or c.target in wanted]

    def counts(self) -> dict[str, int]:
        return {kind: len(self.of_kind(kind)) for kind in KINDS}

    def to_json(self) -> dict[str, Any]:
        return document("gate-matrix-diff", super().to_json())


def _slim_sources(matrix: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    # name, ref and commit only: a URL may be a local mirror path and says nothing about the version
    return tuple({"name": s["name"], "ref": s["ref"], "commit": s.get("commit")} for s in matrix.get("sources") or ())


def diff_matrices(old: Mapping[str, Any], new: Mapping[str, Any]) -> MatrixDiff:
    """Every cell present in both matrices whose status or evidence differs, in the new matrix's order."""

    def cells(matrix):
        out = {}
        for layer in matrix["layers"]:
            for cell in layer["cells"]:
                out[(layer["id"], cell["target"])] = (layer, cell)
        return out

    old_cells, new_cells = cells(old), cells(new)
    targets = tuple(t for t in new["targets"] if t in old["targets"])
    notes = []
    for t in old["targets"]:
        if t not in new["targets"]:
            notes.append(f"target {t} is only in the old report")
    for t in new["targets"]:
        if t not in old["targets"]:
            notes.append(f"target {t} is only in the new report")
    old_layers = [layer["id"] for layer in old["layers"]]
    new_layers = [layer["id"] for layer in new["layers"]]
    notes += [f"layer {lid} is only in the old report" for lid in old_layers if lid not in new_layers]
    notes += [f"layer {lid} is only in the new report" for lid in new_layers if lid not in old_layers]
    changes = []
    for layer in new["layers"]:
        if layer["id"] not in old_layers:
            continue
        for target in targets:
            _, before = old_cells[(layer["id"], target)]
            _, after = new_cells[(layer["id"], target)]
            kind = classify(before["status"], after["status"])
            if kind is None and _evidence_key(before) != _evidence_key(after):
                kind = EVIDENCE
            if kind is not None:
                changes.append(CellChange(layer["id"], layer["title"], target, kind, before, after))
    notes += _docs_notes(old, new, targets)
    return MatrixDiff(targets, _slim_sources(old), _slim_sources(new), tuple(changes), tuple(notes))


def unreadable_sources(matrix: Mapping[str, Any]) -> dict[str, int]:
    """The pinned sources a scan could not read (cells unknown with "source not available: NAME: …"), with how
    many cells each left unknown; a layout or a source a release does not have (ggml before ollama vendored it)
    is no source a user could give."""
    pinned = set(load_pins().sources)
    out: dict[str, int] = {}
    for layer in matrix.get("layers", ()):
        for cell in layer.get("cells", ()):
            match = re.match(r"source not available: ([A-Za-z0-9._-]+): ", cell.get("reason") or "")
            if cell.get("status") == "unknown" and match and match.group(1) in pinned:
                out[match.group(1)] = out.get(match.group(1), 0) + 1
    return out


def fail_closed(old: Mapping[str, Any], new: Mapping[str, Any], *, command: str) -> None:
    """A comparison where a side could not read a source is no comparison: exit 5 naming the source, never
    "No cell changed status" (a PR check that passes because it could not look)."""
    for side, matrix in (("old", old), ("new", new)):
        missing = unreadable_sources(matrix)
        if missing:
            name, cells = next(iter(missing.items()))
            raise NetworkError(
                f"{command}: the {side} side could not read {name} ({cells} cell(s) unknown: source not "
                f"available); give --source {name}=CLONE (a local clone with its tags) and scan again"
            )


def _docs_notes(old: Mapping[str, Any], new: Mapping[str, Any], targets: tuple[str, ...]) -> list[str]:
    """Where Ollama's docs and the release disagree on the new side (gfxgate.gate.docs), and the old side's notes for
    targets the new one no longer has a disagreement for: a change can make the docs stale, or right again."""
    before, after = (disagreements(*cells_of_json(side), targets) for side in (old, new))
    now = {target for target, _ in after}
    out = [f"new: {note}" for _, note in after]
    out += [f"old, no longer in the new report: {note}" for target, note in before if target not in now]
    return out
