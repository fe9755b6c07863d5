"""The answer: from one target's column of a gate matrix, the shortest route to a working backend.

``rules/routes.yaml`` says which layer statuses let a route through and which checked workarounds
(``rules/workarounds.yaml``) are its steps; this module only applies those rules. Every route option
carries the evidence of the cells that make it apply, and every step the evidence of the cells it
covers — an option without evidence cannot be built. A needed layer that is unknown (or missing from
the matrix) leaves the route undecided with the reason; the answer then says it is uncertain instead
of guessing. The runtime row, when measured, confirms or refutes the answer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from gfxgate.datafiles import load_yaml
from gfxgate.errors import RuleError
from gfxgate.model import RANK, Evidence, GateMatrix, Status, Verdict
from gfxgate.resources import rules_dir

APPLIES, REFUSED, UNDECIDED = "applies", "refused", "undecided"


# -- the rules ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepRule:
    workaround: str
    short: str
    phrase: str
    covers: tuple[tuple[str, tuple[Status, ...]], ...]

    def covered(self, layer: str) -> tuple[Status, ...]:
        return dict(self.covers).get(layer, ())


@dataclass(frozen=True)
class RouteRule:
    id: str
    backend: str
    label: str
    phrase: str
    needs: tuple[tuple[str, tuple[Status, ...]], ...]
    steps: tuple[StepRule, ...] = ()
    alone: str | None = None
    as_override: bool = False
    fallback: bool = False


@dataclass(frozen=True)
class RouteRules:
    backends: tuple[tuple[str, str], ...]  # (id, title), in order
    routes: tuple[RouteRule, ...]
    pending_layers: tuple[str, ...] = ()

    def title(self, backend: str) -> str:
        return dict(self.backends)[backend]


def _statuses(raw: Mapping[str, list[str]]) -> tuple[tuple[str, tuple[Status, ...]], ...]:
    return tuple((layer, tuple(Status(s) for s in values)) for layer, values in raw.items())


def load_routes(path: Path | None = None, *, layers: set[str] | None = None, workarounds=None) -> RouteRules:
    """Load rules/routes.yaml and cross-check backends, layers and workaround ids."""
    path = path or rules_dir() / "routes.yaml"
    data = load_yaml(path, "routes")
    backends = tuple((b["id"], b["title"]) for b in data["backends"])
    pending = tuple(data.get("pending_layers", ()))
    known_layers = None if layers is None else set(layers) | set(pending)
    by_id = {w.id: w for w in workarounds} if workarounds is not None else None
    routes, seen = [], set()
    for raw in data["routes"]:
        steps = tuple(StepRule(s["workaround"], s["short"], s["phrase"], _statuses(s["covers"])) for s in raw.get("steps", ()))
        rule = RouteRule(
            id=raw["id"], backend=raw["backend"], label=raw["label"], phrase=raw["phrase"], needs=_statuses(raw["needs"]),
            steps=steps, alone=raw.get("alone"), as_override=raw.get("as_target") == "override",
            fallback=bool(raw.get("fallback")),
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
            for layer, statuses in step.covers:
                needed = dict(rule.needs).get(layer)
                if needed is None:
                    problems.append(f"step {step.workaround} covers {layer!r}, which the route does not need")
                elif set(statuses) & set(needed):
                    problems.append(f"step {step.workaround} covers statuses of {layer!r} that already pass")
        if "{override}" in rule.label and not rule.as_override:
            problems.append("{override} in a label of a route without as_target: override")
        if rule.fallback and (rule.needs or steps):
            problems.append("a fallback route has no needs and no steps")
        if problems:
            raise RuleError(f"{path}: route {rule.id}: " + "; ".join(problems))
        routes.append(rule)
    if layers is not None:
        present = [p for p in pending if p in layers]
        if present:
            raise RuleError(f"{path}: pending_layers {', '.join(present)} exist now: remove them from pending_layers")
    return RouteRules(backends=backends, routes=tuple(routes), pending_layers=pending)


@functools.cache
def default_routes() -> RouteRules:
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.gate.workarounds import default_workarounds

    return load_routes(layers={layer.id for layer in default_rules().layers}, workarounds=default_workarounds())


# -- the answer ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RouteStep:
    """One checked workaround on a route, with the evidence of the cells it covers."""

    workaround: str
    title: str
    setting: str
    risk: str
    covers: tuple[str, ...]
    evidence: tuple[Evidence, ...]

    def __post_init__(self) -> None:
        if not self.evidence:
            raise ValueError(f"route step {self.workaround} without evidence")

    def to_json(self) -> dict[str, Any]:
        return {"workaround": self.workaround, "title": self.title, "setting": self.setting, "risk": self.risk,
                "covers": list(self.covers), "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class RouteOption:
    """A way to run the target on one backend: the route rule, its steps, and the evidence that it applies."""

    route: str
    backend: str
    label: str
    phrase: str
    evidence: tuple[Evidence, ...]
    steps: tuple[RouteStep, ...] = ()
    override_target: str | None = None

    def __post_init__(self) -> None:
        if not self.evidence:
            raise ValueError(f"route {self.route} without evidence")

    def to_json(self) -> dict[str, Any]:
        return {"route": self.route, "backend": self.backend, "label": self.label, "phrase": self.phrase,
                "override_target": self.override_target, "steps": [s.to_json() for s in self.steps],
                "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class BackendAnswer:
    """One backend's shortest route, or why there is none (refused) or no decision (undecided)."""

    backend: str
    title: str
    option: RouteOption | None
    undecided: tuple[str, ...] = ()  # routes tried before (or instead of) the option that could not be decided
    refused: tuple[str, ...] = ()  # why the decided routes do not apply

    @property
    def state(self) -> str:
        if self.option is not None:
            return "route"
        return UNDECIDED if self.undecided else "none"

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "title": self.title, "state": self.state,
                "option": self.option.to_json() if self.option else None,
                "undecided": list(self.undecided), "refused": list(self.refused)}


