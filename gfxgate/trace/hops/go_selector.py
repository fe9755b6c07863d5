"""Selector uses of a Go field (``s.options.NumGPU``) with their enclosing function.

With ``as_argument: true`` only uses passed as a call argument count, and the hop binds the
callee and the argument position for a ``go-call-param`` hop. ``callee`` (regex, default: a plain
identifier, i.e. a function of the same package) keeps logging calls such as ``slog.Info`` out.
A bare identifier (a local variable or parameter, e.g. ``kvSize``) matches too.
"""

from __future__ import annotations

import posixpath

from gfxgate.trace.hops import Match, Site, doc_of, missing_construct
from gfxgate.trace.syntax import go_function_name
from gfxgate.saferegex import rule_regex

# Go's predeclared functions and conversions: never the callee a value flows into
_BUILTINS = frozenset(
    "append cap clear close complex copy delete imag len make max min new panic print println real recover "
    "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string "
    "uint uint8 uint16 uint32 uint64 uintptr any".split()
)
_STATEMENT_END = ("_statement", "short_var_declaration", "var_declaration")


def statement_of(node):
    while node is not None and not node.type.endswith(_STATEMENT_END):
        node = node.parent
    return node


def run(params: dict, ctx) -> list[Match]:
    name = params["field"]
    function_rx = rule_regex(params["function"]) if params.get("function") else None
    callee_rx = rule_regex(params.get("callee") or r"^[A-Za-z_]\w*$")
    as_argument = bool(params.get("as_argument"))
    files = ctx.candidates(params["repo"], params["paths"], name, what=f"a use of .{name}")
    matches = []
    for pf in files:
        for node in pf.walk({"selector_expression", "identifier"}):
            if node.type == "selector_expression":
                field = node.child_by_field_name("field")
                if field is None or pf.text(field) != name:
                    continue
            elif pf.text(node) != name or (
                node.parent is not None
                and node.parent.type in ("selector_expression", "parameter_declaration", "literal_element")
            ):
                continue
            function = go_function_name(pf, node)
            if function_rx and not function_rx.search(function):
                continue
            outputs = {"function": function, "dir": posixpath.dirname(pf.path) or ".", "expr": pf.text(node)}
            symbol = f"{pf.text(node)} in {function or '(top level)'}()"
            if as_argument:
                arg, call = _argument_of(node)
                if call is None:
                    continue
                callee = pf.text(call.child_by_field_name("function"))
                if callee in _BUILTINS or not callee_rx.search(callee):
                    continue
                index = [c for c in call.child_by_field_name("arguments").named_children if c.type != "comment"].index(
                    arg
                )
                outputs |= {"callee": callee.rsplit(".", 1)[-1], "arg_index": str(index)}
                symbol = f"{pf.text(node)} → {callee}(argument {index + 1})"
            meaning, source = doc_of(pf, statement_of(node) or node, leading_first=True)
            matches.append(Match((Site(pf, pf.line_of(node), symbol, meaning, source),), outputs))
    if not matches:
        what = f"a call argument using .{name}" if as_argument else f"a use of .{name}"
        raise missing_construct(
            name, files, what + (f" in a function matching /{params['function']}/" if function_rx else "")
        )
    return matches


def _argument_of(node):
    """(the argument holding ``node``, the call) when ``node`` is inside a call's argument list."""
    child = node
    parent = node.parent
    while parent is not None:
        if parent.type == "argument_list":
            call = parent.parent
            return (child, call) if call is not None and call.type == "call_expression" else (None, None)
        if parent.type in ("func_literal", "block", "statement_list", "keyed_element"):
            return None, None
        child, parent = parent, parent.parent
    return None, None
