"""Trace rules (``rules/traces/*.yaml``) → named tuples, validated and cross-checked at load.

A rule names an option, its stages (client, CLI help, server, runner bridge, llama.cpp…) and, per
stage, one or more *routes* (alternative hop chains, e.g. cgo before ollama v0.30, a llama-server
flag after). Hops pass symbols on through ``bind`` (``{json_key}``, ``{go_field}``…); a template
that uses a variable no earlier hop binds is an error at load, not at use. Line numbers are never
stored: every hop is located at the scanned version.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any, NamedTuple

from gfxgate.datafiles import load_yaml
from gfxgate.errors import RuleError
from gfxgate.resources import rules_dir
from gfxgate.sources.base import safe_relpath
from gfxgate.saferegex import RuleRegexError, rule_regex

_VAR = re.compile(r"\{([a-z][a-z0-9_]*)\}")

# What each hop kind can bind (``bind: {var: output}``); the kind modules produce these keys.
OUTPUTS: dict[str, frozenset[str]] = {
    "python-field": frozenset({"key", "field", "class"}),
    "go-json-field": frozenset({"field", "struct", "key"}),
    "string-literal": frozenset({"text"}),
    "go-selector": frozenset({"function", "callee", "arg_index", "dir", "expr"}),
    "go-call-param": frozenset({"param", "function", "dir"}),
    "go-field-copy": frozenset({"field", "type", "function"}),
    "http-json": frozenset({"key", "field", "receiver_field", "receiver_struct"}),
    "cgo-assign": frozenset({"field", "object"}),
    "c-field": frozenset({"field", "struct"}),
    "cli-flag": frozenset({"flag", "function"}),
    "arg-parser": frozenset({"field", "struct", "help"}),
}

# Hop parameters that are templates (``{var}`` filled from earlier hops).
TEMPLATED = (
    "class",
    "field",
    "json",
    "struct",
    "structs",
    "pattern",
    "function",
    "callee",
    "index",
    "value",
    "flag",
    "paths",
    "receiver_paths",
)


class HopSpec(NamedTuple):
    id: str
    kind: str
    repo: str
    params: dict[str, Any]
    bind: dict[str, str]
    note: str | None
    line: int | None  # where the hop is defined (for messages only)

    def needs(self) -> set[str]:
        out: set[str] = set()
        for key in TEMPLATED:
            value = self.params.get(key)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str):
                    out |= set(_VAR.findall(item))
        return out


class TraceRoute(NamedTuple):
    via: str | None
    hops: tuple[HopSpec, ...]


class StageSpec(NamedTuple):
    id: str
    title: str
    summary: bool
    sink: bool
    routes: tuple[TraceRoute, ...]


class Conclusion(NamedTuple):
    match: re.Pattern | None
    text: str


class TraceRule(NamedTuple):
    id: str
    option: str
    title: str
    question: str | None
    caution: str | None
    conclusions: tuple[Conclusion, ...]
    stages: tuple[StageSpec, ...]
    defined_in: str

    @property
    def repos(self) -> list[str]:
        seen: list[str] = []
        for stage in self.stages:
            for route in stage.routes:
                for hop in route.hops:
                    for repo in (hop.repo, hop.params.get("receiver_repo")):
                        if repo and repo not in seen:
                            seen.append(repo)
        return seen


class EnvKind(NamedTuple):
    kind: str
    description: str
    calls: re.Pattern | None
    paths: tuple[str, ...]
    in_list: bool
    composite: re.Pattern | None
    subscript: re.Pattern | None


class EnvRule(NamedTuple):
    id: str
    title: str
    repos: tuple[str, ...]
    paths: tuple[str, ...]
    exclude: tuple[str, ...]
    kinds: tuple[EnvKind, ...]
    defined_in: str


def _regex(value: str | None, where: str):
    if value is None:
        return None
    try:
        return rule_regex(value)
    except RuleRegexError as exc:
        raise RuleError(f"{where}: {exc.message}") from None


def _hop_lines(path: Path) -> dict[str, int]:
    """Line of each ``- id: X`` so cross-check errors can point at the hop."""
    lines = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = re.match(r"^\s*-?\s*id:\s*['\"]?([a-z][a-z0-9_.-]*)", line)
        if m and m.group(1) not in lines:
            lines[m.group(1)] = number
    return lines


def _check_globs(globs: list[str], where: str) -> None:
    for glob in globs:
        if not _VAR.search(glob):
            safe_relpath(glob)


def load_rule_file(path: Path, known_repos: set[str] | None = None) -> TraceRule | EnvRule:
    data = load_yaml(path, "trace")
    if "env" in data:
        env = data["env"]
        _check_globs(env["paths"] + env.get("exclude", []), str(path))
        kinds = tuple(
            EnvKind(
                kind=k["kind"],
                description=k["description"],
                calls=_regex(k.get("calls"), f"{path}: kind {k['kind']}"),
                paths=tuple(k.get("paths", ())),
                in_list=bool(k.get("in_list")),
                composite=_regex(k.get("composite"), f"{path}: kind {k['kind']}"),
                subscript=_regex(k.get("subscript"), f"{path}: kind {k['kind']}"),
            )
            for k in env["kinds"]
        )
        for repo in env["repos"]:
            if known_repos is not None and repo not in known_repos:
                raise RuleError(
                    f"{path}: env search names unknown repo {repo!r} (known: {', '.join(sorted(known_repos))})"
                )
        return EnvRule(
            data["id"],
            data["title"],
            tuple(env["repos"]),
            tuple(env["paths"]),
            tuple(env.get("exclude", ())),
            kinds,
            str(path),
        )
    lines = _hop_lines(path)
    bound = {"option"}
    seen_hops: set[str] = set()
    seen_stages: set[str] = set()
    stages = []
    for stage in data["stages"]:
        if stage["id"] in seen_stages:
            raise RuleError(f"{path}:{lines.get(stage['id'], '?')}: duplicate stage id {stage['id']!r}")
        seen_stages.add(stage["id"])
        raw_routes = stage.get("routes") or [{"via": None, "hops": stage["hops"]}]
        routes = []
        stage_binds: set[str] = set()
        for raw in raw_routes:
            route_bound = set(bound)
            hops = []
            for hop in raw["hops"]:
                where = f"{path}:{lines.get(hop['id'], '?')}"
                if hop["id"] in seen_hops:
                    raise RuleError(f"{where}: duplicate hop id {hop['id']!r}")
                seen_hops.add(hop["id"])
                params = {k: v for k, v in hop.items() if k not in ("id", "kind", "repo", "bind", "note")}
                spec = HopSpec(
                    hop["id"],
                    hop["kind"],
                    hop["repo"],
                    params,
                    dict(hop.get("bind", {})),
                    hop.get("note"),
                    lines.get(hop["id"]),
                )
                unknown = sorted(set(spec.bind.values()) - OUTPUTS[spec.kind])
                if unknown:
                    raise RuleError(
                        f"{where}: hop {spec.id}: a {spec.kind} hop cannot bind {', '.join(unknown)} "
                        f"(it gives {', '.join(sorted(OUTPUTS[spec.kind]))})"
                    )
                missing = sorted(spec.needs() - route_bound)
                if missing:
                    raise RuleError(
                        f"{where}: hop {spec.id} uses {', '.join('{' + m + '}' for m in missing)}, "
                        "which no earlier hop binds"
                    )
                for repo in (spec.repo, params.get("receiver_repo")):
                    if repo and known_repos is not None and repo not in known_repos:
                        raise RuleError(
                            f"{where}: hop {spec.id} names unknown repo {repo!r} "
                            f"(known: {', '.join(sorted(known_repos))})"
                        )
                for key in ("pattern", "callee"):
                    if key in params and not _VAR.search(str(params[key])):
                        _regex(params[key], f"{where}: hop {spec.id}: {key}")
                _check_globs(list(params.get("paths", [])) + list(params.get("receiver_paths", [])), where)
                route_bound |= set(spec.bind)
                hops.append(spec)
            stage_binds |= route_bound
            routes.append(TraceRoute(raw.get("via"), tuple(hops)))
        # a later stage may use what any route of this stage binds; when that route is not taken
        # the hop is reported missing at run time ("needs {x}")
        bound |= stage_binds
        stages.append(
            StageSpec(stage["id"], stage["title"], stage.get("summary", True), stage.get("sink", False), tuple(routes))
        )
    sinks = [s for s in stages if s.sink]
    if len(sinks) != 1:
        raise RuleError(f"{path}: exactly one stage must be the sink (sink: true), found {len(sinks)}")
    conclusions = tuple(
        Conclusion(_regex(c.get("match"), f"{path}: conclusion"), c["text"]) for c in data.get("conclusion", [])
    )
    return TraceRule(
        data["id"],
        data["option"],
        data["title"],
        data.get("question"),
        data.get("caution"),
        conclusions,
        tuple(stages),
        str(path),
    )


class TraceRules(NamedTuple):
    traces: dict[str, TraceRule]  # by option name
    env: EnvRule | None


def load_trace_rules(folder: Path | None = None, known_repos: set[str] | None = None) -> TraceRules:
    folder = folder or rules_dir() / "traces"
    return _load(folder.resolve(), frozenset(known_repos) if known_repos is not None else None)


@functools.cache
def _load(folder: Path, known_repos: frozenset[str] | None) -> TraceRules:
    traces: dict[str, TraceRule] = {}
    env = None
    ids: dict[str, str] = {}
    for path in sorted(folder.glob("*.yaml")):
        rule = load_rule_file(path, set(known_repos) if known_repos is not None else None)
        if rule.id in ids:
            raise RuleError(f"{path}: rule id {rule.id!r} is already defined in {ids[rule.id]}")
        ids[rule.id] = str(path)
        if isinstance(rule, EnvRule):
            if env is not None:
                raise RuleError(f"{path}: a second environment-variable search (first: {env.defined_in})")
            env = rule
        else:
            if rule.option in traces:
                raise RuleError(f"{path}: option {rule.option!r} is already traced by {traces[rule.option].defined_in}")
            traces[rule.option] = rule
    return TraceRules(traces, env)
