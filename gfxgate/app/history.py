"""`history(HistoryRequest) -> HistoryResult`: the release tags of a pinned repository at which each layer's status
changed for the named targets, bisected (or every tag probed), with the facts cached per rule, commit and tag."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable

from gfxgate.records import dataclass


@dataclass(frozen=True)
class HistoryRequest:
    targets: tuple[str, ...]
    repo: str = "ollama"
    first: str | None = None
    last: str | None = None
    layers: tuple[str, ...] = ()  # none: every layer
    prereleases: bool = False
    every_tag: bool = False
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    on_probe: Callable[[str], None] | None = None  # called with each tag probed
    os: str = "linux"  # the release whose rules are walked (--os)


@dataclass(frozen=True)
class HistoryResult:
    result: Any  # history.walk's result: tags, probed, rows with their changes
    cache_warning: str | None = None  # the facts cache could not be written


def history(req: HistoryRequest) -> HistoryResult:
    from gfxgate.app.common import parse_targets
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.history.walk import TagProber, default_facts_cache
    from gfxgate.history.walk import history as walk
    from gfxgate.sources.resolve import load_pins
    from gfxgate.targets import catalog

    parsed = parse_targets(req.targets)
    prober = TagProber(
        load_pins(),
        default_rules().for_os(req.os),
        req.repo,
        parsed,
        catalog(),
        sources=req.sources,
        offline=req.offline,
        cache=default_facts_cache(req.repo),
        on_probe=req.on_probe,
    )
    with prober:
        result = walk(
            prober,
            first=req.first,
            last=req.last,
            layers=list(req.layers) or None,
            prereleases=req.prereleases,
            every_tag=req.every_tag,
        )
    return HistoryResult(result, prober.cache.warning or None)
