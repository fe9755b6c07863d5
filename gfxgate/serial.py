"""The one JSON serialisation of result types: frozen dataclasses, enums, paths, tuples, mappings.

A result type inherits :class:`JsonRecord` and gets ``to_json()``: its fields in declaration
order, each converted by :func:`to_json`. Where the JSON differs from the field, the field says so
with :func:`json_field` — another key (``name``), left out (``skip``), a converted value
(``value``), computed keys written just ``before``/``after`` it (``where`` next to ``location``), or the keys of
its own JSON written in its place (``inline``: a record that extends another, a workaround with its checks' outcome).
A class with a ``json_field`` is decorated with :func:`json_dataclass` (``dataclass`` that type checkers read right).
A type whose JSON is a different view of it (an aggregate with counts) keeps its own ``to_json``.
A type that holds JSON read back (a worklog line) names the keys it reads with :func:`json_key` properties.
"""

from __future__ import annotations

import sys
from dataclasses import MISSING, Field, field, fields
from enum import Enum
from operator import attrgetter
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar, overload

from gfxgate import __version__
from gfxgate.records import dataclass

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
elif sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # at run time the decorator only marks the class for type checkers (PEP 681)

    def dataclass_transform(**_: Any) -> Callable[[Any], Any]:
        return lambda cls: cls


Computed = Mapping[str, Callable[[Any], Any]]
_T = TypeVar("_T")


# Overloads as ``dataclasses.field``'s: the field's type is its default's. ``default`` is keyword-only because it is
# what tells a type checker (``json_field`` is a PEP 681 field specifier of ``JsonRecord``) that the field has one.
@overload
def json_field(
    *,
    default: _T,
    name: str | None = None,
    skip: bool = False,
    value: Callable[[Any], Any] | None = None,
    before: Computed | None = None,
    after: Computed | None = None,
    inline: bool = False,
) -> _T: ...


@overload
def json_field(
    *,
    default_factory: Callable[[], _T],
    name: str | None = None,
    skip: bool = False,
    value: Callable[[Any], Any] | None = None,
    before: Computed | None = None,
    after: Computed | None = None,
    inline: bool = False,
) -> _T: ...


@overload
def json_field(
    *,
    name: str | None = None,
    skip: bool = False,
    value: Callable[[Any], Any] | None = None,
    before: Computed | None = None,
    after: Computed | None = None,
    inline: bool = False,
) -> Any: ...


def json_field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    name: str | None = None,
    skip: bool = False,
    value: Callable[[Any], Any] | None = None,
    before: Computed | None = None,
    after: Computed | None = None,
    inline: bool = False,
) -> Any:
    """A dataclass field with JSON instructions (see the module docstring)."""
    spec = {
        "name": name,
        "skip": skip,
        "value": value,
        "before": dict(before or {}),
        "after": dict(after or {}),
        "inline": inline,
    }
    return field(default=default, default_factory=default_factory, metadata={"json": spec})


def json_key(name: str, *keys: str, doc: str | None = None) -> property:
    """A read-only property of a type that holds JSON read back (a worklog line, a verdict of a matrix file): the
    value at ``keys`` of its field ``name`` (``json_key("record", "endpoint", "name")``: ``record["endpoint"]["name"]``).
    A missing key is a ``KeyError``, as indexing it by hand would be."""

    def get(obj: Any) -> Any:
        value = getattr(obj, name)
        for key in keys:
            value = value[key]
        return value

    return property(get, doc=doc or f"``{name}[{']['.join(repr(k) for k in keys)}]``")


def to_json(value: Any) -> Any:
    """The JSON value of a result: dataclasses field by field (or their own ``to_json``), enums by value."""
    cls = type(value)
    if cls in _PLAIN:
        return value
    convert = _CONVERTERS.get(cls)
    if convert is None:
        convert = _CONVERTERS.setdefault(cls, _converter(cls))
    return convert(value)


# The decision above depends only on the value's class, so it is made once per class (a report of the
# 1.3 GB libggml-hip.so holds 18,000 values): exact built-in scalars first, then, in this order, a
# dataclass instance (its own ``to_json`` or its fields), an enum, a path, a sequence, a mapping.
_PLAIN = frozenset({str, int, float, bool, type(None)})
_CONVERTERS: dict[type, Callable[[Any], Any]] = {}


