"""The support timeline as data: per target, runs of releases with the same route, bounded by flips with evidence.

A :class:`Timeline` is computed from the release tags (``gfxgate.timeline.compute``) or loaded from the
embedded timeline snapshot; both give the same JSON (``to_json`` / ``from_json``), so the formatters, the
table's columns and the answer sentence are derived the same way whichever way it was made.
"""

from __future__ import annotations

from dataclasses import field, replace
from typing import Any, Mapping

from gfxgate.model import PerBackend
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, json_dataclass, json_field

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class Ev(JsonRecord):
    """One piece of evidence, slim: where (``repo@tag:path:line``), the matched line, the rule, and a link."""

    where: str
    text: str = ""
    source: str = ""
    url: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Ev:
        return cls(data["where"], data.get("text", ""), data.get("source", ""), data.get("url"))


@json_dataclass(frozen=True)
class Flip(JsonRecord):
    """A layer of one target that changed between two consecutive releases."""

    tag: str
    previous: str = json_field(name="previous_tag")
    layer: str
    old: str
    new: str
    kind: str
    evidence: tuple[Ev, ...] = ()
    reason: str | None = (
        None  # set where the new cell has no evidence (unknown: why); the evidence is then the old cell's
    )

    def __post_init__(self) -> None:
        if not self.evidence and not self.reason:
            raise ValueError(f"flip of {self.layer} at {self.tag} without evidence or reason")

    @property
    def change(self) -> str:
        """``layer old → new``; a change of evidence only (the status stays) says so instead of ``X → X``."""
        if self.old == self.new:
            return f"{self.layer} still {self.new}, evidence moved"
        return f"{self.layer} {self.old} → {self.new}"

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Flip:
        return cls(
            data["tag"],
            data["previous_tag"],
            data["layer"],
            data["old"],
            data["new"],
            data["kind"],
            tuple(Ev.from_json(e) for e in data["evidence"]),
            data.get("reason"),
        )


@dataclass(frozen=True)
class Refusal(JsonRecord):
    """A layer whose cell refuses a backend's routes, with the first line that says so."""

    layer: str
    evidence: Ev

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Refusal:
        return cls(data["layer"], Ev.from_json(data["evidence"]))


@dataclass(frozen=True)
class BackendState(JsonRecord):
    backend: str
    state: str  # route, none, undecided
    label: str | None = None
    phrase: str | None = None
    reason: str | None = None  # the first reason for none / undecided
    evidence: tuple[Ev, ...] = ()  # why the route applies, or the cell that refuses it
    refused_by: tuple[Refusal, ...] = ()  # state none: each refusing layer once, in the order its evidence comes
    steps: tuple[str, ...] = ()  # state route: the workaround ids of the route's steps, in order (the stored Route)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> BackendState:
        return cls(
            data["backend"],
            data["state"],
            data.get("label"),
            data.get("phrase"),
            data.get("reason"),
            tuple(Ev.from_json(e) for e in data.get("evidence", ())),
            tuple(Refusal.from_json(r) for r in data.get("refused_by", ())),
            tuple(data.get("steps", ())),
        )


