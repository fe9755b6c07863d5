"""The answer: from one target's column of a gate matrix (any :class:`~gfxgate.answer.view.MatrixView`), the
shortest route to a working backend.

``rules/routes.yaml`` says which layer statuses let a route through and which checked workarounds
(``rules/workarounds.yaml``) are its steps; this module only applies those rules. Every route option
carries the evidence of the cells that make it apply, and every step the evidence of the cells it
covers — an option without evidence cannot be built. A needed layer that is unknown (or missing from
the matrix) leaves the route undecided with the reason; the answer then says it is uncertain instead
of guessing. The runtime row, when measured, confirms or refutes the answer.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Iterable, Literal, Mapping, NamedTuple, Sequence

from gfxgate.answer.override import posed_target
from gfxgate.answer.steps import recipe_for, step_setting
from gfxgate.answer.view import MatrixView, StatusView
from gfxgate.machine import BackendJudgement, MachineFacts, judge, shows_cpu
from gfxgate.model import RANK, Evidence, NeedsEvidence, PerBackend, Status, Verdict
from gfxgate.records import dataclass
from gfxgate.saferegex import rule_regex
from gfxgate.serial import JsonRecord, json_dataclass, json_field
from gfxgate.targets import catalog

APPLIES, REFUSED, UNDECIDED = "applies", "refused", "undecided"


# -- the rules ----------------------------------------------------------------------------------------
# Named tuples: loaded once, never serialised (cheaper to define than frozen dataclasses); the results below are
# dataclasses, written through gfxgate.serial.
class StepRule(NamedTuple):
    """A workaround as a route step: the layer statuses it covers and, optionally, the restriction it lifts."""

    workaround: str
    short: str
    phrase: str
    covers: tuple[tuple[str, tuple[Status, ...]], ...]
    matches: str | None = None  # regex over the cell summary: the restriction this step lifts
    setting: str | None = None  # the value this route needs when the workaround's own setting is another one
    setting_from: str | None = None  # a layer whose covered cell's remedy is this version's command (e.g. cmake-filter)
    satisfied_by: str | None = None  # an artifact layer whose scanned, allowed cell shows the step already done

    def done(self, matrix: MatrixView, target: str) -> Verdict | None:
        """The scanned cell (``--installed``) that shows this step already done for the target, if any."""
        cell = matrix.cells.get((self.satisfied_by, target)) if self.satisfied_by else None
        return cell if cell is not None and cell.status == Status.ALLOWED and cell.evidence else None

    def covered(self, layer: str) -> tuple[Status, ...]:
        return dict(self.covers).get(layer, ())

    def lifts(self, cell: Verdict) -> bool:
        """Whether the step lifts this cell's restriction: a covered status, and for an override-required cell (which
        names the switch it needs) one whose summary ``matches``; a blocked or partial cell of a covered layer is
        the step's by its layer (rocBLAS artifacts "no code for gfx900 …" is what copying rocBLAS files lifts)."""
        if cell.status not in self.covered(cell.layer):
            return False
        return (
            self.matches is None
            or cell.status != Status.OVERRIDE_REQUIRED
            or rule_regex(self.matches).search(cell.summary) is not None
        )


class RouteRule(NamedTuple):
    """One route of ``rules/routes.yaml``: the backend, the statuses it needs and its steps."""

    id: str
    backend: str
    label: str
    phrase: str
    needs: tuple[tuple[str, tuple[Status, ...]], ...]
    steps: tuple[StepRule, ...] = ()
    alone: str | None = None
    as_override: bool = False
    fallback: bool = False
    colour: str = "#888888"
    legend: str = ""
    done_label: str | None = None  # the label when the installed tree satisfies every step
    done_phrase: str | None = None
    also_needs: tuple[tuple[tuple[str, ...], str], ...] = ()  # as_target: what the override also needs, by layers
    none_applies: str = "no override applies to {processor}"  # as_target: the refusal when no override applies
    vendors: tuple[str, ...] = ("amd",)  # whose targets this route is tried for (rules/routes.yaml `vendors:`)
    conditions: tuple[str, ...] = ()  # layers whose not-allowed cell the answer states as a condition (a driver window)
    states: tuple[str, ...] = ()  # layers whose cell the answer states even when allowed (the runner folder)
    beyond: bool = False  # a route beyond the official release (a fork, TheRock): listed after the official routes
    source: str | None = None  # beyond: the source (rules/pins.toml) whose ref fills {version}
    os: tuple[str, ...] = ("linux",)  # the operating systems the route is for (rules/routes.yaml `os:`; absent: linux)


class RouteRules(NamedTuple):
    """All of ``rules/routes.yaml``: backends in order, routes, and the settings of the answer."""

    backends: tuple[tuple[str, str], ...]  # (id, title), in order
    routes: tuple[RouteRule, ...]
    pending_layers: tuple[str, ...] = ()
    device_steps: tuple[StepRule, ...] = ()
    undecided_colour: str = "#d0d0d0"
    timeline_targets: tuple[str, ...] = ()
    runs_on: tuple[str, ...] = ()  # layers whose blocked cell refuses every route of their backends

    def title(self, backend: str) -> str:
        return dict(self.backends)[backend]


