"""Compute the support timeline from the release tags: the same prober, rules and facts cache as ``history``.

At each probed release the ollama-side gate layers come from :class:`gfxgate.history.walk.TagProber`
(files read from the object database at that tag, each once; facts cached per rule, commit and tag), and so does
the rocm-runtime row: clr read at the ROCm version that release's Dockerfile names, coupled exactly as a scan at
that tag couples it (a ROCm whose clr tag cannot be read is read at the nearest older tag, and the row says
"unknown", as scan says it). The other rows (artifacts, the host, the official matrix) are "not scanned", and
every target's route is decided by
:func:`gfxgate.gate.route.decide`. Releases are bisected on the signature of every layer and every route of
every target at once, so a range where nothing can change is not probed (``every_tag`` probes them all).
"""

from __future__ import annotations

from typing import Any
from dataclasses import replace

from gfxgate.gate.engine import not_scanned
from gfxgate.gate.matrix import GateMatrix
from gfxgate.model import Evidence
from gfxgate.prcheck.diff import EVIDENCE, classify
from gfxgate.timeline.model import BackendState, Cell, Ev, Flip, Refusal, RouteKey, Row, Timeline, Unreadable
from gfxgate.targets import catalog
from gfxgate.gate.docs import DOCS_LAYER, RELEASE_LAYERS, cells_of_matrix, disagreements
from gfxgate.gate.route import decide, default_routes, routes_for_os
from gfxgate.gate.workarounds import default_workarounds, for_os
from gfxgate.gate.ruleset import default_rules
from gfxgate.history.walk import change_points, signature, tag_window
from gfxgate.sources.resolve import load_pins

# Sources whose ref a release's own files choose (rules/pins.toml [couplings]), read at each release with it: clr at
# the ROCm version of the Dockerfile, so the rocm-runtime row (and route.RUNS_ON's refusal) is the scan's at that tag;
# rocBLAS likewise, so the release-packaging row knows which targets the bundled rocBLAS was built for.
COUPLED = ("clr", "rocblas")
MAX_EVIDENCE = 3  # per backend state and per flip: the deciding lines, not every line


def github_blob(url: str | None) -> str | None:
    """``https://github.com/o/r`` for a GitHub clone URL, else None (only GitHub links are made)."""
    if not url or not url.startswith("https://github.com/"):
        return None
    return url[:-4] if url.endswith(".git") else url


class Linker:
    """Evidence → slim :class:`Ev` with a link to the pinned upstream repository, by commit."""

    def __init__(self, pins) -> None:
        self.bases = {name: github_blob(pin.url) for name, pin in pins.sources.items()}

    def __call__(self, e: Evidence) -> Ev:
        loc = e.location
        url = None
        if loc is not None and loc.repo in self.bases and self.bases[loc.repo] and (loc.commit or loc.ref):
            url = f"{self.bases[loc.repo]}/blob/{loc.commit or loc.ref}/{loc.path}" + (
                f"#L{loc.line}" if loc.line else ""
            )
        return Ev(str(loc) if loc else e.source, e.text[:200], e.source, url)

    def many(self, evidence, limit: int = MAX_EVIDENCE) -> tuple[Ev, ...]:
        out: list[Ev] = []
        for e in evidence:
            ev = self(e)
            if ev not in out:
                out.append(ev)
            if len(out) == limit:
                break
        return tuple(out)


def complete(matrix: GateMatrix, ruleset) -> GateMatrix:
    """The prober's matrix (ollama-side source layers) plus the artifact and runtime rows, not scanned."""
    present = {layer.id for layer in matrix.layers}
    layers = tuple(layer for layer in ruleset.layers if layer.id in present or layer.kind != "source")
    cells = dict(matrix.cells)
    for layer in layers:
        if layer.id not in present:
            for t in matrix.targets:
                cells[(layer.id, t)] = not_scanned(layer, t)
    return replace(matrix, layers=layers, cells=cells)


def _key(e: Evidence) -> tuple:
    """Evidence without the tag it was read at: the same line at two releases is the same key."""
    return (e.source, e.location.path if e.location else None, e.text)


