"""`timeline(TimelineRequest) -> TimelineResult`: every target x every release, the route at each — from the embedded
timeline snapshot, or computed live over the ollama release tags; `store(StoreRequest)`: compute it live and make
the snapshot's document (`gfxgate snapshot timeline`)."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import Any, Callable

from gfxgate.records import dataclass


@dataclass(frozen=True)
class TimelineRequest:
    targets: tuple[str, ...] = ()  # none: every target a rule names
    first: str | None = None
    last: str | None = None
    live: bool = False  # recompute from the release tags (a --source, --prereleases or --every-tag implies it)
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    prereleases: bool = False
    every_tag: bool = False
    on_probe: Callable[[str], None] | None = None  # called with each tag probed (live)
    os: str = "linux"  # the release answered for (--os): its embedded table, or its rules and routes live


@dataclass(frozen=True)
class TimelineResult:
    result: Any  # timeline.model's result: rows, tags, cells, the unreadable sources
    cache_warning: str | None = None  # the facts cache could not be used (live)


def timeline(req: TimelineRequest) -> TimelineResult:
    from gfxgate.app.common import parse_targets
    from gfxgate.errors import SourceError, UsageError
    from gfxgate.timeline import snapshot as snap

    names = [str(t) for t in parse_targets(req.targets)] or None
    if req.live:
        return compute_live(
            names or snap.default_targets(),
            req.first,
            req.last,
            req.sources,
            req.offline,
            req.prereleases,
            req.every_tag,
            req.on_probe,
            req.os,
        )
    first, last = req.first, req.last
    stored = snap.load(os=req.os)
    if names:
        missing = [n for n in names if n not in stored.targets]
        if missing:
            raise UsageError(
                f"not in the embedded timeline: {', '.join(missing)}", hint="use --live (with --source ollama=CLONE)"
            )
    for bound in (first, last):
        if bound is not None and bound not in stored.tags:
            from gfxgate.sources.versions import nearest_tags

            near = nearest_tags(bound, list(stored.tags))
            raise SourceError(
                f"{bound!r} is not a release of the embedded timeline ({stored.tags[0]} … {stored.tags[-1]})",
                hint=("nearest tags: " + ", ".join(near)) if near else "use --live for other tags",
            )
    if first and last and stored.tags.index(first) > stored.tags.index(last):
        raise UsageError(f"--from {first} comes after --to {last} in release order")
    return TimelineResult(stored.select(names, first, last))


@dataclass(frozen=True)
class StoreRequest:
    targets: tuple[str, ...] = ()  # none: every target a rule names
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    output: Path | None = None  # none: the shipped rules/snapshots/timeline.json (timeline-windows.json beside)
    on_probe: Callable[[str], None] | None = None
    os: str | None = None  # none: every OS's table, each to its shipped file (an --output: Linux's)


@dataclass(frozen=True)
class StoredTimeline:
    result: Any
    cache_warning: str | None
    path: Path  # where the document goes (its folder made)
    document: bytes  # the timeline snapshot's JSON


def store(req: StoreRequest) -> tuple[StoredTimeline, ...]:
    """Each OS's timeline (``req.os``, else every OS: Linux's, then Windows'), computed live, as its snapshot document."""
    from gfxgate.app.common import parse_targets
    from gfxgate.model import OSES
    from gfxgate.timeline import snapshot as snap

    names = [str(t) for t in parse_targets(req.targets)] or snap.default_targets()
    out = []
    # an --output file holds one timeline: the --os named, else Linux's; without it every OS's, each to its file
    for os in (req.os,) if req.os else ("linux",) if req.output is not None else OSES:
        answer = compute_live(names, None, None, req.sources, req.offline, False, False, req.on_probe, os)
        path = req.output or snap.default_path(os)
        path.parent.mkdir(parents=True, exist_ok=True)
        out.append(StoredTimeline(answer.result, answer.cache_warning, path, snap.dumps(snap.build(answer.result, os))))
    return tuple(out)


def compute_live(
    names: list[str],
    first: str | None,
    last: str | None,
    sources: dict[str, str],
    offline: bool,
    prereleases: bool,
    every_tag: bool,
    on_probe: Callable[[str], None] | None = None,
    os: str = "linux",
) -> TimelineResult:
    """The timeline of ``names`` over the ollama release tags, probed with the same rules and facts cache as
    `gfxgate history` (the override routes' targets probed too), for ``os``'s release: from the first release its own
    rules read (``snapshot.first_release``: Windows from v0.30.0) unless ``first`` says otherwise."""
    from gfxgate.gate.route import extra_targets
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.gate.workarounds import default_workarounds, for_os
    from gfxgate.timeline.snapshot import first_release
    from gfxgate.history.walk import TagProber, default_facts_cache
    from gfxgate.sources.resolve import load_pins
    from gfxgate.targets import catalog
    from gfxgate.timeline.compute import COUPLED, compute

    cat = catalog()
    ruleset = default_rules().for_os(os)
    # AMD's and NVIDIA's targets: those of the vendors the OS's rules answer (Windows: AMD's)
    parsed = [t for t in (cat.parse_target(n) for n in names) if getattr(t, "vendor", "amd") in ruleset.vendors()]
    probe_targets = parsed + [cat.parse(n) for n in extra_targets(parsed, for_os(default_workarounds(), os))]
    prober = TagProber(
        load_pins(),
        ruleset,
        "ollama",
        probe_targets,
        cat,
        sources=sources,
        offline=offline,
        cache=default_facts_cache("ollama"),
        on_probe=on_probe,
        coupled=COUPLED,
    )
    with prober:
        result = compute(
            prober,
            [str(t) for t in parsed],
            first=first or first_release(ruleset, os),
            last=last,
            prereleases=prereleases,
            every_tag=every_tag,
            ruleset=ruleset,
            os=os,
        )
    return TimelineResult(result, prober.cache.warning or None)