# -- the answer ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SatisfiedStep(NeedsEvidence, JsonRecord):
    """A step the installed tree (``--installed``) already satisfies: dropped from the route, with the cell that
    shows it (its evidence is ``file@offset`` of the code objects / rocBLAS files found)."""

    workaround: str
    layer: str
    evidence: tuple[Evidence, ...]

    evidence_for = "satisfied step {self.workaround}"


@dataclass(frozen=True)
class RouteStep(NeedsEvidence, JsonRecord):
    """One checked workaround on a route, with the evidence of the cells it covers."""

    workaround: str
    title: str
    setting: str
    risk: str
    covers: tuple[str, ...]
    evidence: tuple[Evidence, ...]
    check: StepCheck | None = None  # the workaround's own checks at this version (live scans only)
    recipe: tuple[str, ...] = ()  # a build step's commands at this version (answer/steps.py: build_recipe)

    evidence_for = "route step {self.workaround}"


@dataclass(frozen=True)
class StepCheck(JsonRecord):
    """``gfxgate workarounds``' verdict on a step at the scanned version: live (with evidence), stale or unknown."""

    state: str
    summary: str
    evidence: tuple[Evidence, ...] = ()


@dataclass(frozen=True)
class RouteOption(NeedsEvidence, JsonRecord):
    """A way to run the target on one backend: the route rule, its steps, and the evidence that it applies."""

    route: str
    backend: str
    label: str
    phrase: str
    evidence: tuple[Evidence, ...]
    steps: tuple[RouteStep, ...] = ()
    override_target: str | None = None
    satisfied: tuple[SatisfiedStep, ...] = ()  # steps the installed tree already satisfies (dropped)
    conditions: tuple[str, ...] = ()  # what else must hold, from the cells the route names (a driver window, PTX JIT)

    evidence_for = "route {self.route}"


@json_dataclass(frozen=True)
class BackendAnswer(JsonRecord):
    """One backend's shortest route, or why there is none (refused) or no decision (undecided)."""

    backend: str
    title: str = json_field(after={"state": lambda answer: answer.state})
    option: RouteOption | None
    undecided: tuple[str, ...] = ()  # routes tried before (or instead of) the option that could not be decided
    refused: tuple[str, ...] = ()  # why the decided routes do not apply
    evidence: tuple[Evidence, ...] = ()  # the cells that refuse the backend's routes
    machine: BackendJudgement | None = (
        None  # what this machine's runners and runs say of the backend (decide's machine=)
    )

    def to_json(self) -> dict[str, Any]:
        """The fields; ``machine`` only where a machine was judged (a release's answer has no machine)."""
        data = JsonRecord.to_json(self)
        if self.machine is None:
            data.pop("machine", None)
        return data

    @property
    def state(self) -> str:
        if self.option is not None:
            return "route"
        return UNDECIDED if self.undecided else "none"


@json_dataclass(frozen=True)
class Route(JsonRecord, PerBackend):
    """The answer for one target at one version."""

    target: str
    version: str
    backends: tuple[BackendAnswer, ...]
    best: RouteOption | None
    label: str
    certain: bool
    reason: str | None = json_field(
        default=None, after={"sentence": lambda route: route.sentence}
    )  # why uncertain or missing
    runtime: RuntimeCheck | None = None
    beyond: tuple[BeyondRoute, ...] = ()  # routes beyond the official release, listed after the official ones

    def __post_init__(self) -> None:
        if self.best is None and not self.reason:
            raise ValueError(f"route for {self.target} without an option and without a reason")
        if not self.certain and not self.reason:
            raise ValueError(f"uncertain route for {self.target} without a reason")

    @property
    def sentence(self) -> str:
        """The answer in one line, e.g. "gfx900 at v0.17.5: ROCm: build + rocBLAS files; or Vulkan: OLLAMA_VULKAN=1"."""
        others = [
            b.option.label
            for b in self.backends
            if b.option and b.option is not self.best and not b.option.route == "cpu"
        ]
        head = f"{self.target}" + (f" at {self.version}" if self.version else "") + ": "
        text = head + (self.label if self.best else "undecided")
        if others and self.best is not None and self.best.backend != "cpu":
            text += "; or " + "; or ".join(others)
        if not self.certain:
            text += f" (uncertain: {self.reason})"
        elif self.best is None:
            text += f" ({self.reason})"
        return text

    @property
    def full_sentence(self) -> str:
        """:attr:`sentence` (the official release's answer, which doctor, diagnose and the timeline share) and then
        each route beyond the release that applies (docs/forks.md), with its conditions' first clause."""
        text = self.sentence
        for b in self.beyond:  # a condition's first clause: what must hold (not what to do, nor where it was read)
            if b.option is not None:
                text += f"; or {b.option.label}" + "".join(
                    f" (if: {c.split(' — ', 1)[0].split(' [', 1)[0]})" for c in b.option.conditions
                )
        return text


@dataclass(frozen=True)
class BeyondRoute(JsonRecord):
    """A route beyond the official release (``beyond: true`` in rules/routes.yaml): another build of the same stack
    (the ollama-for-amd fork, TheRock's packages) read at its own pin. ``state``: applies (``option``, with its
    evidence), refused or undecided (``reasons``, and the refusing cells' ``evidence``)."""

    route: str
    source: str
    version: str
    state: str
    option: RouteOption | None = None
    reasons: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()

    def __post_init__(self) -> None:
        if self.option is None and not self.reasons:
            raise ValueError(f"beyond route {self.route} without an option and without a reason")


