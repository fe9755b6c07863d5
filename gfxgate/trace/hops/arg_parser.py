"""llama.cpp's argument parser (common/arg.cpp): the option that owns a flag, its help string,
and the struct field its handler sets::

    add_opt(common_arg(
        {"-ngl", "--gpu-layers"}, "N", "number of layers to store in VRAM",
        [](common_params & params, int value) { params.n_gpu_layers = value; }));
"""

from __future__ import annotations

from gfxgate.trace.hops import Match, Site, missing_construct
from gfxgate.trace.syntax import string_value


def _help(pf, args) -> str | None:
    """The option's help: the longest string among the call's plain or string_format(…) arguments."""
    texts = []
    for arg in args:
        if arg.type == "string_literal":
            texts.append(string_value(pf, arg))
        elif arg.type == "concatenated_string":
            texts.append("".join(string_value(pf, s) for s in arg.named_children if s.type == "string_literal"))
        elif arg.type == "call_expression":
            inner = arg.child_by_field_name("arguments")
            first = inner.named_children[0] if inner is not None and inner.named_children else None
            if first is not None and first.type in ("string_literal", "concatenated_string"):
                texts.extend(_help_texts(pf, first))
    return max(texts, key=len) if texts else None


def _help_texts(pf, node):
    if node.type == "string_literal":
        return [string_value(pf, node)]
    return ["".join(string_value(pf, s) for s in node.named_children if s.type == "string_literal")]


def run(params: dict, ctx) -> list[Match]:
    flag = params["flag"]
    files = ctx.candidates(params["repo"], params["paths"], f'"{flag}"', what=f"the option {flag}")
    matches = []
    for pf in files:
        for lit in pf.walk({"string_literal"}):
            if string_value(pf, lit) != flag or lit.parent is None or lit.parent.type != "initializer_list":
                continue
            arglist = lit.parent.parent
            if arglist is None or arglist.type != "argument_list":
                continue
            args = [a for a in arglist.named_children if a.type != "comment"]
            flags = [string_value(pf, s) for s in lit.parent.named_children if s.type == "string_literal"]
            rest = args[args.index(lit.parent) + 1 :]
            help_text = _help(pf, [a for a in rest if a.type != "lambda_expression"])
            sites = [
                Site(pf, pf.line_of(lit), "{" + ", ".join(flags) + "}", help_text, "help string" if help_text else None)
            ]
            outputs = {"help": help_text or ""}
            lam = next((a for a in rest if a.type == "lambda_expression"), None)
            if lam is not None:
                found = _assigned_field(pf, lam)
                if found:
                    struct, obj, field, node = found
                    outputs |= {"field": field, "struct": struct}
                    sites.append(Site(pf, pf.line_of(node), f"{obj}.{field} ({struct})", None, None, "sets"))
            matches.append(Match(tuple(sites), outputs))
    if not matches:
        raise missing_construct(f'"{flag}"', files, "an option of the argument parser ({flags…}, help, handler)")
    return matches


def _assigned_field(pf, lam):
    declarator = lam.child_by_field_name("declarator")
    plist = declarator.child_by_field_name("parameters") if declarator is not None else None
    first = plist.named_children[0] if plist is not None and plist.named_children else None
    if first is None:
        return None
    type_node = first.child_by_field_name("type")
    struct = pf.text(type_node) if type_node is not None else ""
    names = [n for n in _walk(first.child_by_field_name("declarator")) if n.type == "identifier"]
    if not names:
        return None
    obj = pf.text(names[0])
    for node in _walk(lam.child_by_field_name("body")):
        if node.type == "assignment_expression":
            left = node.child_by_field_name("left")
            if left is not None and left.type == "field_expression":
                arg = left.child_by_field_name("argument")
                if arg is not None and pf.text(arg) == obj:
                    return struct, obj, pf.text(left.child_by_field_name("field")), node
    return None


def _walk(node):
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop(0)
        yield current
        stack[:0] = current.named_children