def _route_signature(route) -> tuple:
    return (
        route.best.route if route.best else "undecided",
        route.label,
        route.certain,
        tuple((b.backend, b.state, b.option.label if b.option else None) for b in route.backends),
    )


def _refusals(b, layer_of: dict[str, str], link: Linker) -> tuple[Refusal, ...]:
    """Each layer that refuses backend answer ``b`` (state none) once, with its first line, in evidence order."""
    if b.option is not None or b.state != "none":
        return ()
    first: dict[str, Evidence] = {}
    for e in b.evidence:
        first.setdefault(layer_of.get(e.source, e.source), e)
    return tuple(Refusal(layer, link(e)) for layer, e in first.items())


def _refusal_key(route, layer_of: dict[str, str]) -> tuple:
    """The layers refusing each backend without a route: a run of releases whose refusal moves to another layer
    (the build list up to v0.1.20, then clr's missing row) is two cells, each with its own evidence."""
    return tuple(
        (b.backend, tuple(dict.fromkeys(layer_of.get(e.source, e.source) for e in b.evidence)))
        for b in route.backends
        if b.option is None and b.state == "none"
    )


def _vendor_of(target: str) -> str:
    vendor = catalog().vendor_of(target)
    return vendor.name if vendor is not None else "amd"


def _backends(route, link: Linker, layer_of: dict[str, str]) -> tuple[BackendState, ...]:
    out = []
    for b in route.backends:
        if b.option is not None:
            out.append(
                BackendState(
                    b.backend,
                    "route",
                    b.option.label,
                    b.option.phrase,
                    None,
                    link.many(b.option.evidence),
                    steps=tuple(s.workaround for s in b.option.steps),
                )
            )
        else:
            reasons = b.undecided if b.state == "undecided" else b.refused
            out.append(
                BackendState(
                    b.backend,
                    b.state,
                    None,
                    None,
                    reasons[0] if reasons else None,
                    link.many(b.evidence),
                    _refusals(b, layer_of, link),
                )
            )
    return tuple(out)


