"""Python class field (pydantic model, TypedDict, dataclass) → the JSON key it is sent as.

``num_gpu: Optional[int] = None`` inside ``class Options(...)``. A pydantic
``Field(alias="…")`` renames the key. Meaning: the trailing comment, the comment block above,
an attribute docstring right below, or ``Field(description=…)``.
"""

from __future__ import annotations

from gfxgate.trace.hops import Match, Site, doc_of, missing_construct
from gfxgate.trace.syntax import string_value


def run(params: dict, ctx) -> list[Match]:
    cls, field = params["class"], params["field"]
    files = ctx.candidates(params["repo"], params["paths"], field, what=f"field {cls}.{field}")
    matches = []
    for pf in files:
        for node in pf.walk({"class_definition"}):
            name = node.child_by_field_name("name")
            if name is None or pf.text(name) != cls:
                continue
            body = node.child_by_field_name("body")
            statements = list(body.named_children) if body is not None else []
            for index, stmt in enumerate(statements):
                assign = stmt.named_children[0] if stmt.type == "expression_statement" and stmt.named_children else None
                if assign is None or assign.type != "assignment":
                    continue
                left = assign.child_by_field_name("left")
                if left is None or pf.text(left) != field:
                    continue
                key, meaning, source = field, None, None
                right = assign.child_by_field_name("right")
                if right is not None and right.type == "call":
                    key, meaning = _field_call(pf, right, field)
                    source = "Field(description=…)" if meaning else None
                if not meaning:
                    meaning, source = doc_of(pf, stmt)
                if not meaning and index + 1 < len(statements):
                    nxt = statements[index + 1]
                    if (
                        nxt.type == "expression_statement"
                        and nxt.named_children
                        and nxt.named_children[0].type == "string"
                    ):
                        meaning, source = string_value(pf, nxt.named_children[0]).strip(), "attribute docstring"
                cls_name = pf.text(name)
                site = Site(pf, pf.line_of(stmt), f"{cls_name}.{field}", meaning, source)
                matches.append(Match((site,), {"key": key, "field": field, "class": cls_name}))
    if not matches:
        raise missing_construct(field, files, f"a field of class {cls}")
    return matches


def _field_call(pf, call, default: str) -> tuple[str, str | None]:
    """``Field(None, alias="numGpu", description="…")`` → (key, description)."""
    key, description = default, None
    args = call.child_by_field_name("arguments")
    for arg in args.named_children if args is not None else []:
        if arg.type != "keyword_argument":
            continue
        name, value = arg.child_by_field_name("name"), arg.child_by_field_name("value")
        if name is None or value is None or value.type != "string":
            continue
        if pf.text(name) in ("alias", "serialization_alias"):
            key = string_value(pf, value)
        elif pf.text(name) == "description":
            description = string_value(pf, value)
    return key, description