@dataclass(frozen=True)
class RuntimeCheck:
    """What the runtime row says about the answer: confirmed, refuted or partly confirmed."""

    outcome: str
    summary: str
    evidence: tuple[Evidence, ...]

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "summary": self.summary, "evidence": [e.to_json() for e in self.evidence]}


@dataclass(frozen=True)
class Route:
    """The answer for one target at one version."""

    target: str
    version: str
    backends: tuple[BackendAnswer, ...]
    best: RouteOption | None
    label: str
    certain: bool
    reason: str | None = None  # why the answer is uncertain or missing
    runtime: RuntimeCheck | None = None

    def __post_init__(self) -> None:
        if self.best is None and not self.reason:
            raise ValueError(f"route for {self.target} without an option and without a reason")
        if not self.certain and not self.reason:
            raise ValueError(f"uncertain route for {self.target} without a reason")

    def backend(self, backend: str) -> BackendAnswer | None:
        return next((b for b in self.backends if b.backend == backend), None)

    @property
    def sentence(self) -> str:
        """The answer in one line, e.g. "gfx900 at v0.17.5: ROCm: build + rocBLAS files; or Vulkan: OLLAMA_VULKAN=1"."""
        others = [b.option.label for b in self.backends if b.option and b.option is not self.best and not b.option.route == "cpu"]
        head = f"{self.target}" + (f" at {self.version}" if self.version else "") + ": "
        text = head + (self.label if self.best else "undecided")
        if others and self.best is not None and self.best.backend != "cpu":
            text += "; or " + "; or ".join(others)
        if not self.certain:
            text += f" (uncertain: {self.reason})"
        elif self.best is None:
            text += f" ({self.reason})"
        return text

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "version": self.version, "label": self.label, "certain": self.certain,
                "reason": self.reason, "sentence": self.sentence,
                "best": self.best.to_json() if self.best else None,
                "backends": [b.to_json() for b in self.backends],
                "runtime": self.runtime.to_json() if self.runtime else None}


@dataclass
class _Outcome:
    state: str
    reasons: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    option: RouteOption | None = None


def _processor(target: str) -> str:
    return target.split(":", 1)[0]


def _override_columns(matrix: GateMatrix, target: str, workarounds) -> list[tuple[Any, str | None]]:
    """(workaround, column) for every HSA override that applies to the target; column None when not in the matrix."""
    from gfxgate.targets import catalog

    out = []
    for w in workarounds:
        if w.override and _processor(target) in w.applies_to:
            name = catalog().from_hsa_override(w.override).name
            out.append((w, name if name in matrix.targets else None))
    return out