def compute(
    prober,
    targets: list[str],
    *,
    first: str | None = None,
    last: str | None = None,
    prereleases: bool = False,
    every_tag: bool = False,
    ruleset=None,
    pins=None,
    os: str = "linux",
) -> Timeline:
    """The timeline of ``targets`` over ``prober.repo``'s releases (``prober.targets`` must include the override
    targets) for ``os``'s release: its rules (the prober's), routes and workarounds."""
    ruleset = ruleset or default_rules().for_os(os)
    route_rules = routes_for_os(default_routes(), os)
    workarounds = for_os(default_workarounds(), os)
    link = Linker(pins or load_pins())
    layer_of = {r.id: r.layer for r in ruleset.rules}
    tags = tag_window(prober.release_tags(prereleases=prereleases), first, last, sorted(prober.commits))
    matrices: dict[int, GateMatrix] = {}
    routes: dict[int, dict[str, Any]] = {}
    sigs: dict[int, tuple] = {}
    layer_keys: list[tuple[str, str]] = []

    def probe(i: int) -> tuple:
        if i not in sigs:
            m = complete(prober.matrix_at(tags[i]), ruleset)
            matrices[i] = m
            routes[i] = {t: decide(m, t, version=tags[i], rules=route_rules, workarounds=workarounds) for t in targets}
            full = signature(m)
            if not layer_keys:
                layer_keys.extend(sorted(k for k in full if k[1] in targets))
            sigs[i] = (tuple(full.get(k) for k in layer_keys), tuple(_route_signature(routes[i][t]) for t in targets))
        return sigs[i]

    points = change_points(len(tags), probe, every=every_tag)
    prober.cache.flush()
    bounds = [0] + points

    def flips(t: str, i: int) -> tuple[Flip, ...]:
        old, new = matrices[i - 1], matrices[i]
        out = []
        for layer in new.layers:
            key = (layer.id, t)
            if key not in old.cells:
                continue
            a, b = old.cells[key], new.cells[key]
            if (a.status, {e.source for e in a.evidence}) == (b.status, {e.source for e in b.evidence}):
                continue
            kind = classify(a.status.value, b.status.value) or EVIDENCE
            before = {_key(e) for e in a.evidence}
            changed = [e for e in b.evidence if _key(e) not in before]  # the lines that differ come first
            evidence = link.many(changed + [e for e in b.evidence if _key(e) in before] if b.evidence else a.evidence)
            reason = b.reason if not b.evidence else None
            if not evidence and not reason:
                reason = b.summary
            out.append(Flip(tags[i], tags[i - 1], layer.id, a.status.value, b.status.value, kind, evidence, reason))
        return tuple(out)

    def docs_notes(t: str, a: int, b: int) -> tuple[str, ...]:
        """Where the docs and the release disagree over releases a..b: at a, and at each change point inside where the
        docs row or a release row of ``t`` changes status (the bisection probed those; between them nothing changes)."""
        out, shape = [], None
        for i in [a] + [p for p in points if a < p <= b]:
            cells = matrices[i].cells
            now = tuple(cells[(layer, t)].status for layer in (DOCS_LAYER, *RELEASE_LAYERS) if (layer, t) in cells)
            if now != shape:
                out += [note for _, note in disagreements(*cells_of_matrix(matrices[i]), [t])]
                shape = now
        return tuple(out)

    rows = []
    for t in targets:
        starts = [
            i
            for i in bounds
            if i == 0
            or _route_signature(routes[i][t]) != _route_signature(routes[i - 1][t])
            or _refusal_key(routes[i][t], layer_of) != _refusal_key(routes[i - 1][t], layer_of)
        ]
        cells = []
        for n, a in enumerate(starts):
            b = (starts[n + 1] - 1) if n + 1 < len(starts) else len(tags) - 1
            r = routes[a][t]
            m = matrices[a]
            best_evidence = link.many(r.best.evidence, 6) if r.best else ()
            cells.append(
                Cell(
                    target=t,
                    first=tags[a],
                    last=tags[b],
                    tags=b - a + 1,
                    route=r.best.route if r.best else "undecided",
                    label=r.label,
                    certain=r.certain,
                    backends=_backends(r, link, layer_of),
                    steps=tuple(s.workaround for s in r.best.steps) if r.best else (),
                    layers=tuple(
                        (layer.id, m.cells[(layer.id, t)].status.value)
                        for layer in m.layers
                        if _vendor_of(t) in layer.vendors
                    ),  # the rows of the target's vendor
                    evidence=best_evidence,
                    reason=r.reason,
                    start=flips(t, a) if a > 0 else (),
                    end=flips(t, b + 1) if b + 1 < len(tags) else (),
                    docs=docs_notes(t, a, b),
                )
            )
        rows.append(Row(t, tuple(cells)))
    window = set(tags)
    repo_of = {r.id: r.repo for r in prober.ruleset.rules}
    unreadable = tuple(
        Unreadable(rule, tag, source, facts.reason or "", _supply_hint(source, prober))
        for (rule, tag), facts in sorted(prober.unavailable.items())
        if tag in window
        for source in [facts.unreadable or repo_of[rule]]
    )
    said = {f"{u.rule}: {u.reason}" for u in unreadable}
    notes = sorted(n for n in prober.notes if n not in said)  # the unreadable records say the rest, grouped by source
    return Timeline(
        repo=prober.repo,
        tags=tuple(tags),
        probed=len(sigs),
        method="every-tag" if every_tag else "bisect",
        prereleases=prereleases,
        rows=tuple(rows),
        origin="live",
        key=RouteKey.of(route_rules),
        notes=tuple(notes),
        backends=route_rules.backends,
        unreadable=unreadable,
        os=os,
    )


def _supply_hint(source: str | None, prober) -> str | None:
    """How to supply a source that could not be read; None when it is not there to supply."""
    pins = prober.pins
    if source in pins.layouts:  # the layout itself is missing: the host release vendors no copy and names no tag
        spec = pins.layouts[source]
        return (
            f"{spec.vendored_in} vendors no copy at these releases and names no {spec.upstream} tag "
            f"({spec.version_file}): nothing to supply"
        )
    if source is not None and source in pins.sources:
        how = f"supply a clone with its tags: --source {source}=CLONE (or GFXGATE_SOURCE_{source.upper().replace('-', '_')})"
        return how + ("" if not prober.offline else ", or run once without --offline to clone it")
    return None
