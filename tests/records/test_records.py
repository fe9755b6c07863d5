"""gfxgate.records.dataclass: a frozen record behaves as the standard library's, defined with one compilation."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import sys
from dataclasses import KW_ONLY, field
from typing import Any, ClassVar

import pytest

from gfxgate.records import dataclass as fast


class Mixin:
    __slots__ = ()

    def name(self) -> str:
        return type(self).__name__


def shapes(decorator: Any) -> dict[str, type]:
    """The same classes under ``decorator``: defaults, factories, compare/repr/hash flags, keyword-only, a field
    named ``self``, ``init=False`` fields, ``__post_init__``, a ClassVar, an own ``__repr__`` and ``__eq__``, none."""

    @decorator(frozen=True)
    class Plain(Mixin):
        a: int
        b: str = "x"
        c: tuple = field(default_factory=tuple)
        d: int = field(default=3, compare=False)
        e: int = field(default=4, repr=False, hash=False)
        k: ClassVar[int] = 5

    @decorator(frozen=True, kw_only=True)
    class Keywords:
        a: int
        b: str = "x"
        c: tuple = field(default_factory=tuple)

    @decorator(frozen=True)
    class Selfish:
        """Doc."""

        self: int
        x: tuple = ()
        z: int = field(init=False, default=7)
        w: tuple = field(init=False, default_factory=lambda: (1,))

        def __post_init__(self) -> None:
            object.__setattr__(self, "x", (*self.x, 1))

    @decorator(frozen=True)
    class Empty:
        pass

    @decorator(frozen=True)
    class Own:
        a: int
        _: KW_ONLY
        b: int = 2

        def __repr__(self) -> str:
            return "own"

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = None  # type: ignore[assignment]

    @decorator(frozen=True)
    class Nested:
        a: Any
        b: list = field(default_factory=list, hash=False, compare=False)

    return {"Plain": Plain, "Keywords": Keywords, "Selfish": Selfish, "Empty": Empty, "Own": Own, "Nested": Nested}


STANDARD, FAST = shapes(dataclasses.dataclass), shapes(fast)
CALLS: dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "Plain": [((1,), {}), ((1, "y", (2,), 9, 10), {}), ((), {"a": 2, "e": 1})],
    "Keywords": [((), {"a": 1}), ((), {"a": 1, "b": "y", "c": (2,)})],
    "Selfish": [((1,), {}), ((), {"self": 2, "x": (5,)})],
    "Empty": [((), {})],
    "Own": [((1,), {}), ((1,), {"b": 5})],
    "Nested": [((1,), {}), (((1, "a"),), {"b": [3]})],
}
WRONG: list[tuple[tuple[Any, ...], dict[str, Any]]] = [((), {}), ((1, 2, 3, 4, 5, 6, 7), {}), ((1,), {"zz": 1})]


def _bare(text: str) -> str:
    return text.replace("shapes.<locals>.", "")


@pytest.mark.parametrize("name", list(CALLS))
def test_a_fast_record_is_the_standard_one(name):
    standard, quick = STANDARD[name], FAST[name]
    assert quick.__doc__ == standard.__doc__
    assert quick.__match_args__ == standard.__match_args__  # type: ignore[attr-defined]
    assert str(inspect.signature(quick)) == str(inspect.signature(standard))
    assert quick.__init__.__annotations__ == standard.__init__.__annotations__
    assert repr(quick.__dataclass_params__) == repr(standard.__dataclass_params__)  # type: ignore[attr-defined]
    assert [f.name for f in dataclasses.fields(quick)] == [f.name for f in dataclasses.fields(standard)]
    assert (quick.__hash__ is None) == (standard.__hash__ is None)
    for args, kwargs in CALLS[name]:
        one, other = standard(*args, **kwargs), quick(*args, **kwargs)
        assert _bare(repr(other)) == _bare(repr(one))
        assert other == quick(*args, **kwargs)
        assert (other == one) is (name == "Own")  # another class: NotImplemented both ways, unless __eq__ is own
        if standard.__hash__ is not None:
            assert hash(other) == hash(one)
        assert dataclasses.asdict(other) == dataclasses.asdict(one)
        assert dataclasses.astuple(other) == dataclasses.astuple(one)
        assert _bare(repr(dataclasses.replace(other))) == _bare(repr(dataclasses.replace(one)))
        for obj in (one, other):
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'zz'"):
                obj.zz = 1  # type: ignore[attr-defined]
            with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field"):
                del obj.zz  # type: ignore[attr-defined]
    for args, kwargs in WRONG:
        errors = []
        for cls in (standard, quick):
            try:
                cls(*args, **kwargs)
            except TypeError as error:
                errors.append(str(error))
            else:
                errors.append("")
        assert errors[0] == errors[1]
    assert name == "Empty" or all(_error(standard, args, kwargs) for args, kwargs in WRONG)


def _error(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    try:
        cls(*args, **kwargs)
    except TypeError as error:
        return str(error)
    return ""


def test_a_changed_field_changes_equality_and_hash():
    one, two = FAST["Plain"](1), FAST["Plain"](2)
    assert one != two and hash(one) != hash(two)
    assert FAST["Plain"](1, d=99) == one  # compare=False
    assert hash(FAST["Plain"](1, e=99)) == hash(one)  # hash=False
    assert FAST["Plain"](1, e=99) != one  # but compared


def test_a_recursive_repr_and_a_pickle():
    texts = []
    for cls in (STANDARD["Nested"], FAST["Nested"]):
        box: list[Any] = []
        record = cls(box)
        box.append(record)
        texts.append(_bare(repr(record)))
    assert texts[1] == texts[0] == "Nested(a=[...], b=[])"
    plain = Pickled(1, ("y",))
    restored = pickle.loads(pickle.dumps(plain))  # noqa: S301 - our own bytes
    assert restored == plain and restored is not plain


@fast(frozen=True)
class Pickled:
    a: int
    b: tuple[str, ...] = ()


def test_a_non_default_field_after_a_default_one_is_refused():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @fast(frozen=True)
        class Wrong:
            a: int = 1
            b: int


def test_what_the_fast_path_does_not_take_is_the_standard_decorator():
    """Not frozen, other options, a dataclass base: the standard decorator, its generated methods included."""

    @fast
    class Mutable:
        a: int

    @fast(frozen=True, order=True)
    class Ordered:
        a: int

    @fast(frozen=True)
    class Child(FAST["Plain"]):  # type: ignore[misc, valid-type]
        f: int = 0

    assert Ordered(1) < Ordered(2)
    assert repr(Child(1)).endswith(".Child(a=1, b='x', c=(), d=3, f=0)") and Child(1) != FAST["Plain"](1)
    for cls in (Mutable, Ordered, Child):
        assert cls.__eq__.__code__.co_filename == "<string>"  # compiled by dataclasses
    assert FAST["Plain"].__eq__.__code__.co_filename != "<string>"


def test_defining_a_frozen_record_compiles_once():
    """The point of it (the speed budget): one ``exec`` a class, where the standard decorator needs six."""
    counting = {"on": False, "exec": 0}

    def hook(event: str, _: Any) -> None:
        if counting["on"] and event == "exec":
            counting["exec"] += 1

    sys.addaudithook(hook)
    seen = []
    for decorator in (dataclasses.dataclass, fast):
        counting["exec"] = 0
        counting["on"] = True
        try:

            @decorator(frozen=True)
            class Record:
                """A record."""

                a: int
                b: str = ""
        finally:
            counting["on"] = False
        seen.append(counting["exec"])
    assert seen == [6, 1]


def test_every_frozen_record_of_gfxgate_is_defined_by_it():
    """The modules' ``@dataclass`` is this one (a module that imports the standard one pays six compilations)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "gfxgate"
    standard = [
        path.relative_to(root).as_posix()
        for path in sorted(root.rglob("*.py"))
        if "from dataclasses import" in (text := path.read_text(encoding="utf-8"))
        and any(
            "dataclass" in [n.strip() for n in line.split("import", 1)[1].split(",")]
            for line in text.splitlines()
            if line.startswith("from dataclasses import")
        )
    ]
    assert standard == []


