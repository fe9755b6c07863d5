"""gfxgate.lazyre.lazy_compile: a module's pattern compiled on its first use, answering what ``re.compile`` answers."""

from __future__ import annotations

import re

from gfxgate.lazyre import lazy_compile

TEXT = "SIGSEGV at 0x1 in ggml_abort; gfx900 gfx1030 GFX906"


def test_a_lazy_pattern_answers_what_the_compiled_one_answers():
    for source, flags in ((r"gfx(?P<n>[0-9]+)", re.I), (r"\b(SIG[A-Z]+)\b", 0), (r"^x", 0)):
        lazy, eager = lazy_compile(source, flags), re.compile(source, flags)
        assert [m.span() for m in lazy.finditer(TEXT)] == [m.span() for m in eager.finditer(TEXT)]
        assert lazy.findall(TEXT) == eager.findall(TEXT)
        assert lazy.sub("_", TEXT) == eager.sub("_", TEXT) and lazy.subn("_", TEXT) == eager.subn("_", TEXT)
        assert lazy.split(TEXT) == eager.split(TEXT)
        assert bool(lazy.search(TEXT)) == bool(eager.search(TEXT))
        assert bool(lazy.match(TEXT)) == bool(eager.match(TEXT)) and lazy.fullmatch(TEXT) is None
        assert (lazy.pattern, lazy.flags, lazy.groups) == (eager.pattern, eager.flags, eager.groups)
        assert lazy.groupindex == eager.groupindex  # any other attribute: through the compiled pattern
    raw = lazy_compile(rb"gfx[0-9]+")
    assert raw.findall(TEXT.encode()) == [b"gfx900", b"gfx1030"]


def test_nothing_is_compiled_before_the_first_use(monkeypatch):
    compiled: list[str] = []
    real = re.compile
    monkeypatch.setattr(re, "compile", lambda p, f=0: compiled.append(p) or real(p, f))
    pattern = lazy_compile(r"gfx[0-9]+")
    assert compiled == []
    assert pattern.search("a gfx900") is not None
    assert pattern.search("gfx1030") is not None and pattern.findall("gfx1 gfx2") == ["gfx1", "gfx2"]
    assert compiled == [r"gfx[0-9]+"], "compiled once, on the first use"


def test_a_bad_pattern_fails_at_its_first_use():
    pattern = lazy_compile(r"(unclosed")
    try:
        pattern.search("x")
    except re.error as error:
        assert "missing )" in str(error)
    else:
        raise AssertionError("a bad pattern compiled")
