"""`trace(TraceRequest)`: follow an option from the Python client through Ollama into llama.cpp (a TraceResult), or
list where each repository reads an environment variable (--env: an env search result)."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.trace.model import EnvSearch, TraceResult


@dataclass(frozen=True)
class TraceRequest:
    param: str | None = None  # an option (num_gpu, num_ctx, …)
    env_name: str | None = None  # or an environment variable
    graph: str | None = None  # the option's hops drawn as a graph: "mermaid" or "dot" (not for --env)
    refs: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    rules_root: Path | None = None  # trace rules from this folder instead of the shipped rules/traces


def trace(req: TraceRequest) -> TraceResult | EnvSearch:
    from gfxgate.app.common import require_source
    from gfxgate.errors import SourceError, UsageError
    from gfxgate.sources.resolve import SourceSet, load_pins
    from gfxgate.trace import load_trace_rules, search_env, trace_option

    param, env_name = req.param, req.env_name
    if bool(param) == bool(env_name):
        raise UsageError(
            "name either an option or --env NAME",
            hint="e.g. gfxgate trace num_gpu, gfxgate trace --env HSA_OVERRIDE_GFX_VERSION",
        )
    if env_name and req.graph:
        raise UsageError("--graph draws an option's hops; it does not apply to --env")
    pins = load_pins()
    rules = load_trace_rules(req.rules_root, known_repos=set(pins.sources) | set(pins.layouts))
    if param and param not in rules.traces:  # a usage error, before any source is opened
        from gfxgate.suggest import did_you_mean, known_names

        known = known_names(rules.traces)
        raise UsageError(
            f"no trace rule for {param!r}", hint=did_you_mean(param, rules.traces, then=known, otherwise=known)
        )
    sourceset = SourceSet(pins, sources=req.sources, refs=req.refs, offline=req.offline)
    try:
        # a version or location the user named must exist: fail clearly (exit 4/5) instead of
        # tracing with every hop of that repository missing
        for name in dict.fromkeys([*req.refs, *req.sources]):
            sourceset.get(name)
        if env_name:
            if rules.env is None:  # a --rules folder without one (search_env would take the shipped rule instead)
                raise UsageError("no environment-variable search rule (rules/traces/*.yaml with an env: section)")
            # every repository the search reads must open: a variable "not read" by a repository not read is no answer
            for name in rules.env.repos:
                require_source(sourceset, name, "trace")
            return search_env(sourceset, env_name, rule=rules.env)
        assert param is not None  # exactly one of the two is given (checked above)
        # An option's trace is a chain: the hops in a repository that cannot be read are reported missing with that
        # reason (trace.engine), and the rest is the answer, a partial trace that says where it stops and why
        # (issue 36 item 7). Only when no repository of the chain opens is there nothing to answer from (exit 5/4).
        needed = tuple(rules.traces[param].repos)
        unreadable: list[SourceError] = []
        for name in needed:
            try:
                sourceset.get(name)
            except SourceError as exc:
                if not getattr(exc, "source", None):
                    exc.source = name
                unreadable.append(exc)
        if unreadable and len(unreadable) == len(needed):
            require_source(sourceset, needed[0], "trace")  # raises, naming the --source to give
        for failed in unreadable:
            source = getattr(failed, "source", None) or "a source"
            sourceset.notes.append(
                f"partial trace: {source} cannot be read, so its hops are missing ({failed.message}); "
                f"give --source {source}=CLONE (a local clone with its tags)"
            )
        return trace_option(rules.traces[param], sourceset)
    finally:
        sourceset.close()
