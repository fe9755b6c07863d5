"""The one JSON serialisation: field order, renames, skips, computed keys, enums, paths, nesting."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pytest

from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.serial import JsonRecord, document, json_dataclass, json_field, json_key, to_json
from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: upstream-shaped git repositories


@dataclass(frozen=True)
class _Inner:
    path: PurePosixPath
    status: Status


@json_dataclass(frozen=True)
class _Outer(JsonRecord):
    name: str = json_field(name="id", before={"first": lambda o: 1})
    hidden: int = json_field(default=0, skip=True)
    inner: tuple[_Inner, ...] = json_field(default=(), after={"count": lambda o: len(o.inner)})
    labels: tuple[str, ...] = json_field(default=(), value=lambda labels: [x.upper() for x in labels])


def test_fields_in_order_with_renames_skips_and_computed_keys():
    out = _Outer("x", 7, (_Inner(PurePosixPath("a/b"), Status.BLOCKED),), ("p",)).to_json()
    assert list(out) == ["first", "id", "inner", "count", "labels"]
    assert out == {"first": 1, "id": "x", "inner": [{"path": "a/b", "status": "blocked"}], "count": 1, "labels": ["P"]}


@json_dataclass(frozen=True)
class _Base(JsonRecord):
    id: str
    hidden: int = json_field(default=0, skip=True)


@json_dataclass(frozen=True)
class _Extended(JsonRecord):
    state: str = json_field(before={"first": lambda o: 1})
    base: _Base = json_field(inline=True)
    count: int = 0


def test_an_inline_field_writes_its_own_json_keys_in_its_place():
    out = _Extended("live", _Base("w", 3), 2).to_json()
    assert list(out) == ["first", "state", "id", "count"]
    assert out == {"first": 1, "state": "live", "id": "w", "count": 2}


def test_evidence_and_verdict_json_keep_their_shape():
    loc = Location(repo="ollama", ref="v0.1.0", commit="abc", path="CMakeLists.txt", line=3)
    ev = Evidence("rule-1", loc, "list(FILTER …)")
    assert list(ev.to_json()) == ["source", "location", "where", "text", "note"]
    assert ev.to_json()["where"] == "ollama@v0.1.0:CMakeLists.txt:3"
    assert list(loc.to_json()) == ["repo", "ref", "commit", "path", "line", "offset"]
    verdict = Verdict("cmake", "gfx900", Status.ALLOWED, "kept", (ev,))
    assert to_json(verdict)["evidence"][0] == ev.to_json() and verdict.to_json()["status"] == "allowed"


def test_document_header():
    doc = document("gate-matrix", {"targets": []})
    assert list(doc)[:3] == ["schema_version", "kind", "generator"] and doc["generator"].startswith("gfxgate ")


@dataclass(frozen=True)
class _Wrapped(JsonRecord):
    record: dict
    name = json_key("record", "name")
    endpoint = json_key("record", "endpoint", "url")


def test_json_key_reads_the_held_record_and_is_no_field():
    w = _Wrapped({"name": "r1", "endpoint": {"url": "http://h:1"}})
    assert (w.name, w.endpoint) == ("r1", "http://h:1")
    assert w.to_json() == {"record": {"name": "r1", "endpoint": {"url": "http://h:1"}}}
    with pytest.raises(KeyError, match="url"):
        _ = _Wrapped({"name": "r2", "endpoint": {}}).endpoint
    with pytest.raises(AttributeError):
        w.name = "other"  # read-only, as the hand-written properties were


@dataclass(frozen=True)
class _Plain(JsonRecord):
    a: int
    b: str | None = None

    @functools.cached_property
    def derived(self) -> int:  # stored in the instance dict once read: never a JSON key
        return self.a * 2


@dataclass(frozen=True)
class _Mixed(JsonRecord):
    a: int
    c: tuple[int, ...] = ()


def test_plain_records_are_their_fields_whatever_the_instance_dict_holds():
    """A record of plain values is copied from its instance dict; anything else there (a cached property) or a
    value that is no plain scalar (a tuple) must still give exactly the fields, converted, in declaration order."""
    plain = _Plain(1, "x")
    first = plain.to_json()
    assert list(first) == ["a", "b"] and first == {"a": 1, "b": "x"}
    first["a"] = 99  # the result is the caller's: the record is not changed through it
    assert plain.a == 1 and plain.to_json() == {"a": 1, "b": "x"}
    assert plain.derived == 2 and plain.to_json() == {"a": 1, "b": "x"}  # the cached value is no key
    assert to_json((_Plain(3),)) == [{"a": 3, "b": None}]
    mixed = _Mixed(5, (1, 2))
    assert list(mixed.to_json()) == ["a", "c"] and mixed.to_json() == {"a": 5, "c": [1, 2]}


def test_no_named_tuple_reaches_the_json(monkeypatch, capsys, upstream):
    """The scan path's internal records (targets, pins, rules, matcher hits and findings, workaround checks) are named
    tuples, which are cheap to define; ``to_json`` would write one as a JSON list. So none may reach it: every class
    converted while the gate matrix (each format), the workaround matrix and a diagnosis are written is a dataclass,
    an enum, a path or a plain container."""
    from gfxgate import serial
    from gfxgate.cli import main
    from gfxgate.matchers import Finding, Hit
    from gfxgate.targets import TargetId

    seen: set[type] = set()
    converter = serial._converter

    def recording(cls: type):
        seen.add(cls)
        return converter(cls)

    monkeypatch.setattr(serial, "_CONVERTERS", {})  # every class is decided again, through ``recording``
    monkeypatch.setattr(serial, "_converter", recording)
    log = str(Path(__file__).resolve().parents[2] / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log")
    for args in [
        ["scan", "-t", "gfx900,gfx803,gfx1030", "--format", fmt] for fmt in ("md", "json", "text", "sarif")
    ] + [
        ["workarounds", "--format", "json", "--offline", "--source", f"ollama={upstream / 'ollama'}"],
        ["diagnose", log, "--format", "json", "--no-upstream"],
    ]:
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code == 0, (args, capsys.readouterr().err)
    capsys.readouterr()
    assert {Verdict, Evidence, Location} <= seen  # the recording saw the records of the matrix
    assert all(issubclass(c, tuple) and hasattr(c, "_fields") for c in (TargetId, Hit, Finding))
    named = sorted(c.__qualname__ for c in seen if issubclass(c, tuple) and hasattr(c, "_fields"))
    assert named == [], f"named tuples written as JSON lists: {', '.join(named)}"


def test_json_dataclass_names_json_field_a_field_specifier():
    """Type checkers read a field's default from ``json_field(default=…)`` only through PEP 681: ``json_dataclass``
    names ``json_field`` a field specifier (under plain ``dataclass`` every field after a ``json_field`` looked like
    one with a default: 51 mypy errors), and ``default`` is keyword-only, so a positional default, which a type
    checker would not see, cannot be written."""
    import dataclasses
    import sys

    with pytest.raises(TypeError):
        json_field(0, skip=True)
    assert dataclasses.is_dataclass(_Outer) and _Outer.__dataclass_params__.frozen
    assert [f.default for f in dataclasses.fields(_Outer)][:2] == [dataclasses.MISSING, 0]
    if sys.version_info >= (3, 11):
        from gfxgate.serial import json_dataclass

        assert json_field in json_dataclass.__dataclass_transform__["field_specifiers"]
