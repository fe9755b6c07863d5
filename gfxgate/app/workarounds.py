"""`workarounds(WorkaroundsRequest) -> WorkaroundsResult`: every documented workaround (those that apply to the
named targets), each checked at the scanned versions; with targets, each entry's setting is its route step's (the same
answer as `scan`), an HSA override whose posed target the release does not ship is "not shipped" (the override check
of scan and doctor), and with installed files, whether code exists for the target an HSA override selects.

Without ollama (offline, no clone) at a version an embedded snapshot holds (the pins', a pin set's), the answer is
the embedded evidence's, as `scan` gives it: each entry not checked, with its route setting and override check."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.gate.workarounds import Workaround
    from gfxgate.timeline.snapshot import ReleaseView


@dataclass(frozen=True)
class WorkaroundsRequest:
    targets: tuple[str, ...] = ()
    refs: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    installed: tuple[Path, ...] = ()  # scanned artifacts
    os: str = "linux"  # the release answered for (--os): its workarounds (the HSA overrides are Linux's) and routes


@dataclass(frozen=True)
class WorkaroundsResult:
    reports: tuple  # one check report per workaround
    sources: tuple  # the sources read (SourceInfo)
    not_applicable: tuple  # workarounds that do not exist at the checked version


def workarounds(req: WorkaroundsRequest) -> WorkaroundsResult:
    from gfxgate.app.common import parse_targets, require_source
    from gfxgate.errors import SourceError
    from gfxgate.gate import workarounds as wk
    from gfxgate.gate.route import default_routes, override_rule, routes_for_os, step_settings
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.gate.scan import FactsRequest, scan_matrix
    from gfxgate.sources.resolve import SourceSet, load_pins
    from gfxgate.trace import workarounds as tw

    parsed = parse_targets(req.targets)
    items = wk.for_os(wk.default_workarounds(), req.os)
    override = override_rule(routes_for_os(default_routes(), req.os))  # None on Windows: no override route
    if parsed:
        processors = {t.processor for t in parsed}
        # a workaround is a vendor's when the layers it unblocks are (an NVIDIA build flag is no answer for gfx900)
        layer_vendors = {layer.id: set(layer.vendors) for layer in default_rules().layers}
        vendors = {getattr(t, "vendor", "amd") for t in parsed}
        items = tuple(
            w
            for w in items
            if (not w.applies_to or processors & set(w.applies_to))
            and any(vendors & layer_vendors.get(layer, {"amd"}) for layer in w.unblocks)
        )
    artifacts = None
    if req.installed:
        from gfxgate.artifacts.scan import scan_paths
        from gfxgate.artifacts.verdicts import artifact_verdicts

        report = scan_paths(list(req.installed))
        artifacts = lambda target: artifact_verdicts(report, [target])  # noqa: E731 - one question per override
    sources, refs, offline = req.sources, req.refs, req.offline
    pins = load_pins()
    # an embedded snapshot holds that version: the pins', or a pin set's (`--ref ollama=v0.17.5`: the study); the
    # route settings are that snapshot's even with --source (the same answer as `scan --ref` without it)
    facts = FactsRequest(refs=refs or None, offline=offline, strict_coupled=False, os=req.os)
    embedded = facts.embedded  # FactsRequest.origin: the one place that decides snapshot, pin set or live
    sourceset = SourceSet(pins, sources=sources, refs=refs, offline=offline)
    try:
        # the entries are checked in ollama at its version: without it, the embedded evidence answers where a
        # snapshot holds the version, else there is nothing to answer from (exit 5 or 4, naming the --source to give)
        try:
            ollama = require_source(sourceset, "ollama", "workarounds")
        except SourceError:
            if sources:
                raise
            if not embedded:  # a release of the embedded timeline: its stored statuses and Routes answer
                stored = _from_timeline(items, parsed, refs, req.os)
                if stored is None:
                    raise
                return stored
            ollama = None
        matrix = steps = None
        if (
            parsed
        ):  # each entry's setting is its route step's for the targets: the same answer as `scan` at this version
            if not embedded or (not refs and ollama is not None and ollama.ref != pins.sources["ollama"].ref):
                facts = FactsRequest(refs=refs, sources=sources, offline=offline, strict_coupled=False, os=req.os)
            matrix = scan_matrix(parsed, facts, trim=False, check_steps=tw.check_steps)
            steps = step_settings(matrix.routes)
        if ollama is None:
            version = refs.get("ollama") or pins.sources["ollama"].ref
            ref_of = (refs or {"ollama": version}).get
            reports = wk.unchecked(
                items,
                ref_of,
                "ollama cannot be read here, so the workarounds' own checks did not "
                "run; the route settings and override checks are the embedded snapshot's (give "
                "--source ollama=CLONE to check them)",
                targets=parsed,
                steps=steps,
                view=matrix,
                override=override,
                release=f"ollama {version}",
            )
            return WorkaroundsResult(
                tuple(reports),
                tuple(matrix.sources) if matrix is not None else (),
                tuple(w for w in items if not w.exists_at(ref_of)),
            )
        view = (
            matrix if matrix is not None else _stored_release(ollama.ref, req.os)
        )  # without targets: the stored release's
        reports = tw.check_all(
            items,
            sourceset,
            targets=parsed,
            artifacts=artifacts,
            steps=steps,
            view=view,
            override=override,
            release=f"ollama {ollama.ref}",
        )
        absent = tw.not_applicable(items, sourceset)
        infos = tuple(s.info() for s in sourceset.opened())
    finally:
        sourceset.close()
    return WorkaroundsResult(tuple(reports), infos, tuple(absent))


def _stored_release(tag: str, os: str = "linux") -> ReleaseView | None:
    """The embedded timeline at ollama ``tag`` as a status view (the posed targets' columns an override check reads
    when no targets were named), or None when it does not hold that release."""
    from gfxgate.errors import GfxgateError
    from gfxgate.timeline import snapshot

    try:
        cells = snapshot.load_cells(os=os)
    except GfxgateError:
        return None
    return cells.at(tag) if tag in cells.tags else None


def _from_timeline(
    items: tuple[Workaround, ...], parsed: list, refs: Mapping[str, str], os: str = "linux"
) -> WorkaroundsResult | None:
    """The answer at a release of the embedded timeline (``--ref ollama=TAG``, offline, no clone): each entry not
    checked, its setting the stored Route's step's (the route's own setting: the stored timeline keeps statuses, not
    a cell's versioned command), and the override check over the stored release; None when the timeline does not
    hold that release."""
    from gfxgate.answer.route import step_settings
    from gfxgate.errors import GfxgateError
    from gfxgate.gate import workarounds as wk
    from gfxgate.gate.route import default_routes, override_rule, routes_for_os
    from gfxgate.timeline import snapshot

    tag = refs.get("ollama")
    if set(refs) != {"ollama"} or not tag:
        return None
    try:
        cells = snapshot.load_cells(os=os)
    except GfxgateError:
        return None
    if tag not in cells.tags:
        return None
    ref_of = {"ollama": tag}.get
    rules = routes_for_os(default_routes(), os)
    # each step's setting is the stored Route's (read back once, as doctor's timeline answer reads it)
    steps = step_settings([cells.route_at(t, tag) for t in (str(t) for t in parsed) if t in cells.targets])
    reports = wk.unchecked(
        items,
        ref_of,
        f"ollama cannot be read here, so the workarounds' own checks did not run; the "
        f"route settings and override checks are the embedded timeline's at {tag} (give --source "
        "ollama=CLONE to check them)",
        targets=parsed,
        steps=steps,
        view=cells.at(tag),
        override=override_rule(rules),
        release=f"ollama {tag}",
    )
    return WorkaroundsResult(tuple(reports), (), tuple(w for w in items if not w.exists_at(ref_of)))
