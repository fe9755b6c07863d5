"""C/C++ struct field declaration with its trailing or leading comment (the sink's meaning).

``structs`` (optional) lists acceptable struct names in order of preference; entries whose
variables are unbound are dropped by the engine.
"""

from __future__ import annotations

from gfxgate.trace.hops import Match, Site, doc_of, missing_construct


def _declared_names(pf, decl):
    stack = list(decl.children_by_field_name("declarator"))
    while stack:
        node = stack.pop()
        if node.type == "field_identifier":
            yield pf.text(node)
        elif node.type not in ("parameter_list",):
            stack.extend(node.named_children)


def run(params: dict, ctx) -> list[Match]:
    field = params["field"]
    structs = [s for s in params.get("structs") or [] if s] or ([params["struct"]] if params.get("struct") else [])
    files = ctx.candidates(params["repo"], params["paths"], field, what=f"a struct field {field}")
    matches = []
    for pf in files:
        for decl in pf.walk({"field_declaration"}):
            if field not in _declared_names(pf, decl):
                continue
            owner = decl.parent.parent if decl.parent is not None else None
            name = (
                owner.child_by_field_name("name")
                if owner is not None and owner.type in ("struct_specifier", "class_specifier")
                else None
            )
            struct = pf.text(name) if name is not None else ""
            if structs and struct not in structs:
                continue
            meaning, source = doc_of(pf, decl)
            site = Site(pf, pf.line_of(decl), f"{struct}.{field}" if struct else field, meaning, source)
            matches.append(
                (structs.index(struct) if structs else 0, Match((site,), {"field": field, "struct": struct}))
            )
    if not matches:
        raise missing_construct(
            field, files, f"a field of struct {' or '.join(structs)}" if structs else "a struct field"
        )
    return [m for _, m in sorted(matches, key=lambda pair: pair[0])]
