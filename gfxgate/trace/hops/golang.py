"""Go helpers shared by the Go hop kinds: struct fields with their JSON keys, selectors, calls."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterator

from gfxgate.trace.hops import doc_of
from gfxgate.trace.syntax import ParsedFile, leading_comment

if TYPE_CHECKING:
    from tree_sitter import Node

_JSON_TAG = re.compile(r'json:"([^",]*)')


def struct_fields(pf: ParsedFile) -> Iterator[tuple[str, str, str | None, object, object]]:
    """(struct name, field name, json tag name or None, field node, type_spec node) for every field."""
    for spec in pf.walk({"type_spec"}):
        type_node = spec.child_by_field_name("type")
        name_node = spec.child_by_field_name("name")
        if type_node is None or type_node.type != "struct_type" or name_node is None:
            continue
        struct = pf.text(name_node)
        for decl in type_node.named_children:
            fields = decl.named_children if decl.type == "field_declaration_list" else []
            for field in fields:
                if field.type != "field_declaration":
                    continue
                tag_node = field.child_by_field_name("tag")
                tag = None
                if tag_node is not None:
                    m = _JSON_TAG.search(pf.text(tag_node))
                    tag = m.group(1) if m else None
                for name in field.children_by_field_name("name"):
                    yield struct, pf.text(name), tag, field, spec


def json_key(field: str, tag: str | None) -> str:
    """The key encoding/json uses: the tag's name, else the field name (matched case-insensitively)."""
    return tag if tag else field


def field_doc(pf: ParsedFile, field, spec) -> tuple[str | None, str | None]:
    meaning, source = doc_of(pf, field)
    if meaning:
        return meaning, source
    decl = spec.parent if spec.parent is not None and spec.parent.type == "type_declaration" else spec
    doc = leading_comment(pf, decl)
    return (doc, "struct doc comment") if doc else (None, None)


def function_doc(pf: ParsedFile, fn) -> tuple[str | None, str | None]:
    doc = leading_comment(pf, fn)
    return (doc, "doc comment") if doc else (None, None)


def selects(pf: ParsedFile, node, name: str) -> bool:
    """Whether ``node`` is or contains a selector ``x.name`` (or, for a bare name, the identifier)."""
    for sub in _descendants(node):
        if sub.type == "selector_expression":
            field = sub.child_by_field_name("field")
            if field is not None and pf.text(field) == name:
                return True
        elif (
            sub.type == "identifier"
            and pf.text(sub) == name
            and (sub.parent is None or sub.parent.type != "selector_expression")
        ):
            return True
    return False


def _descendants(node) -> Iterator:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def functions(pf: ParsedFile) -> Iterator[tuple[str, Node]]:
    for fn in pf.walk({"function_declaration", "method_declaration"}):
        name = fn.child_by_field_name("name")
        if name is not None:
            yield pf.text(name), fn
