"""Process boundary, HTTP/JSON: a value copied into a request struct on the sending side, the
struct's JSON key (its ``json`` tag, else the Go field name as encoding/json uses it), and the
receiving side's struct field with the same key plus the receiver's first use of it.

Three sites: *sends* (``loadRequest.NumThreads = opts.NumThread``), *receiver field* (the
declaration that decodes the key) and *receiver use* (``req.NumThreads``, in a file that decodes
JSON). When the receiver decodes the sender's own type, the receiver field is that declaration.
"""

from __future__ import annotations

import posixpath

from gfxgate.trace.hops import HopMissing, Match, Site, missing_construct
from gfxgate.trace.hops.go_field_copy import copies
from gfxgate.trace.hops.golang import field_doc, json_key, struct_fields
from gfxgate.trace.syntax import go_function_name
from gfxgate.saferegex import rule_regex

_DECODERS = (b"json.NewDecoder", b"json.Unmarshal")


def run(params: dict, ctx) -> list[Match]:
    value, repo = params["value"], params["repo"]
    files = ctx.candidates(repo, params["paths"], value, what=f"a request field set from {value}")
    sends = [(pf, c) for pf in files for c in copies(pf, value)]
    if not sends:
        raise missing_construct(value, files, f"a request struct field set from {value}")
    struct_rx = rule_regex(params.get("struct") or ".")
    chosen = None
    for pf, (field, type_name, node, sent) in sends:
        # the sending struct: the literal's type, else a struct of the sender's package declaring the field
        package = ctx.files(ctx.source(repo), [posixpath.join(posixpath.dirname(pf.path), "*.go")])
        wanted = type_name.rsplit(".", 1)[-1] if type_name else None
        declared = [
            (spf, s, f, tag, fnode, spec)
            for spf in filter(None, (ctx.cache.get(ctx.source(repo), p) for p in package))
            for s, f, tag, fnode, spec in struct_fields(spf)
            if f == field and (wanted is None or s == wanted) and struct_rx.search(s)
        ]
        if declared:
            declared.sort(key=lambda d: (not d[1].endswith("Request"), d[0].path))
            chosen = (pf, field, node, sent, declared)
            break
    if chosen is None:
        raise HopMissing(
            f"{value} is copied into struct fields in {', '.join(sorted({p.path for p, _ in sends}))}, "
            f"but none of a request struct (matching /{struct_rx.pattern}/) declared in the sender's package"
        )
    pf, field, node, sent, declared = chosen
    _, struct, _, tag, _, _ = declared[0]
    key = json_key(field, tag)
    send_site = Site(pf, pf.line_of(node), f"{struct}.{field} = {sent} (JSON key {key!r})", None, None, "sends")
    # the receiving side: a struct field decoding the same key
    receiver_repo = params.get("receiver_repo") or repo
    rfiles = ctx.candidates(
        receiver_repo, params["receiver_paths"], key if tag else field, what=f"a struct decoding JSON key {key!r}"
    )
    received = [
        (rpf, s, f, t, fnode, spec)
        for rpf in rfiles
        for s, f, t, fnode, spec in struct_fields(rpf)
        if (t == key) or (t is None and f.lower() == key.lower())
    ]
    shared = False
    if not received:
        received = [d for d in declared[:1]]  # the receiver decodes the sender's own type
        shared = True
    rpf, rstruct, rfield, _, rnode, rspec = received[0]
    meaning, msource = field_doc(rpf, rnode, rspec)
    sites = [
        send_site,
        Site(
            rpf,
            rpf.line_of(rnode),
            f"{rstruct}.{rfield}" + (" (the sender's type)" if shared else ""),
            meaning,
            msource,
            "receiver field",
        ),
    ]
    for upf in sorted(rfiles, key=lambda f: not any(d in f.src for d in _DECODERS)):
        use = next(
            (
                n
                for n in upf.walk({"selector_expression"})
                if pf is not upf
                and n.child_by_field_name("field") is not None
                and upf.text(n.child_by_field_name("field")) == rfield
            ),
            None,
        )
        if use is not None and any(d in upf.src for d in _DECODERS):
            sites.append(
                Site(
                    upf,
                    upf.line_of(use),
                    f"{upf.text(use)} in {go_function_name(upf, use)}()",
                    None,
                    None,
                    "receiver use",
                )
            )
            break
    return [Match(tuple(sites), {"key": key, "field": field, "receiver_field": rfield, "receiver_struct": rstruct})]
