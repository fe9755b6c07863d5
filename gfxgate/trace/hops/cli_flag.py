"""Process boundary, command line: a value turned into a flag of a child process,
``append(params, "-ngl", strconv.Itoa(launch.opts.NumGPU))`` → binds ``-ngl``."""

from __future__ import annotations

import re

from gfxgate.trace.hops import Match, Site, doc_of, missing_construct
from gfxgate.trace.hops.go_selector import statement_of
from gfxgate.trace.hops.golang import selects
from gfxgate.trace.syntax import STRING_TYPES, go_function_name, string_value

_FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")


def run(params: dict, ctx) -> list[Match]:
    value = params["value"]
    files = ctx.candidates(params["repo"], params["paths"], value, what=f"a command-line flag built from {value}")
    matches = []
    for pf in files:
        for holder in pf.walk({"argument_list", "literal_value", "expression_list"}):
            items = [
                c.named_children[0] if c.type == "literal_element" and c.named_children else c
                for c in holder.named_children
                if c.type != "comment"
            ]
            for flag_node, arg in zip(items, items[1:]):
                if flag_node.type not in STRING_TYPES["go"] or not selects(pf, arg, value):
                    continue
                flag = string_value(pf, flag_node)
                if not _FLAG.match(flag):
                    continue
                statement = statement_of(holder)
                meaning, source = doc_of(pf, statement or holder, leading_first=True)
                if not meaning and statement is not None:
                    outer = statement_of(statement.parent)
                    meaning, source = doc_of(pf, outer, leading_first=True) if outer is not None else (None, None)
                site = Site(pf, pf.line_of(flag_node), f"{flag} {pf.text(arg)}", meaning, source)
                matches.append(Match((site,), {"flag": flag, "function": go_function_name(pf, holder)}))
    if not matches:
        raise missing_construct(value, files, f"a flag followed by a value using {value}")
    return matches