@json_dataclass(frozen=True)
class Cell(JsonRecord, PerBackend):
    """Releases ``first``..``last`` (``tags`` of them) over which one target's route does not change."""

    target: str
    first: str = json_field(name="from")
    last: str = json_field(name="to")
    tags: int
    route: str  # route rule id of the best route, or "undecided"
    label: str
    certain: bool = json_field(after={"reason": lambda cell: cell.reason})
    backends: tuple[BackendState, ...]
    steps: tuple[str, ...]  # workaround ids of the best route
    layers: tuple[tuple[str, str], ...] = json_field(value=dict)  # (layer, status) at ``first``
    evidence: tuple[Ev, ...]  # why the best route applies at ``first`` (or why none is decided)
    start: tuple[Flip, ...] = ()  # the flips at ``first`` (none for the first release of the range)
    end: tuple[Flip, ...] = ()  # the flips at the release after ``last``
    docs: tuple[str, ...] = ()  # where Ollama's docs and the release disagree in first..last (gfxgate.gate.docs)
    reason: str | None = json_field(default=None, skip=True)  # written next to ``certain``

    def __post_init__(self) -> None:
        if not self.evidence and not self.reason:
            raise ValueError(f"timeline cell {self.target} {self.first}..{self.last} without evidence or reason")

    @property
    def signature(self) -> tuple:
        return (self.route, self.label, self.certain, tuple((b.backend, b.state, b.label) for b in self.backends))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Cell:
        return cls(
            target=data["target"],
            first=data["from"],
            last=data["to"],
            tags=data["tags"],
            route=data["route"],
            label=data["label"],
            certain=data["certain"],
            reason=data.get("reason"),
            backends=tuple(BackendState.from_json(b) for b in data["backends"]),
            steps=tuple(data["steps"]),
            layers=tuple(data["layers"].items()),
            evidence=tuple(Ev.from_json(e) for e in data["evidence"]),
            start=tuple(Flip.from_json(f) for f in data["start"]),
            end=tuple(Flip.from_json(f) for f in data["end"]),
            docs=tuple(data.get("docs") or ()),
        )


@dataclass(frozen=True)
class Clause(JsonRecord):
    """One clause of the answer sentence, with the evidence of the flip that starts it."""

    backend: str
    tag: str
    text: str
    evidence: tuple[Ev, ...]


@dataclass(frozen=True)
class Unreadable(JsonRecord):
    """A rule that could not be evaluated at a probed release because its source could not be read."""

    rule: str
    tag: str
    source: str  # the source that could not be read (llama-cpp: the tag ollama's LLAMA_CPP_VERSION names)
    reason: str
    hint: str | None = None  # how to supply it; None when nothing can (ggml not in ollama at that release)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Unreadable:
        return cls(data["rule"], data["tag"], data["source"], data["reason"], data.get("hint"))


