"""The rule engine: sources → facts (per rule, once) → verdicts (per target) → the gate matrix.

``collect_facts`` reads upstream files and runs each rule's matcher once, target-independently;
``build_matrix`` evaluates every target from those facts. The embedded snapshot is the output of
``collect_facts`` serialised, so a snapshot scan and a live scan share all evaluation code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, Mapping

from gfxgate.errors import SourceError
from gfxgate.gate.matrix import GateMatrix
from gfxgate.matchers import MATCHERS, Finding, Hit, NoMatch, fill
from gfxgate.model import Evidence, Location, SourceInfo, Status, Verdict, combine
from gfxgate.gate.ruleset import GateRule, RuleSet
from gfxgate.records import dataclass
from gfxgate.sources.versions import in_range, version_key

if TYPE_CHECKING:  # annotations only
    from gfxgate.gate.matrix import Layer
    from gfxgate.sources.base import Source
    from gfxgate.sources.resolve import SourceSet
    from gfxgate.targets import TargetCatalog, TargetId

FactState = Literal["matched", "no-match", "not-applicable", "unavailable"]
MATCHED: Final = "matched"
NO_MATCH: Final = "no-match"
NOT_APPLICABLE: Final = "not-applicable"
UNAVAILABLE: Final = "unavailable"


@dataclass(frozen=True)
class RuleFacts:
    """What one rule found at one version: facts to evaluate, or why there are none."""

    rule_id: str
    digest: str
    state: FactState  # MATCHED, NO_MATCH, NOT_APPLICABLE, UNAVAILABLE
    reason: str | None = None
    repo: str | None = None
    ref: str | None = None
    commit: str | None = None
    root: str = ""  # folder of a layout inside its repository (ggml inside ollama)
    facts: dict[str, Any] | None = None
    note: str | None = None  # read at another ref than the one chosen for it, and why
    unreadable: str | None = (
        None  # state "unavailable": the source that could not be read (llama-cpp for ggml at v0.30+)
    )

    def location(self, path: str, line: int | None) -> Location:
        full = f"{self.root}/{path}" if self.root else path
        return Location(repo=self.repo or "?", ref=self.ref or "", commit=self.commit, path=full, line=line)

    @property
    def where(self) -> str:
        return f"{self.repo}@{self.ref}" if self.repo else "?"

    def to_json(self) -> dict[str, Any]:
        out = {
            k: getattr(self, k)
            for k in ("rule_id", "digest", "state", "reason", "repo", "ref", "commit", "root", "facts")
        }
        if self.note:
            out["note"] = self.note
        if self.unreadable:
            out["unreadable"] = self.unreadable
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RuleFacts:
        read: dict[str, Any] = {
            k: data.get(k) for k in ("rule_id", "digest", "state", "reason", "repo", "ref", "commit", "facts")
        }
        return cls(**read, root=data.get("root") or "", note=data.get("note"), unreadable=data.get("unreadable"))


def _expand_paths(rule: GateRule, source: Source) -> list[str]:
    found: list[str] = []
    for pattern in rule.paths:
        if any(ch in pattern for ch in "*?["):
            found += [p for p in source.glob(pattern) if p not in found]
        elif source.read(pattern) is not None and pattern not in found:
            found.append(pattern)
    return found


def collect_facts(ruleset: RuleSet, sources: SourceSet) -> dict[str, RuleFacts]:
    """Run every rule's matcher once against its source (a :class:`SourceSet`)."""
    out: dict[str, RuleFacts] = {}
    for rule in ruleset.rules:
        base: dict[str, Any] = {"rule_id": rule.id, "digest": rule.digest}
        try:
            source = sources.get(rule.repo)
        except SourceError as exc:
            out[rule.id] = RuleFacts(
                **base,
                state=UNAVAILABLE,
                reason=f"source not available: {exc.message}",
                unreadable=exc.source or rule.repo,
            )
            continue
        ident: dict[str, Any] = {
            "repo": source.name,
            "ref": source.ref,
            "commit": source.commit,
            "root": getattr(source, "root", ""),
            "note": sources.substitution(rule.repo) if hasattr(sources, "substitution") else None,
        }
        unversioned = rule.versions and version_key(source.ref) is None  # a folder, a branch: its version is unknown
        if rule.versions and not unversioned and not in_range(source.ref, rule.versions):
            out[rule.id] = RuleFacts(
                **base, **ident, state=NOT_APPLICABLE, reason=f"applies to {rule.repo} {rule.versions}"
            )
            continue
        facts = _rule_facts(rule, source, base, ident)
        if unversioned and facts.state == NO_MATCH:
            # without a version number every rule is tried; one for another range that finds nothing does not apply
            facts = RuleFacts(
                **base,
                **ident,
                state=NOT_APPLICABLE,
                reason=f"applies to {rule.repo} {rule.versions}; {source.ref} has no version number and "
                f"the rule's construct is not there",
            )
        out[rule.id] = facts
    return out