_COUNT_COMPILES = """
import sys
import gfxgate
gfxgate.console_script = {console}  # as gfxgate.cli.run marks the console script's process
compiled = []
sys.addaudithook(
    lambda event, args: compiled.append(1)
    if event == "compile" and isinstance(args[0], bytes) and args[0].startswith(b"def __make__")  # a record's __init__
    else None
)
import gfxgate.diagnose.model, gfxgate.timeline.model, gfxgate.machine
print(len(compiled))
"""


def _compiles_in_a_new_process(cache, console: bool = True, **env: str) -> int:
    import os
    import subprocess

    done = subprocess.run(
        [sys.executable, "-c", _COUNT_COMPILES.format(console=console)],
        env={**os.environ, "GFXGATE_CACHE_DIR": str(cache), "GFXGATE_NO_RULES_CACHE": "", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return int(done.stdout)


def test_a_later_process_takes_the_records_code_from_the_cache(tmp_path):
    """The compiled ``__init__`` of gfxgate's records is kept in the cache folder: the first process compiles them
    and stores them at exit, the next one compiles none of them."""
    cache = tmp_path / "cache"
    first = _compiles_in_a_new_process(cache)
    assert first >= 20, "these three modules define a few dozen records"
    assert (cache / "records.marshal").is_file()
    assert _compiles_in_a_new_process(cache) == 0


def test_a_damaged_or_foreign_records_cache_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    _compiles_in_a_new_process(cache)
    stored = cache / "records.marshal"
    good = stored.read_bytes()
    stored.write_bytes(good[:-7] + b"garbage")  # damaged: its checksum fails
    assert _compiles_in_a_new_process(cache) > 0
    assert stored.read_bytes() == good  # and written again, whole
    stored.chmod(0o666)  # writable by others: not trusted
    assert _compiles_in_a_new_process(cache) > 0


def test_the_cache_switch_turns_the_records_cache_off(tmp_path):
    cache = tmp_path / "cache"
    assert _compiles_in_a_new_process(cache, GFXGATE_NO_RULES_CACHE="1") > 0
    assert not (cache / "records.marshal").exists()


def test_only_the_console_script_keeps_the_records_code(tmp_path):
    """``main`` in process (the tests' way) neither reads nor writes the file."""
    cache = tmp_path / "cache"
    _compiles_in_a_new_process(cache)
    stored = cache / "records.marshal"
    before = stored.read_bytes()
    stored.unlink()
    assert _compiles_in_a_new_process(cache, console=False) >= 20
    assert not stored.exists()
    stored.write_bytes(before)
    assert _compiles_in_a_new_process(cache, console=False) >= 20, "not read either"
    assert _compiles_in_a_new_process(cache) == 0


def test_the_console_script_marks_its_process(tmp_path):
    """What gfxgate.cli.run does before the command imports its pipeline: a `gfxgate` run stores the records' code."""
    import os
    import subprocess
    from pathlib import Path

    script = Path(sys.executable).parent / "gfxgate"
    if not script.is_file():
        pytest.skip("no gfxgate console script next to this interpreter")
    env = {**os.environ, "GFXGATE_CACHE_DIR": str(tmp_path / "cache"), "GFXGATE_NO_RULES_CACHE": ""}
    subprocess.run([str(script), "targets"], env=env, capture_output=True, check=True)
    assert (tmp_path / "cache" / "records.marshal").is_file()
