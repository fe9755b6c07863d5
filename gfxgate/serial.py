"""The one JSON serialisation of result types: frozen dataclasses, enums, paths, tuples, mappings.

A result type inherits :class:`JsonRecord` and gets ``to_json()``: its fields in declaration
order, each converted by :func:`to_json`. Where the JSON differs from the field, the field says so
with :func:`json_field` — another key (``name``), left out (``skip``), a converted value
(``value``), or computed keys written just ``before``/``after`` it (``where`` next to ``location``).
A type whose JSON is a different view of it (an aggregate with counts) keeps its own ``to_json``.
"""

from __future__ import annotations

from dataclasses import MISSING, field, fields, is_dataclass
from enum import Enum
from pathlib import PurePath
from typing import Any, Callable, Mapping

Computed = Mapping[str, Callable[[Any], Any]]


def json_field(default: Any = MISSING, *, default_factory: Any = MISSING, name: str | None = None, skip: bool = False,
               value: Callable[[Any], Any] | None = None, before: Computed | None = None,
               after: Computed | None = None) -> Any:
    """A dataclass field with JSON instructions (see the module docstring)."""
    spec = {"name": name, "skip": skip, "value": value, "before": dict(before or {}), "after": dict(after or {})}
    return field(default=default, default_factory=default_factory, metadata={"json": spec})


def to_json(value: Any) -> Any:
    """The JSON value of a result: dataclasses field by field (or their own ``to_json``), enums by value."""
    if is_dataclass(value) and not isinstance(value, type):
        own = getattr(type(value), "to_json", None)
        return value.to_json() if own is not None and own is not JsonRecord.to_json else _fields(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (tuple, list)):
        return [to_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    return value


def _fields(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(obj):
        spec = f.metadata.get("json") or {}
        for key, compute in spec.get("before", {}).items():
            out[key] = to_json(compute(obj))
        if not spec.get("skip"):
            raw = getattr(obj, f.name)
            out[spec.get("name") or f.name] = to_json(spec["value"](raw) if spec.get("value") else raw)
        for key, compute in spec.get("after", {}).items():
            out[key] = to_json(compute(obj))
    return out


def document(kind: str, body: Mapping[str, Any], *, version: int = 1) -> dict[str, Any]:
    """A top-level JSON document: ``schema_version``, ``kind`` and ``generator``, then ``body``."""
    from gfxgate import __version__

    return {"schema_version": version, "kind": kind, "generator": f"gfxgate {__version__}", **body}


class JsonRecord:
    """Mixin for frozen dataclasses: ``to_json()`` is :func:`to_json` of the fields."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return _fields(self)
