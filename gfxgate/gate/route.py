"""The route rules, loaded once: ``rules/routes.yaml`` cross-checked against the layers and the workaround records
(:func:`default_routes`), and the answer's entry points with the shipped rules and workarounds filled in.

The decision itself is :mod:`gfxgate.answer` (a pure layer: the route, the step settings, the override checks); this
module loads what it decides by and passes it in, so ``answer/`` imports neither this module nor
``gate/workarounds.py`` (the route <-> workarounds import circle of before is gone).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from gfxgate.answer.override import OverrideCheck, check_override, needs_clause
from gfxgate.answer.route import (  # noqa: F401 - the answer's records and functions, as gate/ callers name them
    APPLIES,
    NOT_CHECKED,
    REFUSED,
    UNDECIDED,
    BackendAnswer,
    BeyondRoute,
    Route,
    RouteOption,
    RouteRule,
    RouteRules,
    RouteStep,
    RuntimeCheck,
    SatisfiedStep,
    StepCheck,
    StepRule,
    attach_checks,
    mark_unchecked,
    step_settings,
    step_workarounds,
    with_recipes,
)
from gfxgate.answer.route import decide as _decide
from gfxgate.answer.route import extra_targets as _extra_targets
from gfxgate.answer.steps import SETTING_FIELDS, fill_setting, step_setting  # noqa: F401
from gfxgate.datafiles import load_yaml
from gfxgate.errors import RuleError
from gfxgate.model import Evidence, Status, Verdict, os_of
from gfxgate.resources import rules_dir, schemas_dir
from gfxgate.saferegex import RuleRegexError, rule_regex
from gfxgate import datacache
from gfxgate.gate.workarounds import default_workarounds

if TYPE_CHECKING:  # annotations only
    from gfxgate.answer.view import MatrixView, StatusView
    from gfxgate.machine import MachineFacts


def _statuses(raw: Mapping[str, list[str]]) -> tuple[tuple[str, tuple[Status, ...]], ...]:
    return tuple((layer, tuple(Status(s) for s in values)) for layer, values in raw.items())


def load_routes(
    path: Path | None = None, *, layers: set[str] | None = None, workarounds: Iterable[Any] | None = None
) -> RouteRules:
    """Load rules/routes.yaml and cross-check backends, layers and workaround ids."""
    path = path or rules_dir() / "routes.yaml"
    data = load_yaml(path, "routes")
    backends = tuple((b["id"], b["title"]) for b in data["backends"])
    pending = tuple(data.get("pending_layers", ()))
    known_layers = None if layers is None else set(layers) | set(pending)
    by_id = {w.id: w for w in workarounds} if workarounds is not None else None
    routes, seen = [], set()

    def step_rule(s: dict) -> StepRule:
        if s.get("matches"):
            try:
                rule_regex(s["matches"])
            except RuleRegexError as exc:
                raise RuleError(f"{path}: step {s['workaround']}: {exc.message}") from None
        return StepRule(
            s["workaround"],
            s["short"],
            s["phrase"],
            _statuses(s["covers"]),
            s.get("matches"),
            s.get("setting"),
            s.get("setting_from"),
            s.get("satisfied_by"),
        )

    device_steps = tuple(step_rule(s) for s in data.get("device_steps", ()))
    for step in device_steps:
        problems = (
            [f"unknown workaround {step.workaround!r}"] if by_id is not None and step.workaround not in by_id else []
        )
        if known_layers is not None:
            problems += [f"unknown layer {layer!r}" for layer, _ in step.covers if layer not in known_layers]
        if problems:
            raise RuleError(f"{path}: device step {step.workaround}: " + "; ".join(problems))
    for raw in data["routes"]:
        steps = tuple(step_rule(s) for s in raw.get("steps", ()))
        rule = RouteRule(
            id=raw["id"],
            backend=raw["backend"],
            label=raw["label"],
            phrase=raw["phrase"],
            needs=_statuses(raw["needs"]),
            steps=steps,
            alone=raw.get("alone"),
            as_override=raw.get("as_target") == "override",
            fallback=bool(raw.get("fallback")),
            colour=raw["colour"],
            legend=raw["legend"],
            done_label=raw.get("done_label"),
            done_phrase=raw.get("done_phrase"),
            vendors=tuple(raw.get("vendors", ("amd",))),
            conditions=tuple(raw.get("conditions", ())),
            os=os_of(raw),
            states=tuple(raw.get("states", ())),
            beyond=bool(raw.get("beyond")),
            source=raw.get("source"),
            also_needs=tuple((tuple(a["layers"]), a["text"]) for a in raw.get("also_needs", ())),
            **({"none_applies": raw["none_applies"]} if "none_applies" in raw else {}),
        )
        problems = []
        if rule.id in seen:
            problems.append("duplicate id")
        seen.add(rule.id)
        if rule.backend not in dict(backends):
            problems.append(f"unknown backend {rule.backend!r}")
        named = [layer for layer, _ in rule.needs] + [layer for s in steps for layer, _ in s.covers]
        if known_layers is not None:
            problems += [f"unknown layer {layer!r}" for layer in dict.fromkeys(named) if layer not in known_layers]
        for step in steps:
            if by_id is not None and step.workaround not in by_id:
                problems.append(f"unknown workaround {step.workaround!r}")
            elif (
                by_id is not None
                and step.setting
                and step.setting.split("=")[0] != by_id[step.workaround].setting.split("=")[0]
            ):
                problems.append(
                    f"step {step.workaround}: setting {step.setting!r} is not a value of {by_id[step.workaround].setting!r}"
                )
            if step.setting_from and step.setting_from not in dict(step.covers):
                problems.append(
                    f"step {step.workaround}: setting_from {step.setting_from!r} is not a layer the step covers"
                )
            if step.satisfied_by and known_layers is not None and step.satisfied_by not in known_layers:
                problems.append(f"step {step.workaround}: satisfied_by names unknown layer {step.satisfied_by!r}")
            for layer, statuses in step.covers:
                needed = dict(rule.needs).get(layer)
                if needed is None:
                    problems.append(f"step {step.workaround} covers {layer!r}, which the route does not need")
                elif set(statuses) & set(needed):
                    problems.append(f"step {step.workaround} covers statuses of {layer!r} that already pass")
        if "{override}" in rule.label and not rule.as_override:
            problems.append("{override} in a label of a route without as_target: override")
        if rule.also_needs and not rule.as_override:
            problems.append("also_needs on a route without as_target: override")
        if known_layers is not None:
            problems += [
                f"also_needs: unknown layer {layer!r}"
                for layers_, _ in rule.also_needs
                for layer in layers_
                if layer not in known_layers
            ]
        if rule.beyond and (rule.as_override or rule.fallback or not rule.source):
            problems.append("a beyond route names its source and is neither an override nor a fallback route")
        if rule.source and not rule.beyond:
            problems.append("source: on a route that is not beyond the official release")
        if rule.fallback and (rule.needs or steps):
            problems.append("a fallback route has no needs and no steps")
        if problems:
            raise RuleError(f"{path}: route {rule.id}: " + "; ".join(problems))
        routes.append(rule)
    if known_layers is not None:
        unknown = [layer for layer in data.get("runs_on", ()) if layer not in known_layers]
        if unknown:
            raise RuleError(f"{path}: runs_on names unknown layer(s) {', '.join(unknown)}")
    if layers is not None:
        present = [p for p in pending if p in layers]
        if present:
            raise RuleError(f"{path}: pending_layers {', '.join(present)} exist now: remove them from pending_layers")
    return RouteRules(
        backends=backends,
        routes=tuple(routes),
        pending_layers=pending,
        device_steps=device_steps,
        undecided_colour=data["undecided_colour"],
        timeline_targets=tuple(data.get("timeline_targets", ())),
        runs_on=tuple(data.get("runs_on", ())),
    )


# what the shipped routes are cross-checked against (the layers' ids, the workarounds as default_workarounds checks
# them: against the layers, the pins' repositories and the targets), with the schemas those files are checked with
ROUTES_CHECKED_AGAINST = ("routes.yaml", "layers.yaml", "workarounds.yaml", "pins.toml", "targets.yaml")
ROUTES_CHECKED_SCHEMAS = ("routes", "layers", "workarounds", "pins", "targets")


@functools.cache
def default_routes() -> RouteRules:
    """The shipped routes, cross-checked against the layers and the workarounds once per content of the files those
    checks read (gfxgate's rules cache, keyed by their bytes and their schemas', as the log catalogue is): a later
    start reads routes.yaml alone, without the pins, the workarounds' own checks or the gate rules' module."""
    root = rules_dir()
    parts = [name.encode() + b"\0" + (root / name).read_bytes() for name in ROUTES_CHECKED_AGAINST]
    parts += [
        name.encode() + b"\0" + (schemas_dir() / f"{name}.schema.json").read_bytes() for name in ROUTES_CHECKED_SCHEMAS
    ]
    checked: list[RouteRules] = []

    def check() -> bool:
        from gfxgate.gate.ruleset import layer_ids

        # the layers' ids from rules/layers.yaml alone: no gate rule loaded (and no matcher imported)
        checked.append(load_routes(layers=set(layer_ids()), workarounds=default_workarounds()))
        return True

    datacache.cached(root / "routes.yaml", b"\0\0".join(parts), "routes-checked", None, check)
    return checked[0] if checked else load_routes()


def routes_for_os(rules: RouteRules, os: str) -> RouteRules:
    """The routes of ``os``'s release (``--os``): the one place routes are selected by OS (the HSA override route is
    Linux's: on Windows the HIP runtime does not go through HSA)."""
    return rules._replace(routes=tuple(r for r in rules.routes if os in r.os))