CheckOutcome = Literal["confirmed", "partly confirmed", "refuted", "not measured"]
_CHECK_OUTCOME: dict[Status, CheckOutcome] = {
    Status.ALLOWED: "confirmed",
    Status.PARTIAL: "partly confirmed",
}  # else refuted


@dataclass(frozen=True)
class RuntimeCheck(JsonRecord):
    """What the runtime row says about a :class:`Route`'s answer: confirmed, refuted or partly confirmed."""

    outcome: CheckOutcome
    summary: str
    evidence: tuple[Evidence, ...]


@dataclass
class _Outcome:
    """How one route fares for one target while it is being decided."""

    state: str
    reasons: list[str] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    option: RouteOption | None = None


def _processor(target: str) -> str:
    return target.split(":", 1)[0]


def _override_columns(matrix: MatrixView, target: str, workarounds: Iterable[Any]) -> list[tuple[Any, str | None]]:
    """(workaround, column) for every HSA override that applies to the target; column None when not in the matrix."""
    out = []
    for w in workarounds:
        if w.override and _processor(target) in w.applies_to:
            name = posed_target(w.override)
            out.append((w, name if name in matrix.targets else None))
    return out


def _layer_titles(matrix: MatrixView) -> dict[str, str]:
    return {layer.id: layer.title for layer in matrix.layers}


def _applies(step: StepRule, by_id: Mapping[str, Any], processor: str) -> bool:
    w = by_id.get(step.workaround)
    return w is not None and (not w.applies_to or processor in w.applies_to)


def _walk(
    rule: RouteRule, matrix: MatrixView, column: str, processor: str, by_id: Mapping[str, Any], rules: RouteRules
) -> tuple[_Outcome, dict[str, list[Verdict]]]:
    """Check a route's needs in one column; returns the outcome and, per used step, the cells it covers."""
    titles = _layer_titles(matrix)
    evidence: list[Evidence] = []
    refusals: list[str] = []
    unknowns: list[str] = []
    used: dict[str, list[Verdict]] = {}
    for row in matrix.layers:  # a backend's runtime that cannot run the target refuses every route of that backend
        runs = matrix.cells.get((row.id, column))
        if (
            row.id in rules.runs_on
            and rule.backend in row.backends
            and runs is not None
            and runs.status == Status.BLOCKED
            and not rule.beyond
        ):  # a route beyond the release brings its own runtime
            refusals.append(f"{rule.id}: {titles[row.id]} is {runs.status.value} ({runs.summary})")
            evidence[:0] = runs.evidence
    for layer, allowed in rule.needs:
        if layer not in titles:
            why = "not added yet" if layer in rules.pending_layers else "not in this gate matrix"
            unknowns.append(f"{rule.id}: the {layer} layer is {why}")
            continue
        cell = matrix.cells[(layer, column)]
        if cell.status in allowed:
            evidence += cell.evidence
            continue
        if cell.status not in RANK:
            unknowns.append(
                f"{rule.id}: {titles[layer]} is {cell.status.value}" + (f" ({cell.reason})" if cell.reason else "")
            )
            continue
        steps = [s for s in rule.steps + rules.device_steps if s.lifts(cell) and _applies(s, by_id, processor)]
        if not steps:
            refusals.append(f"{rule.id}: {titles[layer]} is {cell.status.value} ({cell.summary})")
            evidence[:0] = cell.evidence  # the refusing cells first: they explain a "none"
            continue
        for step in steps:
            used.setdefault(step.workaround, []).append(cell)
    if refusals:
        return _Outcome(REFUSED, refusals, evidence), used
    if unknowns:
        return _Outcome(UNDECIDED, unknowns), used
    return _Outcome(APPLIES, [], evidence), used


def _device_steps(
    rule: RouteRule, matrix: MatrixView, target: str, by_id: Mapping[str, Any], rules: RouteRules
) -> dict[str, list[Verdict]]:
    """Under an HSA override, the device's own restrictions that a device step lifts (an iGPU stays an iGPU)."""
    used: dict[str, list[Verdict]] = {}
    for layer, allowed in rule.needs:
        cell = matrix.cells.get((layer, target))
        if cell is None or cell.status in allowed or cell.status not in RANK:
            continue
        for step in rules.device_steps:
            if step.lifts(cell) and _applies(step, by_id, _processor(target)):
                used.setdefault(step.workaround, []).append(cell)
    return used


