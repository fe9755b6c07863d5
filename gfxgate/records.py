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

import atexit
import dataclasses
import inspect  # dataclasses imports it
import marshal
import os
import stat
import sys
from types import CodeType

try:  # CPython's own BLAKE2 (hashlib would load OpenSSL: gfxgate.datacache)
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b as _blake2b
from operator import attrgetter
from reprlib import recursive_repr
from typing import TYPE_CHECKING, Any, Callable

from gfxgate.errors import GfxgateError
from gfxgate.fsio import write_bytes_atomic
from gfxgate.resources import cache_dir

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
    text += "\n return __init__"
    namespace: dict[str, Any] = {}
    code = _code_of(text) if _codes is not None and cls.__module__.startswith("gfxgate.") else text
    exec(code, {}, namespace)  # noqa: S102 - the text names only fields and this scope, as dataclasses does
    init = namespace["__make__"](**scope)
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    return init


# The compiled ``__init__`` of gfxgate's own records, by source text, kept in the cache folder (as Python keeps a module's
# bytecode): compiling is ~0.7 M instructions a record, loading it from the file a few thousand. Only the console
# script uses it (:func:`keep_compiled_code`; ``main`` in process, as the tests call it, never reads or writes the
# file); the file is rewritten at exit only when the process compiled a record's code it did not hold.
_CODES_MAGIC = f"gfxgate-records 1\n{sys.version}\n".encode()  # code objects are one interpreter build's
MAX_CODES = 4096  # entries kept (a few hundred records per gfxgate version); beyond it the file starts over
MAX_CODES_BYTES = 8 << 20
_codes: dict[str, CodeType] | None = None  # None: not kept (the default)
_codes_path: str | None = None
_compiled: dict[str, CodeType] = {}  # compiled by this process, not found in the file


def keep_compiled_code() -> None:
    """From now on, take the compiled ``__init__`` of gfxgate's records from the cache folder's file, and store the
    ones compiled at exit. Called at this module's import in the console script (gfxgate.cli.run marks the process:
    importing this module there, before the command's own imports, would cost ``--help`` the dataclasses module)."""
    global _codes, _codes_path
    if _codes is None:
        _codes_path = _codes_file()
        _codes = _read_codes(_codes_path)


def _codes_file() -> str | None:
    if os.environ.get("GFXGATE_NO_RULES_CACHE", "") not in ("", "0"):
        return None  # the switch of gfxgate's other start-up cache (gfxgate.datacache)
    return os.path.join(cache_dir(), "records.marshal")


def _code_of(text: str) -> CodeType:
    assert _codes is not None
    code = _codes.get(text)
    if code is None:
        code = _codes[text] = compile(text, "<string>", "exec")
        if not _compiled:
            atexit.register(_write_codes)
        _compiled[text] = code
    return code


def _read_codes(path: str | None) -> dict[str, CodeType]:
    """The file's codes, or none when it is missing, not this user's own (a link, another owner, writable by others),
    of another interpreter, or does not decode."""
    if path is None:
        return {}
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return {}
    try:
        info = os.fstat(fd)
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_size > MAX_CODES_BYTES
            or (hasattr(os, "getuid") and info.st_uid != os.getuid())
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return {}
        blob = os.read(fd, MAX_CODES_BYTES + 1)
    except OSError:
        return {}
    finally:
        os.close(fd)
    digest, payload = blob[len(_CODES_MAGIC) : len(_CODES_MAGIC) + 32], blob[len(_CODES_MAGIC) + 32 :]
    if not blob.startswith(_CODES_MAGIC) or _blake2b(payload, digest_size=32).digest() != digest:
        return {}  # another interpreter's, or damaged: marshal is for trusted, intact data only
    try:
        codes = marshal.loads(payload)  # noqa: S302 - this user's own file (checked above), as its bytecode caches
    except (ValueError, EOFError, TypeError):
        return {}
    if not isinstance(codes, dict):
        return {}
    return {text: code for text, code in codes.items() if isinstance(text, str) and isinstance(code, CodeType)}


def _write_codes() -> None:
    """At exit: the file's codes and this process's new ones (only the new ones once the file holds too many); best
    effort, a file that cannot be written only costs speed."""
    path = _codes_path
    if path is None or not _compiled:
        return
    kept = {**_read_codes(path), **_compiled}
    if len(kept) > MAX_CODES:
        kept = dict(_compiled)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.islink(path):
            os.unlink(path)
        payload = marshal.dumps(kept)
        write_bytes_atomic(path, _CODES_MAGIC + _blake2b(payload, digest_size=32).digest() + payload)
    except (OSError, GfxgateError):  # an unwritable cache folder, a full disk: the next start compiles again
        pass
    _compiled.clear()


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


if getattr(sys.modules.get("gfxgate"), "console_script", False):
    keep_compiled_code()