@json_dataclass(frozen=True)
class MissingSource(JsonRecord):
    """The unreadable records of one source (and hint), summarised: one line instead of one per rule and release."""

    source: str
    hint: str | None
    tags: tuple[str, ...]  # the probed releases where it could not be read, in release order
    rules: tuple[str, ...] = json_field(after={"summary": lambda missing: missing.line})

    @property
    def line(self) -> str:
        span = self.tags[0] if len(self.tags) == 1 else f"{self.tags[0]} … {self.tags[-1]}"
        what = (
            f"{self.source} could not be read at {len(self.tags)} probed release(s) ({span}): "
            f"{len(self.rules)} rule(s) unknown there ({', '.join(self.rules)})"
        )
        return what + (f"; {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class RouteKey:
    """What the formatters need of rules/routes.yaml, taken by whoever builds the timeline (``compute``,
    ``snapshot.load``) so that formatting reads no rules: each route's colour and legend label, the colour of an
    undecided cell, and the layers each backend's routes read (the flips the answer sentence cites)."""

    colours: tuple[tuple[str, str, str], ...]  # (route id, colour, legend label), in rules order
    undecided_colour: str
    layers: tuple[tuple[str, frozenset[str]], ...]  # (backend, the layers its routes need or cover)
    device_steps: tuple[tuple[str, str], ...] = ()  # (workaround id, short setting) a route may need for the device

    @classmethod
    def of(cls, rules) -> RouteKey:
        """The key of a loaded ``RouteRules``."""
        layers: dict[str, set[str]] = {}
        for rule in rules.routes:
            layers.setdefault(rule.backend, set()).update(
                {layer for layer, _ in rule.needs} | {layer for s in rule.steps for layer, _ in s.covers}
            )
        return cls(
            tuple((r.id, r.colour, r.legend) for r in rules.routes),
            rules.undecided_colour,
            tuple((backend, frozenset(names)) for backend, names in layers.items()),
            tuple((step.workaround, step.short) for step in rules.device_steps),
        )

    def conditions(self, cell: Cell) -> tuple[str, ...]:
        """The device settings ``cell``'s route needs besides its own steps ("+ OLLAMA_IGPU_ENABLE=1")."""
        return tuple(short for workaround, short in self.device_steps if workaround in cell.steps)

    def backend_layers(self, backend: str) -> frozenset[str]:
        return dict(self.layers).get(backend, frozenset())


@dataclass(frozen=True)
class Row:
    target: str
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Timeline:
    repo: str
    tags: tuple[str, ...]  # the releases of the range, in version order
    probed: int
    method: str  # bisect, every-tag
    prereleases: bool
    rows: tuple[Row, ...]
    origin: str  # live, snapshot
    key: RouteKey  # of rules/routes.yaml, for the formatters (not in the JSON)
    notes: tuple[str, ...] = field(default=())
    backends: tuple[tuple[str, str], ...] = (("rocm", "ROCm"), ("vulkan", "Vulkan"), ("cpu", "CPU"))
    unreadable: tuple[Unreadable, ...] = field(default=())
    os: str = "linux"  # the release's OS (`--os`): the rules, routes and workarounds it was computed with

    def missing_sources(self) -> list[MissingSource]:
        """The unreadable records grouped by source and hint, in the order the sources first fail."""
        groups: dict[tuple[str, str | None], list[Unreadable]] = {}
        order = {t: i for i, t in enumerate(self.tags)}
        for u in sorted(self.unreadable, key=lambda u: (order.get(u.tag, len(order)), u.rule)):
            groups.setdefault((u.source, u.hint), []).append(u)
        return [
            MissingSource(source, hint, tuple(dict.fromkeys(u.tag for u in us)), tuple(sorted({u.rule for u in us})))
            for (source, hint), us in groups.items()
        ]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(r.target for r in self.rows)

    def row(self, target: str) -> Row:
        return next(r for r in self.rows if r.target == target)

    def columns(self) -> list[tuple[str, str]]:
        """Release ranges over which no target's route changes (the Markdown table's columns)."""
        starts = sorted({self.tags.index(c.first) for r in self.rows for c in r.cells} | {0})
        bounds = starts + [len(self.tags)]
        return [(self.tags[a], self.tags[b - 1]) for a, b in zip(bounds, bounds[1:])]

    def cell_at(self, target: str, tag: str) -> Cell:
        i = self.tags.index(tag)
        return next(c for c in self.row(target).cells if self.tags.index(c.first) <= i <= self.tags.index(c.last))

    def select(self, targets: list[str] | None = None, first: str | None = None, last: str | None = None) -> Timeline:
        """A sub-timeline: some targets, a window of releases (cells clipped, flips outside the window dropped)."""
        lo = self.tags.index(first) if first else 0
        hi = self.tags.index(last) if last else len(self.tags) - 1
        window = self.tags[lo : hi + 1]
        rows = []
        for row in self.rows:
            if targets is not None and row.target not in targets:
                continue
            cells = []
            for c in row.cells:
                a, b = self.tags.index(c.first), self.tags.index(c.last)
                if b < lo or a > hi:
                    continue
                a2, b2 = max(a, lo), min(b, hi)
                cells.append(
                    replace(
                        c,
                        first=self.tags[a2],
                        last=self.tags[b2],
                        tags=b2 - a2 + 1,
                        start=c.start if a2 == a else (),
                        end=c.end if b2 == b else (),
                    )
                )
            rows.append(Row(row.target, tuple(cells)))
        if targets is not None:
            rows.sort(key=lambda r: targets.index(r.target))
        kept = set(window)
        return replace(
            self, tags=window, rows=tuple(rows), unreadable=tuple(u for u in self.unreadable if u.tag in kept)
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any], key: RouteKey, *, origin: str | None = None) -> Timeline:
        return cls(
            repo=data["repo"],
            tags=tuple(data["releases"]),
            probed=data["range"]["probed"],
            method=data["method"],
            prereleases=data["prereleases"],
            origin=origin or data["origin"],
            key=key,
            notes=tuple(data.get("notes", ())),
            backends=tuple((b["id"], b["title"]) for b in data["backends"]),
            unreadable=tuple(Unreadable.from_json(u) for u in data.get("unreadable", ())),
            rows=tuple(Row(t["target"], tuple(Cell.from_json(c) for c in t["cells"])) for t in data["targets"]),
            os=data.get("os", "linux"),
        )