def _layer_titles(matrix: GateMatrix) -> dict[str, str]:
    return {layer.id: layer.title for layer in matrix.layers}


def _walk(rule: RouteRule, matrix: GateMatrix, column: str, processor: str, by_id: Mapping[str, Any],
          pending: tuple[str, ...]) -> tuple[_Outcome, dict[str, list[Verdict]]]:
    """Check a route's needs in one column; returns the outcome and, per used step, the cells it covers."""
    titles = _layer_titles(matrix)
    evidence: list[Evidence] = []
    refusals: list[str] = []
    unknowns: list[str] = []
    used: dict[str, list[Verdict]] = {}
    for layer, allowed in rule.needs:
        if layer not in titles:
            why = "not added yet" if layer in pending else "not in this gate matrix"
            unknowns.append(f"{rule.id}: the {layer} layer is {why}")
            continue
        cell = matrix.cells[(layer, column)]
        if cell.status in allowed:
            evidence += cell.evidence
            continue
        if cell.status not in RANK:
            unknowns.append(f"{rule.id}: {titles[layer]} is {cell.status.value}" + (f" ({cell.reason})" if cell.reason else ""))
            continue
        step = next((s for s in rule.steps if cell.status in s.covered(layer) and s.workaround in by_id
                     and (not by_id[s.workaround].applies_to or processor in by_id[s.workaround].applies_to)), None)
        if step is None:
            refusals.append(f"{rule.id}: {titles[layer]} is {cell.status.value} ({cell.summary})")
            evidence[:0] = cell.evidence  # the refusing cells first: they explain a "none"
            continue
        used.setdefault(step.workaround, []).append(cell)
    if refusals:
        return _Outcome(REFUSED, refusals, evidence), used
    if unknowns:
        return _Outcome(UNDECIDED, unknowns), used
    return _Outcome(APPLIES, [], evidence), used


def _try(rule: RouteRule, matrix: GateMatrix, target: str, by_id: Mapping[str, Any], pending: tuple[str, ...],
         overrides) -> _Outcome:
    processor = _processor(target)
    if rule.as_override:
        if not overrides:
            return _Outcome(REFUSED, [f"{rule.id}: no HSA_OVERRIDE_GFX_VERSION workaround applies to {processor}"])
        first_fail: _Outcome | None = None
        undecided: list[str] = []
        for w, column in overrides:
            if column is None:
                undecided.append(f"{rule.id}: the override target of {w.setting} is not in the matrix")
                continue
            outcome, used = _walk(rule, matrix, column, _processor(column), by_id, pending)
            if outcome.state == APPLIES and not used:
                own = [c for layer, allowed in rule.needs
                       if (layer, target) in matrix.cells and (c := matrix.cells[(layer, target)]).status not in allowed]
                why = tuple(e for c in own for e in c.evidence) or tuple(outcome.evidence)
                step = RouteStep(w.id, w.title, w.setting, w.risk, tuple(c.layer for c in own) or tuple(w.unblocks), why)
                label = rule.label.replace("{override}", w.override)
                option = RouteOption(rule.id, rule.backend, label, rule.phrase.replace("{override}", w.override),
                                     tuple(outcome.evidence), (step,), override_target=column)
                return _Outcome(APPLIES, option=option)
            if outcome.state == UNDECIDED:
                undecided += outcome.reasons
            elif first_fail is None:
                first_fail = outcome
                first_fail.reasons = [f"{r} (as {column} via {w.setting})" for r in outcome.reasons]
        if undecided:
            return _Outcome(UNDECIDED, undecided)
        return first_fail or _Outcome(REFUSED, [f"{rule.id}: no override applies"])
    outcome, used = _walk(rule, matrix, target, processor, by_id, pending)
    if outcome.state != APPLIES:
        return outcome
    steps = []
    for step_rule in rule.steps:  # in the rule's order
        cells = used.get(step_rule.workaround)
        if cells:
            w = by_id[step_rule.workaround]
            steps.append((step_rule, RouteStep(w.id, w.title, w.setting, w.risk, tuple(c.layer for c in cells),
                                               tuple(e for c in cells for e in c.evidence))))
    label = rule.label.replace("{steps}", " + ".join(s.short for s, _ in steps))
    phrase = rule.phrase.replace("{steps}", " and ".join(s.phrase for s, _ in steps))
    evidence = tuple(outcome.evidence) + tuple(e for _, s in steps for e in s.evidence)
    outcome.option = RouteOption(rule.id, rule.backend, label, phrase, evidence, tuple(s for _, s in steps))
    return outcome


