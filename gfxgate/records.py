"""``dataclass`` as the standard library's, cheaper to define (the speed budget of issue 40).

Defining a frozen dataclass costs CPython 3.11 six ``exec`` compilations (``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__``, ``__delattr__``): ~4 M instructions a class, and ``diagnose LOG`` defines ~55 at start-up
(benchmarks/README.md, the speed budget). This ``dataclass`` lets the standard one compile ``__init__`` and the frozen
``__setattr__``/``__delattr__`` and gives ``__repr__``, ``__eq__`` and ``__hash__`` as closures over the fields' names,
computing what the generated methods compute: the same repr text (recursion shown as ``...``), equality of the
compared fields' tuples between instances of the same class (else ``NotImplemented``), the hash of the same tuple
(so sets and dicts of records order alike). ``fields``, ``replace``, ``asdict``, ``__match_args__``, orjson and the
class's ``__dataclass_params__`` (which reads ``eq=True``) are as the standard decorator leaves them. Anything else (not
frozen, ``order``, ``unsafe_hash``, ``slots``, a dataclass base) is the standard decorator unchanged.

A type checker reads the standard ``dataclasses.dataclass`` (the name is imported from there under ``TYPE_CHECKING``).
"""

from __future__ import annotations

import dataclasses
import inspect  # dataclasses imports it
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls: Any = None, /, **options: Any) -> Any:
        """``dataclasses.dataclass`` with the same arguments; a frozen record's repr, eq and hash as closures."""

        def wrap(cls: type) -> type:
            return _define(cls, options)

        return wrap if cls is None else wrap(cls)


_FAST_OPTIONS = frozenset({"frozen", "kw_only"})


def _define(cls: type, options: dict[str, Any]) -> type:
    if (
        not options.get("frozen")
        or not _FAST_OPTIONS.issuperset(options)
        or any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:])
        or "__init__" in cls.__dict__
        or any("InitVar" in str(kind) for kind in cls.__dict__.get("__annotations__", {}).values())
    ):
        return dataclasses.dataclass(cls, **options)
    own = cls.__dict__
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    documented = bool(cls.__doc__)
    if not documented:
        cls.__doc__ = "-"  # the standard decorator's text is made below, once __init__ exists
    dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=options.get("kw_only", False))
    fields = dataclasses.fields(cls)
    _set(cls, "__init__", _init_of(cls, fields))
    names = tuple(f.name for f in fields)
    _set(cls, "__setattr__", _setattr_of(cls, names))
    _set(cls, "__delattr__", _delattr_of(cls, names))
    if "__repr__" not in own:
        _set(cls, "__repr__", _repr_of([f.name for f in fields if f.repr]))
    if "__eq__" not in own:
        _set(cls, "__eq__", _eq_of(_tuple_of([f.name for f in fields if f.compare])))
    if not explicit_hash:
        hashed = _tuple_of([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
        _set(cls, "__hash__", lambda self: hash(hashed(self)))
    params = cls.__dict__["__dataclass_params__"]
    params.init = params.eq = params.repr = params.frozen = True
    if not documented:
        cls.__doc__ = _doc_of(cls, fields)
    return cls


def _set(cls: type, name: str, function: Callable[..., Any]) -> None:
    function.__name__ = name
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    function.__module__ = cls.__module__
    setattr(cls, name, function)


def _init_of(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    """The standard frozen ``__init__`` (the same parameters, defaults, factories and ``__post_init__`` call), compiled
    by one ``exec``."""
    self = "__dataclass_self__" if "self" in {f.name for f in fields} else "self"
    scope: dict[str, Any] = {"__object__": object, "__factory__": dataclasses._HAS_DEFAULT_FACTORY}  # type: ignore[attr-defined]
    params: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    seen_default = False
    for f in fields:
        default = f"__dflt_{f.name}__"
        if f.default_factory is not dataclasses.MISSING:
            scope[default] = f.default_factory
            value = f"{default}() if {f.name} is __factory__ else {f.name}" if f.init else f"{default}()"
            param = f"{f.name}=__factory__"
        elif f.default is not dataclasses.MISSING:
            scope[default] = f.default
            value, param = f.name, f"{f.name}={default}"
        else:
            value, param = f.name, f.name
        if not f.init:
            if f.default_factory is dataclasses.MISSING:
                continue
        elif f.kw_only:
            keyword.append(param)
        else:
            if param != f.name:
                seen_default = True
            elif seen_default:
                raise TypeError(f"non-default argument {f.name!r} follows default argument")
            params.append(param)
        body.append(f"  __object__.__setattr__({self},{f.name!r},{value})")
    if hasattr(cls, "__post_init__"):
        body.append(f"  {self}.__post_init__()")
    signature = ",".join([self, *params, *(["*", *keyword] if keyword else [])])
    text = f"def __make__({', '.join(scope)}):\n def __init__({signature}):\n" + "\n".join(body or ["  pass"])
    namespace: dict[str, Any] = {}
    exec(text + "\n return __init__", {}, namespace)  # noqa: S102 - the text names only fields and this scope, as dataclasses does
    init = namespace["__make__"](**scope)
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return init


def _doc_of(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> str:
    """The standard decorator's ``__doc__`` of a class without one: its name and ``__init__``'s signature."""
    if not all(isinstance(f.type, str) for f in fields):
        return cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")
    params: list[str] = []
    star = False
    for f in fields:
        if not f.init:
            continue
        if f.kw_only and not star:
            params.append("*")
            star = True
        text = f"{f.name}: {f.type!r}"
        if f.default_factory is not dataclasses.MISSING:
            text += " = <factory>"
        elif f.default is not dataclasses.MISSING:
            text += f" = {f.default!r}"
        params.append(text)
    return f"{cls.__name__}({', '.join(params)})"


def _setattr_of(cls: type, names: tuple[str, ...]) -> Callable[[Any, str, Any], None]:
    owner: Any = cls

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    return __setattr__


def _delattr_of(cls: type, names: tuple[str, ...]) -> Callable[[Any, str], None]:
    owner: Any = cls

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    return __delattr__


def _tuple_of(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple ``(self.a, self.b, …)`` of these fields, as the generated methods build it."""
    if not names:
        return lambda self: ()
    if len(names) == 1:
        (name,) = names
        return lambda self: (getattr(self, name),)
    return attrgetter(*names)


def _eq_of(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _repr_of(names: list[str]) -> Callable[[Any], str]:
    getters = [(f"{name}=", attrgetter(name)) for name in names]

    @recursive_repr()
    def __repr__(self: Any) -> str:
        return self.__class__.__qualname__ + "(" + ", ".join(key + repr(get(self)) for key, get in getters) + ")"

    return __repr__