def decide(
    matrix: MatrixView,
    target: str,
    *,
    version: str | None = None,
    rules: RouteRules | None = None,
    workarounds: Iterable[Any] | None = None,
    runtime: Mapping[str, Verdict] | None = None,
    runtime_version: str | None = None,
    machine: MachineFacts | None = None,
    os: str = "linux",
) -> Route:
    """:func:`gfxgate.answer.route.decide` with the shipped route rules and workaround records unless given."""
    route = _decide(
        matrix,
        target,
        rules=rules or default_routes(),
        workarounds=default_workarounds() if workarounds is None else workarounds,
        version=version,
        runtime=runtime,
        runtime_version=runtime_version,
        machine=machine,
        os=os,
    )
    return with_recipes(route, build_recipes())


@functools.cache
def build_recipes() -> Mapping[str, Any]:
    """rules/installs.yaml's ``build``: the build route's recipe data (answer/steps.py: build_recipe)."""
    return load_yaml(rules_dir() / "installs.yaml", "installs")["build"]


def extra_targets(targets: Sequence[object], workarounds: Iterable[Any] | None = None) -> list[str]:
    """Processors whose columns the override routes read (the posed targets of the targets' overrides)."""
    return _extra_targets(targets, default_workarounds() if workarounds is None else workarounds)