def _make_steps(
    rule: RouteRule,
    rules: RouteRules,
    used: dict[str, list[Verdict]],
    by_id: Mapping[str, Any],
    matrix: MatrixView,
    target: str,
) -> tuple[list, list, list]:
    """(route steps, device steps) as (StepRule, RouteStep) pairs, in the rules' order, and the steps the installed
    tree already satisfies (SatisfiedStep)."""
    route_steps: list[tuple[StepRule, RouteStep]] = []
    device: list[tuple[StepRule, RouteStep]] = []
    satisfied: list[SatisfiedStep] = []
    for bucket, step_rules in ((route_steps, rule.steps), (device, rules.device_steps)):
        for step_rule in step_rules:
            cells = used.pop(step_rule.workaround, None)
            done = step_rule.done(matrix, target) if cells else None
            if done is not None:
                satisfied.append(SatisfiedStep(step_rule.workaround, done.layer, done.evidence))
                continue
            if cells:
                w = by_id[step_rule.workaround]
                evidence = [e for c in cells for e in c.evidence]
                if step_rule.matches:  # the lines that show the restriction this step lifts come first
                    evidence.sort(key=lambda e: rule_regex(step_rule.matches).search(f"{e.text} {e.note}") is None)
                setting = step_setting(w, target, rule=step_rule, cells=cells)
                bucket.append(
                    (
                        step_rule,
                        RouteStep(
                            w.id,
                            w.title,
                            setting,
                            w.risk,
                            tuple(dict.fromkeys(c.layer for c in cells)),
                            tuple(evidence),
                        ),
                    )
                )
    return route_steps, device, satisfied


def _option(
    rule: RouteRule,
    label: str,
    phrase: str,
    evidence: Iterable[Evidence],
    route_steps: list[tuple[Any, RouteStep]],
    device: list[tuple[Any, RouteStep]],
    override_target: str | None = None,
    satisfied: Sequence[SatisfiedStep] = (),
) -> RouteOption:
    if satisfied and not route_steps and rule.done_label:
        label, phrase = rule.done_label, rule.done_phrase or rule.done_label
    elif "{steps}" in label or "{steps}" in phrase:
        label = label.replace("{steps}", " + ".join(s.short for s, _ in route_steps))
        phrase = phrase.replace("{steps}", " and ".join(s.phrase for s, _ in route_steps))
    if device:
        label += "".join(f" + {s.short}" for s, _ in device)
        phrase += " with " + " and ".join(s.phrase for s, _ in device)
    steps = tuple(s for _, s in route_steps + device)
    evidence = (
        tuple(evidence) + tuple(e for s in steps for e in s.evidence) + tuple(e for s in satisfied for e in s.evidence)
    )
    return RouteOption(
        rule.id,
        rule.backend,
        label,
        phrase,
        evidence,
        steps,
        override_target=override_target,
        satisfied=tuple(satisfied),
    )


def _try(
    rule: RouteRule,
    matrix: MatrixView,
    target: str,
    by_id: Mapping[str, Any],
    rules: RouteRules,
    overrides: list[tuple[Any, str | None]],
) -> _Outcome:
    processor = _processor(target)
    if rule.as_override:
        if not overrides:
            return _Outcome(REFUSED, [f"{rule.id}: " + rule.none_applies.replace("{processor}", processor)])
        first_fail: _Outcome | None = None
        undecided: list[str] = []
        for w, column in overrides:
            if column is None:
                undecided.append(f"{rule.id}: the override target of {w.setting} is not in the matrix")
                continue
            outcome, used = _walk(rule, matrix, column, _processor(column), by_id, rules)
            if outcome.state == APPLIES and not used:
                own = [
                    c
                    for layer, allowed in rule.needs
                    if (layer, target) in matrix.cells and (c := matrix.cells[(layer, target)]).status not in allowed
                ]
                why = tuple(e for c in own for e in c.evidence) or tuple(outcome.evidence)
                step = RouteStep(
                    w.id,
                    w.title,
                    step_setting(w, target),
                    w.risk,
                    tuple(c.layer for c in own) or tuple(w.unblocks),
                    why,
                )
                _, device, _ = _make_steps(
                    rule, rules, _device_steps(rule, matrix, target, by_id, rules), by_id, matrix, target
                )
                option = _option(
                    rule,
                    rule.label.replace("{override}", w.override),
                    rule.phrase.replace("{override}", w.override),
                    outcome.evidence,
                    [(None, step)],
                    device,
                    override_target=column,
                )
                return _Outcome(APPLIES, option=option)
            if outcome.state == UNDECIDED:
                undecided += outcome.reasons
            elif first_fail is None:
                first_fail = outcome
                first_fail.reasons = [f"{r} (as {column} via {w.setting})" for r in outcome.reasons]
        if undecided:
            return _Outcome(UNDECIDED, undecided)
        return first_fail or _Outcome(REFUSED, [f"{rule.id}: no override applies"])
    outcome, used = _walk(rule, matrix, target, processor, by_id, rules)
    if outcome.state != APPLIES:
        return outcome
    route_steps, device, satisfied = _make_steps(rule, rules, used, by_id, matrix, target)
    outcome.option = _option(rule, rule.label, rule.phrase, outcome.evidence, route_steps, device, satisfied=satisfied)
    if (
        rule.conditions or rule.states
    ):  # the cells the route names that let it through with a condition say what must hold
        held = tuple(
            f"{cell.summary}" + (f" — {cell.remedy}" if cell.remedy else "")
            for layer in dict.fromkeys(rule.states + rule.conditions)
            if (cell := matrix.cells.get((layer, target))) is not None
            and (layer in rule.states or cell.status not in (Status.ALLOWED, Status.NOT_SCANNED, Status.NOT_MEASURED))
        )
        outcome.option = dataclasses.replace(outcome.option, conditions=held)
    return outcome


