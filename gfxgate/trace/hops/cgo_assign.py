"""cgo assignment into a C struct field: ``cparams.n_gpu_layers = C.int(params.NumGpuLayers)``.

``value`` names the Go field or variable on the right-hand side; the hop binds the C field.
"""

from __future__ import annotations

from gfxgate.trace.hops import Match, Site, doc_of, missing_construct
from gfxgate.trace.hops.golang import selects


def _is_cgo(pf, node) -> bool:
    for sub in [node, *node.named_children]:
        if sub.type == "call_expression":
            fn = sub.child_by_field_name("function")
            if fn is not None and pf.text(fn).startswith("C."):
                return True
    return False


def run(params: dict, ctx) -> list[Match]:
    value = params["value"]
    files = ctx.candidates(params["repo"], params["paths"], value, what=f"a cgo assignment from {value}")
    matches = []
    for pf in files:
        for node in pf.walk({"assignment_statement"}):
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if left is None or right is None or len(left.named_children) != 1:
                continue
            target = left.named_children[0]
            if target.type != "selector_expression" or not selects(pf, right, value):
                continue
            if not any(_is_cgo(pf, r) for r in right.named_children):
                continue
            c_field = pf.text(target.child_by_field_name("field"))
            obj = pf.text(target.child_by_field_name("operand"))
            meaning, source = doc_of(pf, node)
            site = Site(pf, pf.line_of(node), f"{obj}.{c_field} = {pf.text(right)}", meaning, source)
            matches.append(Match((site,), {"field": c_field, "object": obj}))
    if not matches:
        raise missing_construct(value, files, f"a cgo assignment (x.f = C.type(…{value}…))")
    return matches
