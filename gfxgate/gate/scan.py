"""Assemble a gate matrix: the rules' facts (snapshot or live sources), then the matrix and its answers over them
(cells the facts do not give, such as installed files' and runs', come from the use case: ``gfxgate.app.scan``)."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from gfxgate.errors import NetworkError, SourceError, UsageError
from gfxgate.records import dataclass

from gfxgate.gate.engine import MATCHED, UNAVAILABLE, build_matrix, collect_facts
from gfxgate.gate.matrix import GateMatrix
from gfxgate.gate.ruleset import RuleSet, default_rules, load_rules
from gfxgate.sources.resolve import Pins, SourceSet, load_pins
from gfxgate.model import DEFAULT_OS, OSES
from gfxgate.targets import TargetId, catalog
from gfxgate.gate import snapshot
from gfxgate.gate.docs import cells_of_matrix, disagreements
from gfxgate.gate.route import decide, default_routes, extra_targets, mark_unchecked, override_rule, routes_for_os
from gfxgate.gate.workarounds import default_workarounds, for_os, link

if TYPE_CHECKING:  # annotations only
    from gfxgate.gate.route import Route
    from gfxgate.machine import MachineFacts
    from gfxgate.gate.snapshot import Snapshot

# how a live answer's steps are checked (trace/workarounds.py: check_steps, passed in by the use case)
CheckSteps = Callable[["tuple[Route, ...]", "GateFacts"], "tuple[Route, ...]"]


@dataclass(frozen=True)
class GateFacts:
    """What a matrix is evaluated on: the rules, each rule's facts (from the sources or a snapshot), the sources read
    and the notes, and where they came from (``live``: read from the sources; the pins, refs and sources used, which
    a live answer's steps are checked at)."""

    ruleset: RuleSet
    facts: dict
    infos: tuple
    notes: tuple[str, ...]
    live: bool
    pins: Pins
    refs: dict[str, str] | None
    sources: dict[str, str] | None
    offline: bool
    os: str = "linux"  # the release's OS (``--os``): the rules were selected for it, the routes and workarounds will be


@dataclass(frozen=True)
class FactsRequest:
    """What a matrix's facts are read from — the one typed request both matrix builders take (``scan_matrix`` here,
    ``app/scan.py: matrix`` with the installed files and runs): the embedded snapshot of the pins, a pin set's
    (``--ref ollama=v0.17.5``), another snapshot file, or the sources read live (``live``, a ``--ref`` or
    ``--source``). :meth:`origin` is the one place that decides between them; :meth:`at_release` is the request for
    one ollama release (doctor's installed version, workarounds' ``--ref``).

    ``strict_coupled=False``: a coupled source (rocm-docs, clr) missing offline also falls back to its pin's snapshot
    (said in the cell), for a caller that needs the answer's routes, which no coupled layer decides. ``today``: the
    date the answer's release age is counted to (None: the age is not said, as in samples/). ``os``: the release
    answered for (``--os linux|windows``): the rules, layers, routes and workarounds whose ``os:`` names it."""

    live: bool = False
    refs: Mapping[str, str] | None = None
    sources: Mapping[str, str] | None = None
    offline: bool = False
    rules_root: Path | None = None
    pins: Pins | None = None
    snapshot_path: Path | None = None
    strict_coupled: bool = True
    today: date | None = None
    os: str = DEFAULT_OS

    def __post_init__(self) -> None:
        if self.os not in OSES:
            raise UsageError(f"unknown OS {self.os!r} (known: {', '.join(OSES)})")

    @classmethod
    def at_release(
        cls,
        tag: str | None,
        *,
        sources: Mapping[str, str] | None = None,
        offline: bool = False,
        strict_coupled: bool = True,
        os: str = DEFAULT_OS,
    ) -> FactsRequest:
        """The facts of ollama ``tag``: the pins' snapshot at the pinned release (without --source), a pin set's at
        its own (:meth:`origin`), else the sources at the tag."""
        if not sources and (tag is None or tag == load_pins().sources["ollama"].ref):
            return cls(offline=offline, strict_coupled=strict_coupled, os=os)
        return cls(
            refs={"ollama": tag} if tag else None,
            sources=sources or None,
            offline=offline,
            strict_coupled=strict_coupled,
            os=os,
        )

    def origin(self) -> FactsOrigin:
        """Where the facts come from: "snapshot" (the pins', or ``snapshot_path``), "pin-set" (the pin set's own
        snapshot, with its pins) or "live" (the sources)."""
        pins = self.pins or load_pins()
        if self.snapshot_path is not None:
            return FactsOrigin("snapshot", pins, None, self.snapshot_path)
        env_overrides = SourceSet(pins).has_overrides
        if self.refs and not self.live and not self.sources and self.rules_root is None and not env_overrides:
            name = pins.pin_set_for(dict(self.refs))  # `--ref ollama=v0.17.5`: the study's versions, offline
            if name is not None:
                return FactsOrigin("pin-set", pins.with_pin_set(name), name, snapshot.pin_set_path(name))
        live = self.live or bool(self.refs) or bool(self.sources) or env_overrides
        return FactsOrigin("live" if live else "snapshot", pins, None, None)

    @property
    def embedded(self) -> bool:
        """Whether an embedded snapshot answers (the pins' or a pin set's), not the sources."""
        return self.origin().kind != "live"


@dataclass(frozen=True)
class FactsOrigin:
    kind: str  # "snapshot", "pin-set" or "live"
    pins: Pins  # the pins the facts are read with (a pin set's versions for "pin-set")
    pin_set: str | None
    snapshot_path: Path | None  # the snapshot file (None: the shipped one of the pins)


def scan_matrix(
    targets: list[TargetId],
    facts: FactsRequest | None = None,
    *,
    extra_cells: dict | None = None,
    runtime_backends: dict | None = None,
    runtime_version: str | None = None,
    trim: bool = True,
    check_steps: CheckSteps | None = None,
    machine: MachineFacts | None = None,
) -> GateMatrix:
    """The gate matrix of ``targets`` with their answers: :func:`gate_facts` of ``facts`` then :func:`answer` (the use
    case ``gfxgate.app.scan`` adds the installed files' and the runs' cells between the two)."""
    return answer(
        gate_facts(facts or FactsRequest()),
        targets,
        extra_cells=extra_cells,
        runtime_backends=runtime_backends,
        runtime_version=runtime_version,
        trim=trim,
        check_steps=check_steps,
        machine=machine,
    )


def gate_facts(request: FactsRequest) -> GateFacts:
    """The rules and their facts, from where ``request.origin()`` says."""
    origin = request.origin()
    pins, pin_set, snapshot_path = origin.pins, origin.pin_set, origin.snapshot_path
    refs = None if origin.kind == "pin-set" else (dict(request.refs) if request.refs else None)
    sources = dict(request.sources) if request.sources else None
    rules_root, offline, today = request.rules_root, request.offline, request.today
    strict_coupled = request.strict_coupled
    embedded = request.snapshot_path is None and rules_root is None  # the shipped snapshot answers
    ruleset: RuleSet = (
        load_rules(rules_root, repos=set(pins.sources) | set(pins.layouts)) if rules_root else default_rules()
    ).for_os(request.os)
    notes: list[str] = []
    sourceset = SourceSet(pins, sources=sources, refs=refs, offline=offline)
    # --rules alone stays on the snapshot (its facts serve every rule whose digest they match; the others
    # are unknown with a note): it used to switch to live mode silently and reach for the network.
    use_live = origin.kind == "live"
    try:
        for name in sorted(set(refs or {}) | set(sources or {})):
            sourceset.get(name)  # a source the user named explicitly must open, or the scan fails clearly
        if use_live:
            # as with --ref: --offline with a source missing from the cache is exit 5, not a matrix of unknowns; so is
            # a remote that cannot be reached (a live scan without network used to exit 0 with every row unknown).
            # A coupled source (rocm-docs) online falls back to the embedded snapshot of its pin and says so.
            for name in sorted({rule.repo for rule in ruleset.rules} & set(pins.sources)):
                try:
                    sourceset.get(name)
                except NetworkError as exc:
                    optional = name in pins.couplings and pins.couplings[name].optional
                    if pins.sources[name].beyond:  # a route beyond the release: its pin's snapshot facts answer
                        continue
                    if (offline and strict_coupled and not optional) or name not in pins.couplings:
                        raise type(exc)(
                            f"{exc.message}; give --source {name}=CLONE (a local clone with its tags)", source=name
                        ) from None
                except SourceError:
                    pass  # reported per rule as unknown, with the reason
        if use_live:
            facts = collect_facts(ruleset, sourceset)
            infos = tuple(s.info() for s in sourceset.opened())
            notes += sourceset.notes
            facts, more = _coupled_fallback(
                ruleset, facts, pins, set(refs or {}) | set(sources or {}), snapshot_path, sourceset
            )
            infos += more
            notes.append("evidence read live from the sources above")
        else:
            snap = snapshot.load(snapshot_path)
            facts, stale = snap.usable_facts(ruleset, pins)
            infos = snap.sources
            notes += list(snap.notes) + stale
            if embedded:
                notes.append(release_note(snap, pins, pin_set, today, request.os))
            notes.append(
                "evidence from the embedded snapshot of the pinned tags (`gfxgate snapshot build` regenerates it; --live reads the sources)"
            )
            if rules_root is not None:
                notes.append(
                    f"rules from {rules_root}, evaluated against the embedded snapshot: a rule it holds no facts "
                    "for is unknown; add --live to read the sources"
                )
    finally:
        sourceset.close()
    if request.os != DEFAULT_OS:
        notes.append(
            f"answers for the {request.os.capitalize()} release (--os {request.os}): the rules, routes and "
            f"workarounds of its build, packaging and discovery"
        )
    return GateFacts(ruleset, facts, tuple(infos), tuple(notes), use_live, pins, refs, sources, offline, request.os)


def columns(targets: list[TargetId], workarounds: Iterable[Any] | None = None) -> list[TargetId]:
    """The matrix's columns for ``targets``: those, then the targets their override routes read (``workarounds``:
    those of the release's OS; default: all shipped)."""
    return list(targets) + [catalog().parse(name) for name in extra_targets(targets, workarounds)]


def answer(
    gate: GateFacts,
    targets: list[TargetId],
    *,
    extra_cells: dict | None = None,
    runtime_backends: dict | None = None,
    runtime_version: str | None = None,
    trim: bool = True,
    check_steps: CheckSteps | None = None,
    machine: MachineFacts | None = None,
) -> GateMatrix:
    """The matrix of ``targets`` on ``gate``'s facts, with their answers (``trim=False``: with the columns of the
    targets' override routes too, for a view that checks an override over the same release). ``extra_cells``: cells the facts do not give
    ((layer, target) -> Verdict: the installed files', the runtime row), over :func:`columns`; ``runtime_backends``
    (per target, the verdicts of each backend the runs used) and ``runtime_version`` (the Ollama version the runs were
    made with) let each answer be judged by its own backend's runs at a named version. ``check_steps``
    (``trace/workarounds.py: check_steps``, passed in by the use case): how a live answer's steps are checked; without
    it they are marked as not checked. ``machine`` (gfxgate.machine.MachineFacts: the runs of ``scan --log``): each
    answer on that machine (answer.route.with_machine)."""
    requested = [str(t) for t in targets]
    unanswered = [
        name for t, name in zip(targets, requested) if getattr(t, "vendor", "amd") not in gate.ruleset.vendors()
    ]
    if unanswered:
        raise UsageError(
            f"no rules of the {gate.os.capitalize()} release for {', '.join(unanswered)}: gfxgate answers "
            f"{' and '.join(sorted(gate.ruleset.vendors()))} targets for it",
            hint="scan with --os linux",
        )

    route_rules = routes_for_os(default_routes(), gate.os)  # the release's OS selects its routes and workarounds
    workarounds = for_os(default_workarounds(), gate.os)
    matrix = link(
        build_matrix(
            gate.ruleset,
            gate.facts,
            columns(targets, workarounds),
            catalog(),
            extra_cells=dict(extra_cells or {}),
            sources=gate.infos,
            notes=gate.notes,
        ),
        workarounds,
        override_rule(route_rules),
    )
    vendors = {getattr(t, "vendor", "amd") for t in targets}  # an NVIDIA target's matrix has NVIDIA's rows, AMD's AMD's
    layers = tuple(layer for layer in matrix.layers if vendors & set(layer.vendors))
    if layers != matrix.layers:
        matrix = dataclasses.replace(
            matrix, layers=layers, cells={k: v for k, v in matrix.cells.items() if k[0] in {la.id for la in layers}}
        )
    routes = tuple(
        decide(
            matrix,
            name,
            rules=route_rules,
            workarounds=workarounds,
            runtime=(runtime_backends or {}).get(name) if runtime_backends is not None else None,
            runtime_version=runtime_version,
            machine=machine,
            os=gate.os,
        )
        for name in requested
    )
    if gate.live and check_steps is not None:  # every step of a live answer is checked at the scanned version, as
        routes = check_steps(routes, gate)  # `gfxgate workarounds` does (trace/workarounds.py: check_steps)

    why = (
        (
            "the embedded snapshot holds the gate facts, not the workarounds' checks: `gfxgate workarounds` or --live "
            "checks the step at this version"
        )
        if not gate.live
        else "its workaround has no check result at this version"
    )
    routes = tuple(mark_unchecked(r, why) for r in routes)

    cells = {key: v for key, v in matrix.cells.items() if key[1] in requested or not trim}
    docs = disagreements(*cells_of_matrix(matrix), requested)  # where Ollama's docs and its release disagree
    return dataclasses.replace(
        matrix,
        targets=tuple(requested),
        cells=cells,
        routes=routes,
        notes=matrix.notes + tuple(note for _, note in docs),
        os=gate.os,
    )


def release_note(snap: Snapshot, pins: Pins, pin_set: str | None, today: date | None, os: str = DEFAULT_OS) -> str:
    """Which ollama release a snapshot answer is for, when that release was made, how old it is on ``today``, and
    the other embedded answers (the pin sets): `scan` without --ref answers for today's release."""
    ref = next((s.ref for s in snap.sources if s.name == "ollama"), pins.sources["ollama"].ref)
    release = f"{ref} for {os.capitalize()}" if os != DEFAULT_OS else ref  # `--os windows`: the Windows release
    made = snap.released.get("ollama")
    when = f" (its commit is of {made}" if made else ""
    if made and today is not None:
        days = (today - date.fromisoformat(made)).days
        when += f", {days} day{'s' if days != 1 else ''} before {today.isoformat()}"
    when += ")" if made else ""
    if pin_set is not None:
        return f"answers for ollama {release}{when}, from pin set {pin_set!r} of rules/pins.toml; without --ref, the answer is for the newest release"
    others = "; ".join(
        f"--ref ollama={refs['ollama']} answers for pin set {name!r}"
        for name, refs in sorted(pins.pin_sets.items())
        if "ollama" in refs
    )
    return f"answers for ollama {release}, the newest release in the embedded snapshot{when}" + (
        f"; {others}, offline" if others else ""
    )


def _coupled_fallback(
    ruleset: RuleSet, facts: dict, pins: Pins, explicit: set[str], snapshot_path: Path | None, sourceset: SourceSet
) -> tuple[dict, tuple[Any, ...]]:
    """A coupled source (rocm-docs) that cannot be read at all falls back to the embedded snapshot of its pin —
    the newest ref gfxgate has read — and each verdict says so. Sources the user named are never replaced."""
    wanted = [
        r
        for r in ruleset.rules
        if (r.repo in pins.couplings or (r.repo in pins.sources and pins.sources[r.repo].beyond))
        and r.repo not in explicit
        and facts.get(r.id)
        and facts[r.id].state == UNAVAILABLE
    ]
    if not wanted:
        return facts, ()
    snap = snapshot.load(snapshot_path)
    usable, _ = snap.usable_facts(ruleset, pins)
    out, used = dict(facts), set()
    for rule in wanted:
        old = usable.get(rule.id)
        if old is None or old.state not in (MATCHED,) or old.repo != rule.repo:
            continue
        reason = (facts[rule.id].reason or "").removeprefix("source not available: ")
        wanted_ref = sourceset.substitution(rule.repo)
        note = ((wanted_ref + "; ") if wanted_ref else "") + (
            f"{rule.repo} cannot be read here ({reason}): evidence from the embedded snapshot of {old.repo}@{old.ref}"
        )
        if rule.repo not in pins.couplings:  # a source beyond the release: the words a snapshot build keeps it with
            note = snapshot.beyond_note(old.repo or rule.repo, old.ref or "")
        out[rule.id] = dataclasses.replace(old, note=note)
        used.add(rule.repo)
    return out, tuple(s for s in snap.sources if s.name in used)