def _same_version(a: str, b: str) -> bool:
    return a.removeprefix("v") == b.removeprefix("v")


def _runtime(
    matrix: MatrixView,
    target: str,
    best: RouteOption | None,
    *,
    rules: RouteRules,
    backends: Mapping[str, Verdict] | None = None,
    version: str = "",
    runtime_version: str | None = None,
) -> RuntimeCheck | None:
    """What the runtime row says about the answer. With the runs split by the backend they exercised
    (``backends``), only the best route's own backend confirms or refutes it; a row that ran other backends says
    it did not measure this route (a CPU-only endpoint or a Vulkan run is not the ROCm route). A row measured at
    another version than the one judged says so first."""
    cell = matrix.cells.get(("runtime", target))
    if cell is None or cell.status not in RANK:
        return None
    head = ""
    if runtime_version and version and not _same_version(runtime_version, version):
        head = (
            f"the runtime ran ollama {runtime_version}, this answer is for {version} "
            f"(`--ref ollama=v{runtime_version.removeprefix('v')}` judges the run's own version); "
        )
    if best is not None and best.backend == "cpu":
        outcome: CheckOutcome = "refuted" if cell.status in (Status.ALLOWED, Status.PARTIAL) else "confirmed"
        return RuntimeCheck(outcome, head + f"runtime {cell.status.value}: {cell.summary}", cell.evidence)
    if backends is not None and best is not None:
        own = backends.get(best.backend)
        if own is None or own.status not in RANK:
            measured = (
                ", ".join(
                    f"{rules.title(b) if b in dict(rules.backends) else b} ({v.status.value}: {v.summary})"
                    for b, v in backends.items()
                )
                or f"no GPU backend ({cell.summary})"
            )
            return RuntimeCheck(
                "not measured",
                head + f"the runs exercised {measured}, not the {rules.title(best.backend)} route of this answer",
                cell.evidence,
            )
        outcome = _CHECK_OUTCOME.get(own.status, "refuted")
        return RuntimeCheck(
            outcome, head + f"{rules.title(best.backend)} runtime {own.status.value}: {own.summary}", own.evidence
        )
    outcome = _CHECK_OUTCOME.get(cell.status, "refuted")
    return RuntimeCheck(outcome, head + f"runtime {cell.status.value}: {cell.summary}", cell.evidence)


def decide(
    matrix: MatrixView,
    target: str,
    *,
    rules: RouteRules,
    workarounds: Iterable[Any],
    version: str | None = None,
    runtime: Mapping[str, Verdict] | None = None,
    runtime_version: str | None = None,
    machine: MachineFacts | None = None,
    os: str = "linux",
) -> Route:
    """The answer for ``target`` from its column of ``matrix`` (and, for HSA overrides, the override target's), by
    the route rules (``rules``: gate.route.default_routes) and the workaround records (``workarounds``: loaded once,
    gate.workarounds.default_workarounds), both passed in: this layer reads no file and imports no pipeline.
    ``os``: the operating system asked about; the routes beyond the release are those of that OS."""
    beyond_rules = tuple(r for r in rules.routes if r.beyond and vendor_of(target) in r.vendors and os in r.os)
    rules = rules._replace(routes=tuple(r for r in rules.routes if vendor_of(target) in r.vendors and not r.beyond))
    if version is None:
        version = next((s.ref for s in matrix.sources if s.name == "ollama"), "")
    refs = {s.name: s.ref for s in matrix.sources} | ({"ollama": version} if version else {})
    # each step's setting of the scanned version's era; a workaround that does not exist there is no step
    workarounds = tuple(w.at(refs.get) for w in workarounds if w.exists_at(refs.get))
    by_id = {w.id: w for w in workarounds}
    overrides = _override_columns(matrix, target, workarounds)
    outcomes: dict[str, _Outcome] = {}
    for rule in rules.routes:
        if not rule.fallback:
            outcomes[rule.id] = _try(rule, matrix, target, by_id, rules, overrides)
    answers = []
    for backend, title in rules.backends:
        mine = [r for r in rules.routes if r.backend == backend and not r.fallback]
        if not mine:
            continue
        option = None
        undecided: list[str] = []
        refused: list[str] = []
        for rule in mine:
            o = outcomes[rule.id]
            if o.state == APPLIES:
                option = o.option
                break
            (undecided if o.state == UNDECIDED else refused).extend(o.reasons)
        evidence = () if option else tuple(e for rule in mine for e in outcomes[rule.id].evidence[:1])
        answers.append(BackendAnswer(backend, title, option, tuple(undecided), tuple(refused), evidence))
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
        if rule.alone and all(
            a.state == "none"
            for a in answers
            if a.backend not in (best.backend, fallback.backend if fallback else None)
        ):
            label = rule.alone
    certain = best is not None and not skipped
    reason = "; ".join(dict.fromkeys(skipped)) or None
    if best is None and reason is None:
        reason = "no route decided"
    beyond = _beyond(beyond_rules, matrix, target, by_id, rules, refs)
    route = Route(
        target=target,
        version=version,
        backends=tuple(answers),
        best=best,
        label=label,
        certain=certain,
        reason=reason,
        runtime=_runtime(
            matrix, target, best, rules=rules, backends=runtime, version=version, runtime_version=runtime_version
        ),
        beyond=beyond,
    )
    return with_machine(route, machine)


