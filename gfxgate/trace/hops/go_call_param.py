"""Call argument → callee parameter: the parameter at the argument's position in the function
(or method) declaration, searched in the hop's paths (the caller's package: ``{dir}/*.go``)."""

from __future__ import annotations

from gfxgate.trace.hops import HopMissing, Match, Site, missing_construct
from gfxgate.trace.hops.golang import function_doc, functions


def run(params: dict, ctx) -> list[Match]:
    name = str(params["function"]).rsplit(".", 1)[-1]
    index = int(params["index"])
    if not params.get("paths"):
        raise HopMissing("go-call-param needs paths (e.g. {dir}/*.go from the go-selector hop)")
    files = ctx.candidates(params["repo"], params["paths"], name, what=f"func {name}")
    matches = []
    for pf in files:
        for fn_name, fn in functions(pf):
            if fn_name != name:
                continue
            names = []
            plist = fn.child_by_field_name("parameters")
            for decl in plist.named_children if plist is not None else []:
                if decl.type in ("parameter_declaration", "variadic_parameter_declaration"):
                    names += [pf.text(n) for n in decl.children_by_field_name("name")] or ["_"]
            if index >= len(names):
                raise HopMissing(
                    f"func {name} at {pf.path}:{pf.line_of(fn)} has {len(names)} parameter(s), "
                    f"the call passes the value as argument {index + 1}"
                )
            param = names[index]
            meaning, source = function_doc(pf, fn)
            site = Site(pf, pf.line_of(fn), f"{name}({param})", meaning, source)
            matches.append(
                Match(
                    (site,),
                    {"param": param, "function": name, "dir": pf.path.rsplit("/", 1)[0] if "/" in pf.path else "."},
                )
            )
    if not matches:
        raise missing_construct(name, files, f"a func named {name}")
    return matches
