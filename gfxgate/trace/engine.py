"""Run a trace rule at the versions a SourceSet names: stages → routes → hops, symbols bound on.

Within a stage the first route whose first hop is found is taken (e.g. cgo before ollama v0.30,
a llama-server flag after). A hop that cannot run — its source is not available, its file moved,
its symbol was renamed, or a variable it needs was not found — is reported missing with that
reason; nothing is invented. Each file is parsed at most once per run (shared ParseCache).
"""

from __future__ import annotations

import re

from gfxgate.model import Location
from gfxgate.trace.hops import HopContext, HopMissing, Match, kind_module
from gfxgate.trace.model import FOUND, MISSING, PARTIAL, TraceHop, TraceResult, TraceStage
from gfxgate.trace.rules import TEMPLATED, HopSpec, TraceRule

_VAR = re.compile(r"\{([a-z][a-z0-9_]*)\}")
_REGEX_PARAMS = ("pattern", "callee")


class Unbound(Exception):
    def __init__(self, var: str) -> None:
        super().__init__(var)
        self.var = var


def fill(value, bindings: dict[str, str], *, regex: bool = False):
    """Substitute ``{var}`` (regex-escaped in regex parameters); list items with unbound variables are dropped."""
    if isinstance(value, list):
        out = []
        for item in value:
            try:
                out.append(fill(item, bindings, regex=regex))
            except Unbound:
                if len(value) == 1:
                    raise
        if not out:
            raise Unbound(next(iter(_VAR.findall(" ".join(map(str, value)))), "?"))
        return out
    if not isinstance(value, str):
        return value

    def sub(m: re.Match) -> str:
        if m.group(1) not in bindings:
            raise Unbound(m.group(1))
        return re.escape(bindings[m.group(1)]) if regex else bindings[m.group(1)]

    return _VAR.sub(sub, value)


def trace(rule: TraceRule, sources, ctx: HopContext | None = None) -> TraceResult:
    ctx = ctx or HopContext(sources)
    before = ctx.cache.parsed
    ctx.missing = {}
    ctx.missing_roots = {}
    binder: dict[str, list[str]] = {}
    for stage in rule.stages:
        for route in stage.routes:
            for hop in route.hops:
                for var in hop.bind:
                    binder.setdefault(var, []).append(hop.id)
    bindings: dict[str, str] = {"option": rule.option}
    stages = []
    for stage in rule.stages:
        attempts = []
        chosen = None
        for route in stage.routes:
            local = dict(bindings)
            hops = _run_route(route.hops, stage.id, route.via, local, ctx, binder)
            attempts.append((route, hops, local))
            if hops and hops[0].status == FOUND:
                chosen = (route, hops, local)
                break
        if chosen is not None:
            route, hops, local = chosen
            bindings = local
            status = FOUND if all(h.status == FOUND for h in hops) else PARTIAL
            stages.append(TraceStage(stage, status, tuple(hops), route.via))
        else:
            hops = attempts[0][1] if len(attempts) == 1 else [a[1][0] for a in attempts]
            stages.append(TraceStage(stage, MISSING, tuple(hops)))
    conclusion, why = _conclude(rule, stages, bindings)
    infos = []
    for repo in rule.repos:
        try:
            src = sources.get(repo)
        except Exception:  # noqa: BLE001, S112 - unavailable sources are reported on their hops
            continue
        info = src.info()
        if info not in infos:
            infos.append(info)
    return TraceResult(
        option=rule.option,
        rule=rule.id,
        title=rule.title,
        question=rule.question,
        stages=tuple(stages),
        sources=tuple(infos),
        conclusion=conclusion,
        conclusion_reason=why,
        caution=fill(rule.caution, bindings) if rule.caution and _safe(rule.caution, bindings) else rule.caution,
        notes=tuple(dict.fromkeys(getattr(sources, "notes", []))),
        parsed_files=ctx.cache.parsed - before,
    )


def _safe(text: str, bindings: dict) -> bool:
    return all(v in bindings for v in _VAR.findall(text))


def _run_route(
    specs: tuple[HopSpec, ...], stage: str, via: str | None, local: dict, ctx: HopContext, binder: dict[str, list[str]]
) -> list[TraceHop]:
    out: list[TraceHop] = []
    roots = ctx.missing_roots
    for spec in specs:
        try:
            params = {"repo": spec.repo}
            for key, value in spec.params.items():
                params[key] = fill(value, local, regex=key in _REGEX_PARAMS) if key in TEMPLATED else value
            matches = kind_module(spec.kind).run(params, ctx)
        except Unbound as exc:
            # name the binding hop that failed last (the route actually taken), with its reason
            failed = [h for h in ctx.missing if h in binder.get(exc.var, [])]
            hop = failed[-1] if failed else " or ".join(binder.get(exc.var, ["?"]))
            why = roots.get(hop) or ctx.missing.get(hop)  # the root cause, not a chain of "needs"
            # the variable by its name, never as a raw {placeholder}: the reason is shown as it is
            reason = f"needs the {exc.var} that hop {hop} finds, which it did not" + (f" ({why})" if why else "")
            ctx.missing[spec.id] = reason
            if why:
                roots[spec.id] = why
            out.append(TraceHop(spec.id, stage, spec.kind, MISSING, note=spec.note, via=via, reason=reason))
            continue
        except HopMissing as exc:
            ctx.missing[spec.id] = exc.reason
            out.append(TraceHop(spec.id, stage, spec.kind, MISSING, note=spec.note, via=via, reason=exc.reason))
            continue
        first: Match = matches[0]
        local.update({var: first.outputs.get(output, "") for var, output in spec.bind.items()})
        seen = {(first.sites[0].file.path, first.sites[0].line)}
        further: list[Location] = []
        for m in matches[1:]:
            site_key = (m.sites[0].file.path, m.sites[0].line)
            if site_key not in seen and len(further) < 5:
                seen.add(site_key)
                further.append(ctx.location(m.sites[0]))
        also = tuple(further)
        for index, site in enumerate(first.sites):
            out.append(
                TraceHop(
                    id=spec.id if index == 0 else f"{spec.id}/{site.label or index}",
                    stage=stage,
                    kind=spec.kind,
                    status=FOUND,
                    location=ctx.location(site),
                    code=site.file.line_text(site.line),
                    symbol=site.symbol,
                    meaning=site.meaning,
                    meaning_source=site.meaning_source,
                    note=spec.note if index == 0 else None,
                    via=via,
                    also=also if index == 0 else (),
                )
            )
    return out


def _conclude(rule: TraceRule, stages: list[TraceStage], bindings: dict) -> tuple[str | None, str | None]:
    sink = next(s for s in stages if s.spec.sink)
    documented = sink.meaning
    if documented is None:
        if sink.status == MISSING:
            return None, f"the sink ({sink.spec.title}) was not reached: {sink.reason}"
        anchor = sink.anchor  # a sink that is not missing has a found hop
        return None, f"the sink ({sink.spec.title}) has no documentation at {anchor.location if anchor else '?'}"
    values = {
        **bindings,
        "sink_doc": documented.meaning,
        "sink": str(documented.location),
        "sink_symbol": documented.symbol,
    }
    for conclusion in rule.conclusions:
        if conclusion.match is None or conclusion.match.search(documented.meaning):
            try:
                return fill(conclusion.text, values), None
            except Unbound as exc:
                return None, f"conclusion text uses {{{exc.var}}}, which was not found"
    return f"{rule.option} ends in {documented.symbol}: “{documented.meaning}” ({documented.location})", None