def override_rule(rules: RouteRules | None = None) -> RouteRule | None:
    """The override route (``as_target: override``) of the rules: its needs and also_needs are the override check's."""
    return next((r for r in (rules or default_routes()).routes if r.as_override), None)


def override_check(view: StatusView, value: str, rules: RouteRules | None = None) -> OverrideCheck:
    """:func:`gfxgate.answer.override.check_override` with the shipped override route's needs."""
    rule = override_rule(rules)
    return check_override(view, value, rule.needs if rule else (), rule.also_needs if rule else ())


def override_shipped(
    matrix: StatusView, value: str, rules: RouteRules | None = None
) -> tuple[str | None, tuple[Evidence, ...]]:
    """Whether the release ships what ``HSA_OVERRIDE_GFX_VERSION=value`` makes the stack load (the override check
    over ``matrix``): ``(None, evidence)`` when every needed cell of the posed target passes; else the clause saying
    what the override also needs, with the refusing cells' evidence; "not checked" when the posed target's column is
    not in the matrix. The route decision and every remedy that names the override read this."""
    check = override_check(matrix, value, rules)
    return check.clause(), check.evidence


def override_needs(posed: str, failing: list[tuple[str, str, str]], release: str = "this release") -> str:
    """The clause of an override whose posed target ``release`` does not ship, in the shipped rules' words."""
    rule = override_rule()
    return needs_clause(posed, failing, rule.also_needs if rule else (), release)
