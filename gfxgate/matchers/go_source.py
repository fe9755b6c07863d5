"""Go constructs in GPU discovery, found with tree-sitter-go: functions, calls, strings, assignments.

Used for allowlists built from rocBLAS file names (``GetSupportedGFX``), rejections ("amdgpu is
not supported"), and the ``GGML_CUDA_INIT=1`` deep-initialization probe. Files are pre-filtered
by a plain text search, so only files that can match are parsed. What a construct *means* for a
target is the rule's data (``status``, ``summary``), not code.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId
    from tree_sitter import Node, Parser


@functools.cache
def _parser() -> Parser:
    import tree_sitter_go
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_go.language()))


def _text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def _enclosing_function(node: Node | None, src: bytes) -> str:
    while node is not None:
        if node.type in ("function_declaration", "method_declaration"):
            name = node.child_by_field_name("name")
            return _text(name, src) if name is not None else ""
        node = node.parent
    return ""


def find_go(src: bytes, find: str, pattern: re.Pattern) -> list[tuple[int, str, str]]:
    """(line, matched text, enclosing function) for every construct of kind ``find`` matching ``pattern``."""
    tree = _parser().parse(src)
    out = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        candidate = None
        if find == "function" and node.type in ("function_declaration", "method_declaration"):
            name = node.child_by_field_name("name")
            candidate = _text(name, src) if name is not None else None
        elif find == "call" and node.type == "call_expression":
            fn = node.child_by_field_name("function")
            candidate = _text(fn, src) if fn is not None else None
        elif find == "string" and node.type in ("interpreted_string_literal", "raw_string_literal"):
            candidate = _text(node, src)[1:-1]
        elif find == "assignment" and node.type in ("assignment_statement", "short_var_declaration"):
            left = node.child_by_field_name("left")
            candidate = _text(left, src) if left is not None else None
        if candidate is not None and pattern.search(candidate):
            out.append((node.start_point[0] + 1, candidate, _enclosing_function(node, src)))
        stack.extend(reversed(node.children))
    return sorted(out)


class GoSource:
    name = "go-source"
    regexes = RegexParams(pattern=None)
    params_schema = params_object(
        ["find", "pattern"],
        {
            "find": {"enum": ["function", "call", "string", "assignment"]},
            **regexes.schema,
        },
    )
    rule_requires = ("params", "status", "summary")  # keys a rule of this matcher must have

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        find = rule.params["find"]
        pattern = self.regexes.compile(rule)["pattern"]
        prefilter = rule_regex(re.sub(r"^\^|\$$", "", rule.params["pattern"]))
        hits = []
        for path in paths:
            src = source.read(path) or b""
            if not prefilter.search(src.decode("utf-8", "replace")):
                continue  # pre-filter: parse only files that can match
            lines = src.decode("utf-8", "replace").splitlines()
            for line, matched, function in find_go(src, find, pattern):
                hits.append({**hit(path, line, lines[line - 1]), "match": matched, "function": function})
        if not hits:
            raise NoMatch(f"no Go {find} matching /{rule.params['pattern']}/ in {len(paths)} file(s)")
        return {"hits": hits}

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        first = facts["hits"][0]
        summary = fill(rule.summary or "", target, function=first["function"] or "?", match=first["match"])  # required
        hits = tuple(Hit.from_json(h, f"in {h['function']}()" if h["function"] else "") for h in facts["hits"][:3])
        return Finding(rule.status_default or Status.UNKNOWN, summary, hits, remedy=fill(rule.remedy, target))


MATCHER: Matcher = GoSource()