def _beyond(
    beyond_rules: tuple[RouteRule, ...],
    matrix: MatrixView,
    target: str,
    by_id: Mapping[str, Any],
    rules: RouteRules,
    refs: Mapping[str, str],
) -> tuple[BeyondRoute, ...]:
    """The routes beyond the official release, each decided on its own (none competes with an official route). A
    route whose layers this view does not hold at all (the stored timeline, which reads no fork) is left out: nothing
    was read for it, which is not the same as unknown."""
    titles = _layer_titles(matrix)
    out = []
    for rule in beyond_rules:
        if not any(layer in titles for layer, _ in rule.needs):
            continue
        version = refs.get(rule.source or "", "")
        fill = {"{version}": version or "(unpinned)", "{processor}": _processor(target)}
        rule = rule._replace(label=_fill(rule.label, fill), phrase=_fill(rule.phrase, fill))
        outcome = _try(rule, matrix, target, by_id, rules, [])
        if outcome.state == APPLIES and outcome.option is not None:
            out.append(BeyondRoute(rule.id, rule.source or "", version, APPLIES, outcome.option))
        else:
            out.append(
                BeyondRoute(
                    rule.id,
                    rule.source or "",
                    version,
                    outcome.state,
                    None,
                    tuple(outcome.reasons) or ("no reason recorded",),
                    tuple(outcome.evidence),
                )
            )
    return tuple(out)


