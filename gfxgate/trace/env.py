"""Environment variables as options: where each pinned repository reads one.

``env_reads(sources, "HSA_OVERRIDE_GFX_VERSION")`` lists envconfig definitions, the settings
list's description, direct ``getenv`` calls (Go, C/C++, Python), child-process environments and
lists of variables handed to the runner — each as an :class:`EnvRead` with ``repo@tag:path:line``.
The kinds and their tests are data (``rules/traces/env.yaml``). ``git grep`` at the tag finds the
candidate files; each is parsed once with tree-sitter and only string literals count.
"""

from __future__ import annotations

import re

from gfxgate.trace.hops import HopContext, HopMissing
from gfxgate.trace.model import EnvRead, EnvSearch
from gfxgate.trace.rules import EnvKind, EnvRule, load_trace_rules
from gfxgate.trace.syntax import STRING_TYPES, ParsedFile, string_value
from gfxgate.sources.base import glob_regex
from gfxgate.errors import UsageError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CALLS = {"call_expression", "call"}
_LISTS = {"literal_value", "initializer_list", "list", "tuple", "set"}
_FUNCTIONS = {"function_declaration", "method_declaration", "function_definition", "func_literal"}


def env_reads(sources, name: str, *, rule: EnvRule | None = None, ctx: HopContext | None = None) -> list[EnvRead]:
    """Every place the repositories of the env rule read or pass on ``name`` (sources not available are skipped)."""
    return list(search_env(sources, name, rule=rule, ctx=ctx).reads)


def search_env(sources, name: str, *, rule: EnvRule | None = None, ctx: HopContext | None = None) -> EnvSearch:
    if not _NAME.match(name):
        raise UsageError(f"{name!r} is not an environment variable name", hint="e.g. HSA_OVERRIDE_GFX_VERSION")
    rule = rule or load_trace_rules().env
    if rule is None:
        raise UsageError("no environment-variable search rule (rules/traces/*.yaml with an env: section)")
    ctx = ctx or HopContext(sources)
    excluded = [glob_regex(g) for g in rule.exclude]
    reads: list[EnvRead] = []
    unavailable: list[tuple[str, str]] = []
    infos = []
    searched: dict[tuple, str] = {}
    for repo in rule.repos:
        try:
            source = ctx.source(repo)
        except HopMissing as exc:
            unavailable.append((repo, exc.reason))
            continue
        root = getattr(source, "root", "")
        identity = (source.name, source.ref)
        if root and identity in searched:
            # a vendored copy inside a repository already searched (llama.cpp inside ollama before v0.30)
            unavailable.append((repo, f"vendored in {searched[identity]}@{source.ref} under {root}/: searched there"))
            continue
        searched.setdefault(identity, repo)
        info = source.info()
        if info not in infos:
            infos.append(info)
        files = [p for p in ctx.files(source, rule.paths) if not any(rx.match(p) for rx in excluded)]
        if not files:
            continue
        for path in dict.fromkeys(h.path for h in source.grep(name, files, fixed=True)):
            pf = ctx.cache.get(source, path)
            if pf is not None:
                reads.extend(_reads_in(pf, name, rule.kinds, source))
    # one read per line: the first kind in rule order wins (the settings-list line is a description,
    # not also a mention)
    order = {k.kind: i for i, k in enumerate(rule.kinds)}
    best: dict[tuple, EnvRead] = {}
    for read in reads:
        key = (read.repo, read.path, read.line)
        if key not in best or order[read.kind] < order[best[key].kind]:
            best[key] = read
    reads = sorted(
        best.values(), key=lambda r: (rule.repos.index(r.repo) if r.repo in rule.repos else 99, r.path, r.line)
    )
    return EnvSearch(
        name=name,
        sources=tuple(infos),
        kinds=tuple((k.kind, k.description) for k in rule.kinds),
        reads=tuple(reads),
        unavailable=tuple(unavailable),
    )


def _reads_in(pf: ParsedFile, name: str, kinds: tuple[EnvKind, ...], source) -> list[EnvRead]:
    out = []
    for node in pf.walk(STRING_TYPES[pf.language]):
        value = string_value(pf, node)
        if value != name and not (value.startswith(name) and value[len(name) :] in ("_", "=")):
            continue
        kind, meaning = _classify(pf, node, kinds)
        if kind is None:
            continue
        line = pf.line_of(node)
        loc = source.location(pf.path, line)
        out.append(
            EnvRead(
                repo=loc.repo,
                ref=loc.ref,
                commit=loc.commit,
                path=pf.path,
                line=line,
                text=pf.line_text(line),
                kind=kind,
                function=_function(pf, node),
                meaning=meaning,
            )
        )
    return out


def _classify(pf: ParsedFile, node, kinds: tuple[EnvKind, ...]) -> tuple[str | None, str | None]:
    call = _call_of(pf, node)
    composite, in_list = _container(pf, node)
    subscript = _subscript_of(pf, node)
    for kind in kinds:
        if kind.paths and not any(glob_regex(g).match(pf.path) for g in kind.paths):
            continue
        if kind.calls is not None:
            if call is not None and kind.calls.search(call):
                return kind.kind, None
            continue
        if kind.composite is not None:
            if composite is not None and kind.composite.search(composite[0]):
                return kind.kind, composite[1]
            continue
        if kind.subscript is not None:
            if subscript is not None and kind.subscript.search(subscript):
                return kind.kind, None
            continue
        if kind.in_list:
            if in_list:
                return kind.kind, None
            continue
        return kind.kind, None  # a kind without a test: every other literal
    return None, None


def _call_of(pf: ParsedFile, node) -> str | None:
    parent = node.parent
    if (
        parent is not None
        and parent.type == "argument_list"
        and parent.parent is not None
        and parent.parent.type in _CALLS
    ):
        fn = parent.parent.child_by_field_name("function")
        return pf.text(fn) if fn is not None else None
    return None


def _container(pf: ParsedFile, node) -> tuple[tuple[str, str | None] | None, bool]:
    """(composite literal type + its other strings, whether the literal is a bare list element)."""
    element = node.parent if node.parent is not None and node.parent.type == "literal_element" else node
    holder = element.parent
    if holder is None or holder.type not in _LISTS:
        return None, False
    literal = holder.parent
    if literal is not None and literal.type == "composite_literal":
        type_node = literal.child_by_field_name("type")
        type_text = pf.text(type_node) if type_node is not None else ""
        if type_text.startswith("[]") or type_text.startswith("map["):
            return None, True
        others = [string_value(pf, s) for s in pf.walk_under(holder, STRING_TYPES[pf.language]) if s is not node]
        return (type_text, others[-1] if others else None), False
    return None, True


def _subscript_of(pf: ParsedFile, node) -> str | None:
    parent = node.parent
    if parent is not None and parent.type in ("index_expression", "subscript"):
        operand = parent.child_by_field_name("operand") or parent.child_by_field_name("value")
        if operand is not None and operand is not node:
            return pf.text(operand)
    return None


def _function(pf: ParsedFile, node) -> str:
    current = node.parent
    while current is not None:
        if current.type in _FUNCTIONS:
            name = current.child_by_field_name("name")
            if name is not None:
                return pf.text(name)
            declarator = current.child_by_field_name("declarator")
            while declarator is not None and declarator.child_by_field_name("declarator") is not None:
                declarator = declarator.child_by_field_name("declarator")
            if declarator is not None:
                return pf.text(declarator)
        current = current.parent
    return ""
