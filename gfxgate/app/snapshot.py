"""`build(SnapshotBuildRequest)`: the embedded snapshots of the gate rules' facts at the pins and at each pin set;
`show()`: the embedded snapshot. (`gfxgate snapshot timeline` is ``app.timeline.store``.)"""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.gate.snapshot import Snapshot


@dataclass(frozen=True)
class SnapshotBuildRequest:
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    output: Path | None = None  # one file (the pins' snapshot only); none: the shipped files, one per pin set too
    refs: tuple[str, ...] = ()  # refused: the snapshot records the pins


@dataclass(frozen=True)
class BuiltSnapshot:
    path: Path  # where it goes (its folder made)
    document: str  # the snapshot's JSON
    states: dict[str, int]  # rule state -> how many rules


def build(req: SnapshotBuildRequest) -> Iterator[BuiltSnapshot]:
    """Each snapshot as it is built (the caller writes one before the next is read)."""
    from gfxgate.errors import UsageError
    from gfxgate.gate import snapshot as snap
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.sources.resolve import SourceSet, load_pins

    if req.refs:
        raise UsageError(
            "the snapshot records the pins; use `gfxgate pins bump` or edit rules/pins.toml to change a version"
        )
    pins = load_pins()
    # the pins, then (unless an output names one file) each pin set of rules/pins.toml into its own pins-NAME.json
    jobs = [(pins, req.output or snap.default_path())]
    if req.output is None:
        jobs += [(pins.with_pin_set(name), snap.pin_set_path(name)) for name in sorted(pins.pin_sets)]
    for chosen, target in jobs:
        sourceset = SourceSet(chosen, sources=req.sources, offline=req.offline)
        try:
            # a source beyond the release that cannot be read keeps the shipped snapshot's facts of its pin
            data = snap.build(
                default_rules(), sourceset, chosen, previous=snap.default_path() if chosen is pins else target
            )
        finally:
            sourceset.close()
        target.parent.mkdir(parents=True, exist_ok=True)
        states: dict[str, int] = {}
        for rf in data["rules"].values():
            states[rf["state"]] = states.get(rf["state"], 0) + 1
        yield BuiltSnapshot(target, snap.dumps(data), dict(sorted(states.items())))


def show() -> Snapshot:
    """The embedded snapshot (gate.snapshot's): its sources and each rule's facts."""
    from gfxgate.gate import snapshot as snap

    return snap.load()