def _fill(text: str, values: Mapping[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def with_machine(route: Route, machine: MachineFacts | None) -> Route:
    """The Route on one machine (``machine``: its installed runners and its runs, gfxgate.machine): each backend
    carries what the machine says of it (``judge``: not installed, failed on this machine, ran on the CPU), and a
    best route whose backend the machine refutes gives way to the first backend with a route the machine does not
    refute. A best route with nothing to change while every run on the machine ran on the CPU is "ran on the CPU":
    the release needs no setting, so what is missing is on the machine (the runner, the driver). Applied by
    ``decide`` and to a Route read back from the timeline, so doctor, ``scan --log`` and the stored answer at a
    release all take the machine the same way."""
    if machine is None:
        return route
    backends = []
    for b in route.backends:
        said = judge(machine, b.backend)
        if said is None and b.option is not None and b.backend != "cpu" and not b.option.steps and shows_cpu(machine):
            cpu = [r for r in machine.runs if r.backend == "cpu"]
            said = BackendJudgement(
                b.backend,
                "ran on the CPU",
                "every run on this machine ran on the CPU, though the "
                "release needs no setting here: the runner or the driver is what is missing "
                "(`gfxgate doctor` looks at this machine)",
                (),
                tuple(r.where for r in cpu[:3]),
            )
        backends.append(dataclasses.replace(b, machine=said) if said is not None else b)
    best, label = route.best, route.label
    if best is not None and best.backend != "cpu":
        judged = {b.backend for b in backends if b.machine is not None}
        if best.backend in judged:
            free = next(
                (b.option for b in backends if b.option is not None and b.backend not in judged | {"cpu"}), None
            )
            if free is not None:
                best, label = free, free.label
    return dataclasses.replace(route, backends=tuple(backends), best=best, label=label)


def extra_targets(targets: Sequence[object], workarounds: Iterable[Any]) -> list[str]:
    """Processors whose columns the override routes read (HSA override targets of the given targets)."""
    names = {str(t) for t in targets}
    out: list[str] = []
    for t in targets:
        processor = _processor(str(t))
        for w in workarounds:
            if w.override and processor in w.applies_to:
                name = posed_target(w.override)
                if name not in names and name not in out:
                    out.append(name)
    return out


def attach_checks(route: Route, reports: Mapping[str, Any]) -> Route:
    """Put each step's workaround check (``gfxgate.gate.workarounds.check_all``) on the route; a step whose evidence
    is gone (stale) makes the answer uncertain, with the reason."""
    stale: list[str] = []

    def checked(option: RouteOption | None) -> RouteOption | None:
        if option is None:
            return None
        steps = []
        for step in option.steps:
            report = reports.get(step.workaround)
            if report is None:
                steps.append(step)
                continue
            evidence = tuple(e for r in report.results for e in r.evidence)
            steps.append(dataclasses.replace(step, check=StepCheck(report.state, report.summary, evidence)))
            if report.state == "stale" and option is route.best:
                stale.append(f"step {step.workaround} is {report.summary}")
        return dataclasses.replace(option, steps=tuple(steps))

    backends = tuple(dataclasses.replace(b, option=checked(b.option)) for b in route.backends)
    best = next(
        (
            b.option
            for b in backends
            if route.best is not None and b.option is not None and b.option.route == route.best.route
        ),
        None,
    )
    if best is None and route.best is not None:  # the CPU fallback has no steps
        best = route.best
    reason = "; ".join(([route.reason] if route.reason else []) + stale) or None
    beyond = tuple(dataclasses.replace(b, option=checked(b.option)) for b in route.beyond)
    return dataclasses.replace(
        route, backends=backends, best=best, certain=route.certain and not stale, reason=reason, beyond=beyond
    )


NOT_CHECKED = "not checked"


def mark_unchecked(route: Route, why: str) -> Route:
    """Every step without a check result says so: a snapshot answer's steps were not checked at this version."""

    def mark(option: RouteOption | None) -> RouteOption | None:
        if option is None or not option.steps:
            return option
        return dataclasses.replace(
            option,
            steps=tuple(
                s if s.check is not None else dataclasses.replace(s, check=StepCheck(NOT_CHECKED, why))
                for s in option.steps
            ),
        )

    backends = tuple(dataclasses.replace(b, option=mark(b.option)) for b in route.backends)
    best = next(
        (
            b.option
            for b in backends
            if route.best is not None and b.option is not None and b.option.route == route.best.route
        ),
        route.best,
    )
    beyond = tuple(dataclasses.replace(b, option=mark(b.option)) for b in route.beyond)
    return dataclasses.replace(route, backends=backends, best=best, beyond=beyond)


def step_settings(routes: Iterable[Route]) -> dict[str, dict[str, str]]:
    """Workaround id → {target: the setting its route step has}, over every backend's route of these routes (the
    best route's step first): what `gfxgate workarounds -t` shows for an entry that is a step there."""
    out: dict[str, dict[str, str]] = {}
    for r in routes:
        options = ([r.best] if r.best is not None else []) + [b.option for b in r.backends if b.option is not None]
        for option in options:
            for step in option.steps:
                out.setdefault(step.workaround, {}).setdefault(r.target, step.setting)
    return out


def step_workarounds(routes: Iterable[Route]) -> set[str]:
    """The workaround ids used as steps by these routes (what a live scan checks)."""
    return {s.workaround for r in routes for b in r.backends if b.option for s in b.option.steps} | {
        s.workaround for r in routes for b in r.beyond if b.option for s in b.option.steps
    }


# (vendor, workaround) -> the routes that take it, per tuple of routes (by identity, the tuple kept so its id is never
# another's): step_ruled_out and ruled_out ask it for each step of each cell (diagnose's refusals, 15,190 cells of the
# timeline), and scanned every route's steps each time
_TAKING: dict[int, tuple[tuple[RouteRule, ...], dict[tuple[str, str], tuple[RouteRule, ...]]]] = {}


def routes_taking(rules: RouteRules, vendor: str, workaround: str) -> list[RouteRule]:
    """The routes of ``rules`` tried for ``vendor``'s targets that take ``workaround`` as a step, in the rules' order."""
    entry = _TAKING.get(id(rules.routes))
    if entry is None or entry[0] is not rules.routes:
        index: dict[tuple[str, str], list[RouteRule]] = {}
        for r in rules.routes:
            for v in dict.fromkeys(r.vendors):
                for w in dict.fromkeys(step.workaround for step in r.steps):
                    index.setdefault((v, w), []).append(r)
        if len(_TAKING) >= 8:
            _TAKING.clear()
        entry = _TAKING[id(rules.routes)] = (rules.routes, {k: tuple(v) for k, v in index.items()})
    return list(entry[1].get((vendor, workaround), ()))


def step_ruled_out(
    view: StatusView, target: str, workaround: str, rules: RouteRules
) -> list[tuple[str, str, str]] | None:
    """Whether no route that takes ``workaround`` as a step can exist for ``target`` at the release ``view`` holds:
    for each such route, (its label, the first needed layer whose decided status neither the route accepts nor any of
    its steps lifts, that status); None when one of them can (or the workaround is no route's step, or the view does
    not decide it). What diagnose leaves a finding's step out by, over the stored release."""
    vendor = vendor_of(target)  # the routes of the target's vendor (Vulkan's opt-in is a route of each)
    routes = routes_taking(rules, vendor, workaround)
    if not routes:
        return None
    out = []
    for route in routes:
        blocking = [
            (layer, status)
            for layer, ok in route.needs
            if (status := view.status_of(layer, target)) is not None
            and status in RANK
            and status not in ok
            and status not in {s for step in route.steps for s in step.covered(layer)}
        ]
        if not blocking:
            return None
        layer, status = blocking[0]
        out.append((route.label, layer, status.value))
    return out


def vendor_of(target: str) -> str:
    """The vendor whose routes answer for ``target`` (a target no vendor knows is tried with AMD's, as before)."""
    vendor = catalog().vendor_of(target)
    return vendor.name if vendor is not None else "amd"


# -- a Route read back from a stored timeline ---------------------------------------------------------------------
class StoredBackend(NamedTuple):
    """One backend of a stored Route as the timeline keeps it (``timeline/model.py: BackendState``): its state, the
    route's words, the first reason it has none, the evidence, and the route's step ids in order."""

    backend: str
    state: str  # route, none, undecided
    label: str | None
    phrase: str | None
    reason: str | None
    evidence: tuple[Evidence, ...]
    steps: tuple[str, ...]


def stored_route_id(
    rules: RouteRules, backend: str, steps: tuple[str, ...], target: str, workarounds: Iterable[Any]
) -> str | None:
    """The route rule a stored backend's route is, from its step ids (the data; no label is read): an override's
    workaround first is the override route; a step of a route's own steps is that route; else the backend's route
    without steps of its own (rocm-release, vulkan-default, cuda-release, the CPU)."""
    vendor = vendor_of(target)
    mine = [r for r in rules.routes if r.backend == backend and vendor in r.vendors]
    overrides = {w.id for w in workarounds if w.override}
    if steps and steps[0] in overrides:
        return next((r.id for r in mine if r.as_override), None)
    for r in mine:
        if not r.as_override and {s.workaround for s in r.steps} & set(steps):
            return r.id
    return next((r.id for r in mine if not r.as_override and not r.steps), None)


def stored_route(
    target: str,
    version: str,
    *,
    route: str,
    label: str,
    certain: bool,
    reason: str | None,
    backends: Iterable[Any],
    rules: RouteRules,
    workarounds: Iterable[Any],
    evidence: tuple[Evidence, ...] = (),
) -> Route:
    """The Route a timeline stored for ``target`` at ``version`` (an ollama tag), read back: each backend's route
    from its stored step ids, each step's setting computed as ``decide`` computes it (:func:`step_setting`, the
    workaround at that version with its route step's rule). What doctor's and workarounds' timeline answers and
    diagnose's refusals read, so that they show the Route, never re-derive it."""
    ref_of = {"ollama": version}.get
    records = {w.id: w for w in workarounds}
    at_version: dict[str, Any] = {}

    def every(sid: str) -> Any:  # a step's workaround at that version, read for the steps the stored Route names
        w = at_version.get(sid)
        if w is None:
            w = at_version[sid] = records[sid].at(ref_of)
        return w

    step_rules = {s.workaround: s for r in rules.routes for s in r.steps} | {
        s.workaround: s for s in rules.device_steps
    }
    answers: list[BackendAnswer] = []
    best: RouteOption | None = None
    for b in backends:
        title = rules.title(b.backend) if b.backend in dict(rules.backends) else b.backend
        if b.state != "route":
            reasons = (b.reason,) if b.reason else ()
            answers.append(
                BackendAnswer(
                    b.backend,
                    title,
                    None,
                    reasons if b.state == UNDECIDED else (),
                    reasons if b.state != UNDECIDED else (),
                    tuple(b.evidence),
                )
            )
            continue
        ev = tuple(b.evidence) or tuple(evidence) or (Evidence("timeline", None, b.label or ""),)
        steps = []
        for sid in b.steps:
            w = every(sid)
            rule = step_rules.get(sid)
            covers = tuple(layer for layer, _ in rule.covers) if rule is not None else tuple(w.unblocks)
            steps.append(RouteStep(w.id, w.title, step_setting(w, target, rule=rule), w.risk, covers, ev))
        rid = stored_route_id(rules, b.backend, tuple(b.steps), target, workarounds) or route
        rule_ = next((r for r in rules.routes if r.id == rid), None)
        override = posed_target(every(b.steps[0]).override) if rule_ is not None and rule_.as_override else None
        option = RouteOption(
            rid, b.backend, b.label or label, b.phrase or "", ev, tuple(steps), override_target=override
        )
        answers.append(BackendAnswer(b.backend, title, option))
    backend_of = {r.id: r.backend for r in rules.routes}
    if route in backend_of:
        best = next((a.option for a in answers if a.backend == backend_of[route] and a.option is not None), None)
        if best is not None and best.route != route:
            best = dataclasses.replace(best, route=route)
            answers = [dataclasses.replace(a, option=best) if a.backend == best.backend else a for a in answers]
    if best is None and not reason:
        reason = "no route decided"
    return Route(
        target=target, version=version, backends=tuple(answers), best=best, label=label, certain=certain, reason=reason
    )


def ruled_out(route: Route, workaround: str, rules: RouteRules) -> list[tuple[str, BackendAnswer]] | None:
    """Whether ``route`` (decided, or read back from the timeline) leaves no way to use ``workaround``: every route
    that takes it as a step is of a backend the Route refuses (state none: each of that backend's routes refused,
    whatever its steps do). Then (the route's label, the refusing backend answer) per such route; None when a route
    that takes it has a backend with a route or an undecided one, or the workaround is no route's step."""
    vendor = vendor_of(route.target)
    routes = routes_taking(rules, vendor, workaround)
    if not routes:
        return None
    out = []
    for r in routes:
        answer = next((b for b in route.backends if b.backend == r.backend), None)
        if answer is None or answer.state != "none":
            return None
        out.append((r.label, answer))
    return out


def with_recipes(route: Route, build: Mapping[str, Any] | None) -> Route:
    """``route`` with each build step's recipe at the route's version (rules/installs.yaml ``build``, passed in):
    the commands scan prints under the step and doctor runs with this machine's distribution and unit."""
    if not build:
        return route

    def option(o: RouteOption | None) -> RouteOption | None:
        if o is None or not o.steps:
            return o
        steps = tuple(
            dataclasses.replace(s, recipe=recipe_for(build, s.workaround, s.setting, route.version)) for s in o.steps
        )
        return dataclasses.replace(o, steps=steps) if steps != o.steps else o

    backends = tuple(dataclasses.replace(b, option=option(b.option)) for b in route.backends)
    return dataclasses.replace(route, backends=backends, best=option(route.best))
