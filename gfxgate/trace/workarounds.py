"""The workarounds' own checks at a version: each entry's environment variable still read (the trace engine's
``--env`` search), its build flag or option still present (a regex in the source's files) — live, stale or unknown.

A pipeline over the workaround records (``gate/workarounds.py``: loaded and linked once) and the trace engine;
``check_steps`` puts the checks of a live answer's steps on its routes (``gate/scan.py: answer`` takes it from the
use case, so gate/ does not import the trace engine).
"""

from __future__ import annotations

import dataclasses
import functools

from gfxgate.answer.override import posed_target
from gfxgate.answer.steps import fill_setting
from gfxgate.errors import SourceError
from gfxgate.gate.workarounds import (
    LIVE,
    STALE,
    UNKNOWN,
    Check,
    CheckResult,
    EnvCheck,
    Workaround,
    WorkaroundReport,
    setting_for,
    shipped_state,
)
from gfxgate.model import Evidence
from gfxgate.trace import search_env
from gfxgate.trace.hops import HopContext
from gfxgate.targets import catalog
from gfxgate.gate.route import attach_checks, step_workarounds
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.sources.resolve import SourceSet


def _ref_of(sourceset, repo: str) -> str | None:
    """The ref a source set reads ``repo`` at; None when the source cannot be opened."""
    try:
        return sourceset.get(repo).ref
    except SourceError:
        return None


def _run_check(check: Check, sourceset, env_search) -> CheckResult:
    try:
        source = sourceset.get(check.repo)
    except SourceError as exc:
        return CheckResult(check, check.repo, reason=f"source not available: {exc.message}")
    where = f"{source.name}@{source.ref}"
    if isinstance(check, EnvCheck):
        found = env_search(check.env)
        reason = next((why for repo, why in found.unavailable if repo == check.repo), None)
        reads = [r for r in found.reads if r.repo == source.name]
        evidence = tuple(Evidence(source=f"env:{r.kind}", location=r.location, text=r.text, note=r.kind) for r in reads)
        return CheckResult(check, where, reason=None if evidence else reason, evidence=evidence)
    hits = check.hits(source)  # the rule-regex dialect on every kind of source
    evidence = tuple(
        Evidence(source="grep", location=source.location(h.path, h.line), text=h.text.strip()) for h in hits[:5]
    )
    return CheckResult(check, where, evidence=evidence)


def not_applicable(workarounds: tuple[Workaround, ...], sourceset) -> list[Workaround]:
    """The entries that do not exist at the scanned versions (``exists_in``): ``check_all`` leaves them out."""
    ref_of = functools.partial(_ref_of, sourceset)
    return [w for w in workarounds if not w.exists_at(ref_of)]


def check_all(
    workarounds: tuple[Workaround, ...],
    sourceset,
    *,
    targets=(),
    artifacts=None,
    steps: dict[str, dict[str, str]] | None = None,
    view=None,
    override=None,
    release: str = "this release",
) -> list[WorkaroundReport]:
    """Run the checks of every entry that exists at the scanned versions (``not_applicable`` lists the others); for
    HSA overrides, say which target they select and what code exists for it.

    Each entry's setting is the one for the targets: where it is a route step of a target (``steps``, from
    ``gate.route.step_settings`` over the same versions' answer), that step's setting, else its own filled with the
    target (``gfxgate.answer.steps.fill_setting``), so `workarounds -t` and `scan` never show two settings for one entry.

    With ``view`` (the release's statuses: the same versions' matrix, with the posed targets' columns) and
    ``override`` (the override route rule), an HSA override whose posed target the release does not ship is
    "not shipped" (the override check of scan and doctor, :func:`gfxgate.answer.override.check_override`)."""
    ctx = HopContext(sourceset)  # one parse cache: every file is parsed once across all searches
    env_search = functools.cache(lambda name: search_env(sourceset, name, ctx=ctx))
    out = []
    skipped = {w.id for w in not_applicable(workarounds, sourceset)}
    for item in workarounds:
        if item.id in skipped:
            continue
        item = item.at(functools.partial(_ref_of, sourceset))
        item = dataclasses.replace(
            item, setting=setting_for(item, [str(t) for t in targets], (steps or {}).get(item.id, {}), fill_setting)
        )
        results = tuple(_run_check(c, sourceset, env_search) for c in item.checks)
        missing = [r for r in results if not r.evidence and r.reason is None]
        unavailable = [r for r in results if r.reason]
        if unavailable and not missing:
            state, summary = UNKNOWN, "; ".join(r.reason for r in unavailable if r.reason)
        elif missing:
            state = STALE
            summary = (
                "stale at "
                + ", ".join(sorted({r.where for r in missing}))
                + ": "
                + "; ".join(f"{r.check.describe()} — not found" for r in missing)
            )
        else:
            state = LIVE
            first = results[0].evidence[0]
            summary = f"evidence at {first.location}" + (
                f" (+{sum(len(r.evidence) for r in results) - 1} more)"
                if sum(len(r.evidence) for r in results) > 1
                else ""
            )
        state, summary = shipped_state(item, state, summary, view, override, release)
        override_target = override_code = None
        if item.override:
            override_target = posed_target(item.override)
            if artifacts is not None:
                override_code = _override_code(artifacts, override_target)
        out.append(
            WorkaroundReport(
                workaround=item,
                state=state,
                summary=summary,
                results=results,
                override_target=override_target,
                override_code=override_code,
            )
        )
    return out


def _override_code(artifacts, processor: str) -> str:
    """What the scanned artifacts hold for the processor an override selects."""
    cells = artifacts(catalog().parse(processor))
    parts = []
    for layer in ("rocblas-artifacts", "installed-gpu-code"):
        verdict = cells.get((layer, processor))
        if verdict is not None:
            where = str(verdict.evidence[0].location) if verdict.evidence and verdict.evidence[0].location else ""
            parts.append(f"{layer}: {verdict.status.value}" + (f" ({where})" if where else ""))
    return "; ".join(parts) or "no artifacts scanned"


def check_steps(routes, gate):
    """The checks of every step of these routes at the versions ``gate`` (gate.scan.GateFacts, live) read, on the
    routes (``gate.route.attach_checks``): what `gfxgate workarounds` says of each step."""
    wanted = step_workarounds(routes)
    items = tuple(w for w in default_workarounds() if w.id in wanted)
    if not items:
        return routes
    sourceset = SourceSet(gate.pins, sources=gate.sources, refs=gate.refs, offline=gate.offline)
    try:
        reports = {r.workaround.id: r for r in check_all(items, sourceset)}
    finally:
        sourceset.close()
    return tuple(attach_checks(r, reports) for r in routes)