def _runtime(matrix: GateMatrix, target: str, best: RouteOption | None) -> RuntimeCheck | None:
    cell = matrix.cells.get(("runtime", target))
    if cell is None or cell.status not in RANK:
        return None
    outcome = {Status.ALLOWED: "confirmed", Status.PARTIAL: "partly confirmed"}.get(cell.status, "refuted")
    if best is not None and best.backend == "cpu":
        outcome = "refuted" if cell.status in (Status.ALLOWED, Status.PARTIAL) else "confirmed"
    return RuntimeCheck(outcome, f"runtime {cell.status.value}: {cell.summary}", cell.evidence)


def decide(matrix: GateMatrix, target: str, *, version: str | None = None, rules: RouteRules | None = None,
           workarounds=None) -> Route:
    """The answer for ``target`` from its column of ``matrix`` (and, for HSA overrides, the override target's)."""
    from gfxgate.gate.workarounds import default_workarounds

    rules = rules or default_routes()
    workarounds = default_workarounds() if workarounds is None else workarounds
    by_id = {w.id: w for w in workarounds}
    if version is None:
        version = next((s.ref for s in matrix.sources if s.name == "ollama"), "")
    overrides = _override_columns(matrix, target, workarounds)
    outcomes: dict[str, _Outcome] = {}
    for rule in rules.routes:
        if not rule.fallback:
            outcomes[rule.id] = _try(rule, matrix, target, by_id, rules.pending_layers, overrides)
    answers = []
    for backend, title in rules.backends:
        mine = [r for r in rules.routes if r.backend == backend and not r.fallback]
        if not mine:
            continue
        option, undecided, refused = None, [], []
        for rule in mine:
            o = outcomes[rule.id]
            if o.state == APPLIES:
                option = o.option
                break
            (undecided if o.state == UNDECIDED else refused).extend(o.reasons)
        answers.append(BackendAnswer(backend, title, option, tuple(undecided), tuple(refused)))
    best: RouteOption | None = None
    skipped: list[str] = []
    for rule in rules.routes:
        if rule.fallback:
            continue
        o = outcomes[rule.id]
        if o.state == APPLIES:
            best = o.option
            break
        if o.state == UNDECIDED:
            skipped += o.reasons
    fallback = next((r for r in rules.routes if r.fallback), None)
    if best is None and fallback is not None and all(a.state == "none" for a in answers):
        evidence = tuple(e for rule in rules.routes if not rule.fallback for e in outcomes[rule.id].evidence[:1])
        if evidence:
            best = RouteOption(fallback.id, fallback.backend, fallback.label, fallback.phrase, evidence)
            answers.append(BackendAnswer(fallback.backend, rules.title(fallback.backend), best))
    label = "undecided"
    if best is not None:
        label = best.label
        rule = next(r for r in rules.routes if r.id == best.route)
        if rule.alone and all(a.state == "none" for a in answers if a.backend not in (best.backend, fallback.backend if fallback else None)):
            label = rule.alone
    certain = best is not None and not skipped
    reason = "; ".join(dict.fromkeys(skipped)) or None
    if best is None and reason is None:
        reason = "no route decided"
    return Route(target=target, version=version, backends=tuple(answers), best=best, label=label, certain=certain,
                 reason=reason, runtime=_runtime(matrix, target, best))


def extra_targets(targets, workarounds=None) -> list[str]:
    """Processors whose columns the override routes read (HSA override targets of the given targets)."""
    from gfxgate.gate.workarounds import default_workarounds
    from gfxgate.targets import catalog

    workarounds = default_workarounds() if workarounds is None else workarounds
    names = {str(t) for t in targets}
    out: list[str] = []
    for t in targets:
        processor = _processor(str(t))
        for w in workarounds:
            if w.override and processor in w.applies_to:
                name = catalog().from_hsa_override(w.override).name
                if name not in names and name not in out:
                    out.append(name)
    return out
