"""The shipped catalogue's Hyperscan prefilter is compiled once per content of its literals and host, then loaded
from gfxgate's rules cache (the `diagnose` budget: compiling it is ~17 M instructions of a start); the loaded
database names the lines the compiled one names, and a stored database that does not load is compiled again."""

from __future__ import annotations

import pytest

from gfxgate import datacache
from gfxgate.diagnose import catalogue, patterns
from gfxgate.diagnose.patterns import LiteralScanner
from tests.diagnose import logs

pytest.importorskip("hyperscan", reason="hyperscan has a wheel for Linux x86-64 only (the RE2 fallback runs elsewhere)")


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GFXGATE_PREFILTER", raising=False)
    datacache.reset()
    yield
    datacache.reset()


def _text() -> bytes:
    blocks = [logs.journal(logs.ollama_0_12_3()), logs.journal(logs.ollama_0_17_5_crash()), logs.ollama_0_5_7()]
    return "\n".join(line for block in blocks for line in block).encode("utf-8")


def _compiles(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = LiteralScanner._hyperscan_compile

    def counted(self):
        calls.append(len(self.literals))
        return real(self)

    monkeypatch.setattr(LiteralScanner, "_hyperscan_compile", counted)
    return calls


def _fresh_scanner() -> LiteralScanner:
    shipped = catalogue.default_catalogue()
    return catalogue.Catalogue(shipped.messages, shipped.path).literal_scanner  # a new cached_property


def test_a_start_loads_the_stored_prefilter_and_it_names_the_same_lines(own_cache, monkeypatch):
    compiles = _compiles(monkeypatch)
    first = _fresh_scanner()
    assert first.engine == "hyperscan" and len(compiles) == 1, "the first start compiles and stores it"
    second = _fresh_scanner()
    assert second.engine == "hyperscan" and len(compiles) == 1, "a later start loads it: no compilation"
    text = _text()
    compiled = LiteralScanner(list(first.literals), engine="hyperscan")  # no store: compiled here
    assert len(compiles) == 2
    found = second.candidates(text)
    assert found and found == compiled.candidates(text) == first.candidates(text)


def test_a_stored_database_that_does_not_load_is_compiled_again(monkeypatch):
    compiles = _compiles(monkeypatch)
    literals = [b"error", b"rocBLAS", b"gfx9", b"dead", b"beef", b"cafe", b"abba"]
    asked: list[tuple[bytes, str]] = []

    def stored(raw: bytes, kind: str, make) -> bytes:
        asked.append((raw, kind))
        return b"not a database"

    scanner = LiteralScanner(literals, engine="hyperscan", stored=stored)
    assert compiles == [7] and scanner.engine == "hyperscan"
    # the key of the stored database: its literals longest first, then in byte order (not a set's: a process's own)
    assert asked == [
        (b"rocBLAS\nerror\nabba\nbeef\ncafe\ndead\ngfx9", patterns._hyperscan_kind(pytest.importorskip("hyperscan")))
    ]
    text = b"x\nan error here\nnone\ngfx906\n"
    assert len(scanner.candidates(text)) == 2
    assert scanner.candidates(text) == LiteralScanner(literals, engine="hyperscan").candidates(text)