def _rule_facts(rule: GateRule, source: Source, base: dict, ident: dict) -> RuleFacts:
    """One rule's facts at one source (matched, no-match or unavailable)."""
    try:
        paths = _expand_paths(rule, source)
    except SourceError as exc:
        return RuleFacts(
            **base,
            **ident,
            state=UNAVAILABLE,
            reason=f"source not available: {exc}",
            unreadable=exc.source or rule.repo,
        )
    if not paths and rule.absent is not None:
        return RuleFacts(**base, **ident, state=MATCHED, facts={"absent": list(rule.paths)})
    if not paths:
        reason = f"rule did not match at {source.name}@{source.ref}: {', '.join(rule.paths)} not found — upstream layout changed?"
        return RuleFacts(**base, **ident, state=NO_MATCH, reason=reason)
    prefetch = getattr(source, "prefetch", None)
    if prefetch:
        prefetch(paths)
    try:
        facts = MATCHERS[rule.matcher].extract(rule, source, paths)
    except SourceError as exc:
        return RuleFacts(
            **base,
            **ident,
            state=UNAVAILABLE,
            reason=f"source not available: {exc}",
            unreadable=exc.source or rule.repo,
        )
    except NoMatch as exc:
        reason = f"rule did not match at {source.name}@{source.ref}: {exc} — upstream layout changed?"
        return RuleFacts(**base, **ident, state=NO_MATCH, reason=reason)
    return RuleFacts(**base, **ident, state=MATCHED, facts=facts)


def absent_finding(rule: GateRule, facts: Mapping[str, Any], target: TargetId) -> Finding:
    """A rule's ``absent`` decision: the construct is not there; the files searched are the evidence."""
    searched = facts["absent"]
    hits = tuple(
        Hit(path, None, "(searched: no match)" if rule.matcher == "pattern-status" else "(not present)")
        for path in searched[:3]
    )
    spec = rule.absent or {}
    return Finding(Status(spec["status"]), fill(spec["summary"], target), hits, remedy=fill(spec.get("remedy"), target))


def evaluate_rule(
    rule: GateRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog, read_instead: str | None = None
) -> Finding:
    """``read_instead``: why the source was read at another ref than the one asked (a coupling's substitution),
    handed to a matcher that declares ``reads_substitution`` as ``facts["read_instead"]``."""
    if "absent" in facts and rule.absent is not None:
        return absent_finding(rule, facts, target)
    matcher = MATCHERS[rule.matcher]
    if read_instead and getattr(matcher, "reads_substitution", False):
        facts = {**facts, "read_instead": read_instead}
    return matcher.evaluate(rule, facts, target, catalog)


def _evidence(rule: GateRule, rf: RuleFacts, finding: Finding) -> tuple[Evidence, ...]:
    return tuple(
        Evidence(source=rule.id, location=rf.location(h.path, h.line), text=h.text, note=h.note) for h in finding.hits
    )


def _layer_verdict(
    layer_id: str,
    target: TargetId,
    rules: list[GateRule],
    facts: Mapping[str, RuleFacts],
    findings: dict[str, Finding],
    statuses: Mapping[str, Status],
) -> Verdict:
    decided: list[tuple[GateRule, Finding, Status]] = []
    undecided: list[str] = []
    for rule in rules:
        rf = facts.get(rule.id)
        if rf is None:
            undecided.append(
                f"{rule.title}: no evidence recorded for this rule (snapshot out of date? run `gfxgate snapshot build`)"
            )
            continue
        if rf.state == NOT_APPLICABLE:
            continue
        if rf.state != MATCHED:
            undecided.append(f"{rule.title}: {rf.reason}")
            continue
        finding = findings[rule.id]
        status = finding.status
        for when in rule.status_when:
            if statuses.get(when.layer) in when.is_:
                status = when.then
                break
        decided.append((rule, finding, status))
    known = [(r, f, s) for r, f, s in decided if s is not Status.UNKNOWN]
    if not known:
        reasons = [f"{r.title}: {f.summary}" for r, f, _ in decided] + undecided
        applicable = [r for r in rules if facts.get(r.id) is None or facts[r.id].state != NOT_APPLICABLE]
        if not applicable:
            where = ", ".join(sorted({facts[r.id].where for r in rules if r.id in facts})) or "the scanned versions"
            reasons = [f"no rule of this layer applies at {where}"]
        evidence = tuple(e for r, f, _ in decided for e in _evidence(r, facts[r.id], f))
        # a rule that decided "unknown" says why in its summary ("listed without a support mark"): that is the cell's
        summary = "; ".join(dict.fromkeys(f.summary for _, f, _ in decided)) or _undecided_summary(undecided)
        return Verdict(
            layer_id, str(target), Status.UNKNOWN, summary, evidence=evidence, reason="; ".join(reasons) or "no rules"
        )
    status = combine(s for _, _, s in known)
    evidence = tuple(e for r, f, _ in known for e in _evidence(r, facts[r.id], f))
    summary = "; ".join(f.summary if s == f.status else f"{f.summary} → {s.value}" for _, f, s in known)
    notes = list(dict.fromkeys(note for r, _, _ in known if (note := facts[r.id].note)))
    if notes:
        summary += " [" + "; ".join(notes) + "]"  # a substituted ref is never silent
    # every rule that sets the layer's status may need its own step (Vulkan opt-in and an integrated GPU: both)
    remedies = list(dict.fromkeys(f.remedy for _, f, s in known if s == status and f.remedy))
    remedy = "; ".join(remedies) or None
    reason = "; ".join(undecided) or None
    return Verdict(layer_id, str(target), status, summary, evidence=evidence, remedy=remedy, reason=reason)