def _converter(cls: type) -> Callable[[Any], Any]:
    if issubclass(cls, type):  # a class as a value is never converted (``is_dataclass`` of a class is not an instance)
        return _same
    if hasattr(cls, "__dataclass_fields__"):
        own = getattr(cls, "to_json", None)
        return _own_to_json if own is not None and own is not JsonRecord.to_json else _fields_of(cls)
    if issubclass(cls, Enum):
        return _enum_value
    if issubclass(cls, PurePath):
        return str
    if issubclass(cls, (tuple, list)):
        return _sequence
    if issubclass(cls, Mapping):
        return _mapping
    return _same


def _same(value: Any) -> Any:
    return value


def _own_to_json(value: Any) -> Any:
    return value.to_json()


def _enum_value(value: Any) -> Any:
    return value.value


def _sequence(value: Any) -> list[Any]:
    return [v if type(v) in _PLAIN else to_json(v) for v in value]


def _mapping(value: Any) -> dict[Any, Any]:
    return {k: v if type(v) in _PLAIN else to_json(v) for k, v in value.items()}


_FIELD_PLANS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _fields_of(cls: type) -> Callable[[Any], dict[str, Any]]:
    """The function writing a dataclass's fields, built once per class from its ``json_field`` instructions."""
    plan = _FIELD_PLANS.get(cls)
    if plan is not None:
        return plan
    steps = []
    for f in fields(cls):
        spec = f.metadata.get("json") or {}
        steps.append(
            (
                f.name,
                spec.get("name") or f.name,
                bool(spec.get("skip")),
                spec.get("value"),
                tuple(spec.get("before", {}).items()),
                tuple(spec.get("after", {}).items()),
                bool(spec.get("inline")),
            )
        )
    if all(
        not skip and value is None and not before and not after and not inline
        for _, _, skip, value, before, after, inline in steps
    ):
        keys, names = tuple(key for _, key, *_ in steps), tuple(name for name, *_ in steps)
        # one C call fetches every field (a report holds thousands of records); attrgetter of one name is no tuple
        fetch = attrgetter(*names) if len(names) > 1 else (lambda obj: tuple(getattr(obj, n) for n in names))
        same = keys == names

        def plan(obj: Any) -> dict[str, Any]:
            # The common record (every field a plain value, stored in declaration order) is its instance dict:
            # copied in C, where building the dict key by key costs 2.5 times as much.
            own = getattr(obj, "__dict__", None)
            if same and own is not None and tuple(own) == names and _PLAIN.issuperset(map(type, own.values())):
                return own.copy()
            return {key: value if type(value) in _PLAIN else to_json(value) for key, value in zip(keys, fetch(obj))}
    else:

        def plan(obj: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, key, skip, value, before, after, inline in steps:
                for extra, compute in before:
                    out[extra] = to_json(compute(obj))
                if not skip:
                    raw = getattr(obj, name)
                    if inline:
                        out.update(to_json(value(raw) if value else raw))
                    else:
                        out[key] = to_json(value(raw) if value else raw)
                for extra, compute in after:
                    out[extra] = to_json(compute(obj))
            return out

    return _FIELD_PLANS.setdefault(cls, plan)


def _fields(obj: Any) -> dict[str, Any]:
    return _fields_of(type(obj))(obj)


def document(kind: str, body: Mapping[str, Any], *, version: int = 1) -> dict[str, Any]:
    """A top-level JSON document: ``schema_version``, ``kind`` and ``generator``, then ``body``."""
    return {"schema_version": version, "kind": kind, "generator": f"gfxgate {__version__}", **body}


@dataclass_transform(field_specifiers=(field, Field, json_field))
def json_dataclass(*, frozen: bool = False, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]:
    """``dataclasses.dataclass`` for a class with :func:`json_field` fields. The same decorator at run time; to a type
    checker it names ``json_field`` a field specifier (PEP 681), so a field has a default only where its
    ``json_field(default=…)`` gives one (under ``dataclass`` itself every field after the first ``json_field`` would
    look like one with a default)."""
    return dataclass(frozen=frozen, kw_only=kw_only)


class JsonRecord:
    """Mixin for frozen dataclasses: ``to_json()`` is :func:`to_json` of the fields."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return _fields(self)
