"""Go struct field by JSON tag (``NumGPU int `json:"num_gpu,omitempty"` ``) → the Go field name.

Meaning: the field's trailing or leading comment, else the struct's doc comment.
"""

from __future__ import annotations

from gfxgate.trace.hops import Match, Site, missing_construct
from gfxgate.trace.hops.golang import field_doc, struct_fields


def run(params: dict, ctx) -> list[Match]:
    key = params["json"]
    wanted = params.get("struct")
    files = ctx.candidates(params["repo"], params["paths"], f'json:"{key}', what=f'a struct field tagged json:"{key}"')
    matches = []
    for pf in files:
        for struct, name, tag, field, spec in struct_fields(pf):
            if tag == key and wanted in (None, struct):
                meaning, source = field_doc(pf, field, spec)
                site = Site(pf, pf.line_of(field), f'{struct}.{name} `json:"{key}"`', meaning, source)
                matches.append(Match((site,), {"field": name, "struct": struct, "key": key}))
    if not matches:
        raise missing_construct(f'json:"{key}', files, "a Go struct field tag")
    return matches