def _undecided_summary(undecided: list[str]) -> str:
    """A cell no rule could decide says why in a few words (the whole of it is the reason): "source not available:
    ggml: … names llama-cpp b10488, which cannot be read", not the bare word "unknown"."""
    if not undecided:
        return "unknown"
    first = undecided[0].split(": ", 1)[1] if ": " in undecided[0] else undecided[0]  # without the rule's title
    cut = first.split("; ")[0]
    return cut if len(cut) <= 140 else cut[:139].rsplit(" ", 1)[0] + "…"


def not_scanned(layer: Layer, target: object) -> Verdict:
    if layer.kind == "runtime":
        return Verdict(
            layer.id,
            str(target),
            Status.NOT_MEASURED,
            "no sweep worklog given",
            reason="no sweep worklog given (`gfxgate sweep`, then `gfxgate scan --runtime WORKLOG`)",
        )
    return Verdict(
        layer.id,
        str(target),
        Status.NOT_SCANNED,
        "no installed files given",
        reason="no installed files scanned (`gfxgate scan --installed DIR`)",
    )


def other_vendor(layer: Layer, target: object) -> Verdict:
    """The cell of a row another vendor's targets have (an AMD layer in an NVIDIA target's column)."""
    return Verdict(
        layer.id,
        str(target),
        Status.UNKNOWN,
        "not a layer of this target's vendor",
        reason=f"{layer.title} is a layer of {', '.join(layer.vendors)} targets",
    )


def build_matrix(
    ruleset: RuleSet,
    facts: Mapping[str, RuleFacts],
    targets: list,
    catalog: TargetCatalog,
    *,
    extra_cells: Mapping[tuple[str, str], Verdict] | None = None,
    sources: tuple[SourceInfo, ...] = (),
    notes: tuple[str, ...] = (),
) -> GateMatrix:
    """Evaluate every target against the collected facts; artifact/runtime cells come from ``extra_cells``."""
    extra_cells = extra_cells or {}
    cells: dict[tuple[str, str], Verdict] = {}
    for target in targets:
        vendor = getattr(target, "vendor", "amd")
        mine = {layer.id for layer in ruleset.layers if vendor in layer.vendors}
        findings = {  # a matched rule has its facts: collect gives them, the snapshot schema requires them
            rule.id: evaluate_rule(rule, found, target, catalog, facts[rule.id].note)
            for rule in ruleset.rules
            if rule.layer in mine
            and rule.id in facts
            and facts[rule.id].state == MATCHED
            and (found := facts[rule.id].facts) is not None
        }
        statuses: dict[str, Status] = {}
        for layer in ruleset.layers:  # pass 1: layers decided without cross-layer conditions
            if layer.id not in mine:  # another vendor's row: says nothing about this target
                cells[(layer.id, str(target))] = other_vendor(layer, target)
                continue
            if layer.kind == "source":
                verdict = _layer_verdict(layer.id, target, ruleset.for_layer(layer.id), facts, findings, {})
            else:
                verdict = extra_cells.get((layer.id, str(target))) or not_scanned(layer, target)
            cells[(layer.id, str(target))] = verdict
            statuses[layer.id] = verdict.status
        for layer in ruleset.layers:  # pass 2: rules whose status depends on another layer's
            rules = ruleset.for_layer(layer.id)
            if layer.id in mine and layer.kind == "source" and any(r.status_when for r in rules):
                cells[(layer.id, str(target))] = _layer_verdict(layer.id, target, rules, facts, findings, statuses)
    return GateMatrix(
        targets=tuple(str(t) for t in targets),
        layers=ruleset.layers,
        cells=cells,
        sources=sources,
        notes=notes,
        rule_locations=ruleset.locations(),
    )
