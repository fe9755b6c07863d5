"""A value copied into another struct field: ``T{F: …value…}`` or ``x.F = …value…``.

Binds the destination field (and the composite literal's type), e.g. the runner's
``llama.ModelParams{MainGpu: req.MainGPU}``.
"""

from __future__ import annotations


from gfxgate.trace.hops import Match, Site, doc_of, missing_construct
from gfxgate.trace.hops.golang import selects
from gfxgate.trace.hops.go_selector import statement_of
from gfxgate.trace.syntax import go_function_name
from gfxgate.saferegex import rule_regex


def copies(pf, value: str):
    """(destination field, composite type or "", node, sent value text) for every copy of ``value``."""
    for node in pf.walk({"keyed_element", "assignment_statement"}):
        if node.type == "keyed_element":
            key, val = node.child_by_field_name("key"), node.child_by_field_name("value")
            if key is None or val is None or not selects(pf, val, value):
                continue
            body = node.parent
            literal = body.parent if body is not None else None
            type_node = (
                literal.child_by_field_name("type")
                if literal is not None and literal.type == "composite_literal"
                else None
            )
            yield pf.text(key), pf.text(type_node) if type_node is not None else "", node, pf.text(val)
        else:
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None or not selects(pf, right, value):
                continue
            targets = [t for t in left.named_children if t.type == "selector_expression"]
            if len(targets) == 1:
                yield pf.text(targets[0].child_by_field_name("field")), "", node, pf.text(right)


def run(params: dict, ctx) -> list[Match]:
    value = params["value"]
    function_rx = rule_regex(params["function"]) if params.get("function") else None
    files = ctx.candidates(params["repo"], params["paths"], value, what=f"a struct field set from {value}")
    matches = []
    for pf in files:
        for field, type_name, node, sent in copies(pf, value):
            function = go_function_name(pf, node)
            if function_rx and not function_rx.search(function):
                continue
            meaning, source = doc_of(pf, statement_of(node) or node, leading_first=True)
            symbol = f"{type_name}{{{field}: {sent}}}" if type_name else f".{field} = {sent}"
            matches.append(
                Match(
                    (Site(pf, pf.line_of(node), symbol, meaning, source),),
                    {"field": field, "type": type_name, "function": function},
                )
            )
    if not matches:
        raise missing_construct(value, files, f"a struct field set from {value}")
    return matches
