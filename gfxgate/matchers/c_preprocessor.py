"""``#if/#elif/#ifdef`` chains in C/C++/HIP headers, evaluated under a target's predefined macros.

tree-sitter (C++ grammar) gives the directive structure and condition expressions; evaluation is
three-valued (true / false / unknown): a macro that no scanned file defines and that is neither
predefined for the target nor assumed is undefined, while a *value* we cannot know (``HIP_VERSION``)
is unknown, and an unknown condition ends the walk of that chain honestly instead of guessing.

Two reports:
- ``derived-macros``: which family macros a target derives (``__gfx900__`` → ``GCN5`` → ``GCN``);
- ``active-branch``: which branch of the chain after an anchor (e.g. ``ggml_cuda_dp4a``) is compiled.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, check_regex_params, hit, params_object, rule_problem
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId
    from tree_sitter import Parser

_DIRECTIVES = {
    "preproc_if": "if",
    "preproc_ifdef": "ifdef",
    "preproc_elif": "elif",
    "preproc_elifdef": "elifdef",
    "preproc_else": "else",
}


@functools.cache
def _parser() -> Parser:
    import tree_sitter_cpp
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_cpp.language()))


def _expr(node: Any, src: bytes) -> Any:
    """A condition node as a small JSON expression tree."""
    kind = node.type
    text = src[node.start_byte : node.end_byte].decode("utf-8", "replace")
    if kind == "preproc_defined":
        ident = next((c for c in node.children if c.type == "identifier"), None)
        return ["defined", src[ident.start_byte : ident.end_byte].decode()] if ident else ["opaque", text]
    if kind == "parenthesized_expression":
        inner = [c for c in node.named_children if c.type != "comment"]
        return _expr(inner[0], src) if inner else ["opaque", text]
    if kind == "unary_expression":
        op = node.child_by_field_name("operator")
        arg = node.child_by_field_name("argument")
        if op is not None and op.type == "!" and arg is not None:
            return ["not", _expr(arg, src)]
        return ["opaque", text]
    if kind == "binary_expression":
        op = node.child_by_field_name("operator").type
        left, right = _expr(node.child_by_field_name("left"), src), _expr(node.child_by_field_name("right"), src)
        if op == "&&":
            return ["and", left, right]
        if op == "||":
            return ["or", left, right]
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return ["cmp", op, left, right]
        return ["opaque", text]
    if kind == "number_literal":
        try:
            return ["num", int(text.rstrip("uUlL"), 0)]
        except ValueError:
            return ["opaque", text]
    if kind == "identifier":
        return ["id", text]
    return ["opaque", text]


def _line_text(src_lines: list[str], row: int) -> str:
    return src_lines[row].strip() if row < len(src_lines) else ""


def _tree(node: Any, src: bytes, lines: list[str], path: str, describe: dict[str, str]) -> list[dict]:
    """Directive nodes (conditions and #defines) under ``node``, in source order."""
    out: list[dict] = []
    for child in node.children:
        if child.type in ("preproc_if", "preproc_ifdef"):
            out.append({"k": "cond", "branches": _branches(child, src, lines, path, describe)})
        elif child.type == "preproc_def" or child.type == "preproc_function_def":
            name = child.child_by_field_name("name")
            out.append(
                {
                    "k": "def",
                    "name": src[name.start_byte : name.end_byte].decode(),
                    **hit(path, child.start_point[0] + 1, _line_text(lines, child.start_point[0])),
                }
            )
        elif child.type not in _DIRECTIVES and child.child_count:
            out.extend(_tree(child, src, lines, path, describe))
    return out


def _branches(node: Any, src: bytes, lines: list[str], path: str, describe: dict[str, str]) -> list[dict]:
    branches = []
    current = node
    while current is not None:
        directive = _DIRECTIVES.get(current.type, "else")
        row = current.start_point[0]
        if directive in ("ifdef", "elifdef"):
            name_node = current.child_by_field_name("name")
            name = src[name_node.start_byte : name_node.end_byte].decode() if name_node else ""
            negate = _line_text(lines, row).startswith(("#ifndef", "#elifndef")) or re.match(
                r"#\s*(el)?ifndef", _line_text(lines, row)
            )
            cond = ["not", ["defined", name]] if negate else ["defined", name]
        elif directive == "else":
            cond = None
        else:
            cond_node = current.child_by_field_name("condition")
            cond = _expr(cond_node, src) if cond_node is not None else ["opaque", ""]
        alternative = current.child_by_field_name("alternative")
        end_byte = alternative.start_byte if alternative is not None else current.end_byte
        body_text = src[current.start_byte : end_byte].decode("utf-8", "replace")
        body_lines = body_text.splitlines()[1:]
        tags = [
            key
            for key, rx in describe.items()
            if rule_regex(rx).search(body_text.split("\n", 1)[1] if "\n" in body_text else "")
        ]
        first_code = next(
            (ln.strip() for ln in body_lines if ln.strip() and not ln.strip().startswith(("#", "//"))), ""
        )
        body = _tree(_Body(current, alternative), src, lines, path, describe)
        branches.append(
            {
                **hit(path, row + 1, _line_text(lines, row)),
                "d": directive,
                "cond": cond,
                "body": body,
                "tags": tags,
                "first": first_code,
            }
        )
        current = alternative
    return branches


class _Body:
    """The children of a directive node up to (not including) its #elif/#else alternative."""

    def __init__(self, node: Any, alternative: Any) -> None:
        self.children = [c for c in node.children if alternative is None or c.start_byte < alternative.start_byte]
        self.child_count = len(self.children)


def _prune(nodes: list[dict], wanted: set[str]) -> list[dict]:
    """Keep only #defines of ``wanted`` macros and the conditions around them."""
    out = []
    for node in nodes:
        if node["k"] == "def":
            if node["name"] in wanted:
                out.append(node)
            continue
        branches = [{**b, "body": _prune(b["body"], wanted)} for b in node["branches"]]
        if any(b["body"] for b in branches):
            out.append({**node, "branches": branches})
    return out


def _referenced(node: Any) -> set[str]:
    """Macro names a directive tree's conditions mention."""
    names: set[str] = set()
    if isinstance(node, dict):
        for key in ("cond", "branches", "body"):
            if key in node:
                names |= _referenced(node[key])
    elif isinstance(node, list):
        if len(node) == 2 and node[0] in ("defined", "id") and isinstance(node[1], str):
            names.add(node[1])
        for item in node:
            if isinstance(item, (list, dict)):
                names |= _referenced(item)
    return names


def _find_anchor_cond(nodes: list[dict], line: int) -> dict | None:
    """The first #if chain that starts after ``line``: at this level, or nested in a chain that spans it."""
    for node in nodes:
        if node["k"] != "cond":
            continue
        if node["branches"][0]["line"] > line:
            return node
        for branch in node["branches"]:
            inner = _find_anchor_cond(branch["body"], line)
            if inner is not None:
                return inner
    return None


# -- evaluation ---------------------------------------------------------------------------------------
def _eval(expr: Any, macros: dict[str, str], maybe: frozenset[str] = frozenset()) -> Any:
    """True / False / None (unknown); numbers for arithmetic sub-expressions.

    ``maybe`` holds macros that an undecidable condition may or may not have defined.
    """
    op = expr[0]
    if op == "defined":
        if expr[1] in macros:
            return True
        return None if expr[1] in maybe else False
    if op == "not":
        value = _eval(expr[1], macros, maybe)
        return None if value is None else not value
    if op in ("and", "or"):
        left, right = _eval(expr[1], macros, maybe), _eval(expr[2], macros, maybe)
        if op == "and":
            if left is False or right is False:
                return False
            return None if left is None or right is None else True
        if left is True or right is True:
            return True
        return None if left is None or right is None else False
    if op == "num":
        return expr[1]
    if op == "id":
        if expr[1] in maybe and expr[1] not in macros:
            return None
        value = macros.get(expr[1])
        try:
            return int(value, 0) if value is not None else None
        except ValueError:
            return None
    if op == "cmp":
        left, right = _eval(expr[2], macros, maybe), _eval(expr[3], macros, maybe)
        if not isinstance(left, int) or not isinstance(right, int) or isinstance(left, bool) or isinstance(right, bool):
            return None
        return {
            "==": left == right,
            "!=": left != right,
            "<": left < right,
            "<=": left <= right,
            ">": left > right,
            ">=": left >= right,
        }[expr[1]]
    return None


def _truth(value: Any) -> bool | None:
    if value is None:
        return None
    return bool(value)


def _defines(nodes: list[dict]) -> set[str]:
    """Every macro #defined anywhere under ``nodes``."""
    names = set()
    for node in nodes:
        if node["k"] == "def":
            names.add(node["name"])
        else:
            for branch in node["branches"]:
                names |= _defines(branch["body"])
    return names


class Walk:
    """State of a walk: macros defined so far (with the hits that defined them) and the active path."""

    def __init__(self, macros: dict[str, str]) -> None:
        self.macros = dict(macros)
        self.defined_by: dict[str, list[dict]] = {}
        self.unknown: list[dict] = []
        self.maybe: set[str] = set()  # defined, or not, by a condition we could not decide

    def run(self, nodes: list[dict], path: list[dict] | None = None) -> list[dict]:
        """Walk nodes; return the chain of active branches of the *last* condition walked."""
        active: list[dict] = []
        for node in nodes:
            if node["k"] == "def":
                self.macros.setdefault(node["name"], "1")
                self.defined_by[node["name"]] = list(path or []) + [node]
                continue
            active = []
            for index, branch in enumerate(node["branches"]):
                value = (
                    True
                    if branch["cond"] is None
                    else _truth(_eval(branch["cond"], self.macros, frozenset(self.maybe)))
                )
                if value is None:
                    self.unknown.append(branch)
                    for undecided in node["branches"][index:]:  # any of these may have been compiled
                        self.maybe |= _defines(undecided["body"])
                    break
                if value:
                    active = [branch] + self.run(branch["body"], (path or []) + [branch])
                    break
        return active


class CPreprocessor:
    name = "c-preprocessor"
    params_schema = params_object(
        ["report"],
        {
            "report": {"enum": ["derived-macros", "active-branch"]},
            "assume_defined": {"type": "array", "items": {"type": "string"}},
            "macros": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "anchor": {"type": "string"},
            "describe": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    )
    rule_requires = ("params",)  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        params = rule.params
        if params["report"] == "active-branch" and "anchor" not in params:
            raise rule_problem(rule, "report active-branch needs params.anchor")
        if params["report"] == "derived-macros" and "macros" not in params:
            raise rule_problem(rule, "report derived-macros needs params.macros")
        check_regex_params(rule, "anchor")
        for key, rx in (params.get("describe") or {}).items():
            check_regex(rule, f"params.describe.{key}", rx)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        params = rule.params
        describe = params.get("describe") or {}
        trees = []
        anchor_rx = rule_regex(params["anchor"]) if params["report"] == "active-branch" else None
        anchored = None
        wanted = set(params.get("macros", ()))
        for index, path in enumerate(paths):
            src = source.read(path) or b""
            lines = src.decode("utf-8", "replace").splitlines()
            tree = _tree(_parser().parse(src).root_node, src, lines, path, describe)
            last = index == len(paths) - 1
            if anchor_rx is not None and last:
                line = next((i + 1 for i, text in enumerate(lines) if anchor_rx.search(text)), None)
                if line is None:
                    raise NoMatch(f"anchor /{params['anchor']}/ not found in {path}")
                cond = _find_anchor_cond(tree, line)
                if cond is None:
                    raise NoMatch(f"no #if chain after anchor /{params['anchor']}/ ({path}:{line})")
                anchored = {**hit(path, line, lines[line - 1]), "cond": cond}
                wanted |= _referenced(cond)
            else:
                trees.append((path, tree))
        # keep only the macros the report needs, and the conditions that define them
        for _ in range(4):  # a few rounds reach macros derived from derived macros (GCN5 → GCN)
            for _, tree in trees:
                wanted |= _referenced(_prune(tree, wanted))
        files: list[dict[str, Any]] = [{"path": path, "nodes": _prune(tree, wanted)} for path, tree in trees]
        if params["report"] == "derived-macros":
            wanted = set(params["macros"])
            if not any(_defines(f["nodes"]) & wanted for f in files):
                raise NoMatch(f"none of {', '.join(sorted(wanted))} is #defined in {', '.join(paths)}")
        return {"files": files, "anchor": anchored}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        params = rule.params
        macros = {**catalog.predefined_macros(target), **{m: "1" for m in params.get("assume_defined", [])}}
        walk = Walk(macros)
        for f in facts["files"]:
            walk.run(f["nodes"])
        own = [m for m in catalog.predefined_macros(target) if m.startswith("__gfx") or m.startswith("__GFX")]
        if params["report"] == "derived-macros":
            derived = [m for m in params["macros"] if m in walk.defined_by]
            hits = []
            for name in derived:
                chain = walk.defined_by[name]
                hits += [Hit.from_json(b, f"active for {target}") for b in chain[:-1] if b.get("d")] + [
                    Hit.from_json(chain[-1], f"defines {name}")
                ]
            if derived:
                return Finding(Status.ALLOWED, " → ".join(f"`{m}`" for m in own[:1] + derived), tuple(_dedupe(hits)))
            if walk.unknown:
                b = walk.unknown[0]
                return Finding(
                    Status.UNKNOWN, f"condition not decidable without the full build: {b['text']}", (Hit.from_json(b),)
                )
            first = next(
                (Hit.from_json(n["branches"][0]) for f in facts["files"] for n in f["nodes"] if n["k"] == "cond"), None
            )
            return Finding(
                Status.PARTIAL,
                f"no family macro ({', '.join(params['macros'])}) for {target}: generic code paths only",
                (first,) if first else (),
            )
        anchor = facts["anchor"]
        active = walk.run([anchor["cond"]])
        anchor_hit = Hit(anchor["path"], anchor["line"], anchor["text"], "anchor")
        if walk.unknown and not active:
            b = walk.unknown[-1]
            return Finding(Status.UNKNOWN, f"branch not decidable: {b['text']}", (anchor_hit, Hit.from_json(b)))
        if not active:
            return Finding(
                Status.PARTIAL,
                f"no branch of the chain at {anchor['text'][:60]} is compiled for {target}",
                (anchor_hit,),
            )
        chosen = active[-1]
        label = "; ".join(chosen["tags"]) or chosen["first"] or "(empty branch)"
        active_hits = (anchor_hit,) + tuple(Hit.from_json(b, "active") for b in active)
        if chosen["d"] == "else":
            return Finding(Status.PARTIAL, f"falls through to the generic #else branch: {label}", active_hits)
        return Finding(Status.ALLOWED, f"dedicated branch `{chosen['text']}`: {label}", active_hits)


def _dedupe(hits: list[Hit]) -> list[Hit]:
    seen, out = set(), []
    for h in hits:
        key = (h.path, h.line)
        if key not in seen:
            seen.add(key)
            out.append(h)
    return out


MATCHER: Matcher = CPreprocessor()
