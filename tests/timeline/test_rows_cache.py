"""The embedded timeline's rows as the remedies read them (timeline/snapshot.py: load_cells): from the snapshot the
first time, from the rows' cache file after (issue 40's speed budget: no 2.8 MB decode per `diagnose`), and the same
answer either way; a broken cache file is rebuilt, a cache that cannot be written costs only the decode. Within a
process the cells of the same bytes are kept (``datacache.memo``): ``datacache.reset()`` starts over as a new process."""

from __future__ import annotations

import pytest

from gfxgate import datacache
from gfxgate.timeline import snapshot
from tests.cacheseed import copy_into

ASKED = [
    ("gfx900", "v0.12.3", "release-packaging"),
    ("gfx1030", "v0.30.0", "cmake-filter"),
    ("sm_61", "v0.32.15", "cuda-build"),
    ("gfx803", "v0.1.20", "discovery"),
]


@pytest.fixture
def own_cache(tmp_path, monkeypatch, _cache_seed):
    """A cache folder without the rows' cache file, else as a user's second run has it (tests/cacheseed.py): the rules'
    cache with its verdicts, among them the snapshot's schema check, which an empty folder made each test redo (1.6 s
    of CPU, not what these tests are about; tests/timeline/test_timeline.py holds that check's own cache)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    copy_into([path for path in _cache_seed if not path.name.startswith("timeline-rows-")], cache)
    assert not list(cache.glob("timeline-rows-*"))
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(cache))
    monkeypatch.delenv("GFXGATE_NO_RULES_CACHE", raising=False)
    datacache.reset()
    yield cache
    datacache.reset()


def _answers(cells):
    return (
        [cells.status_where(*asked) for asked in ASKED],
        [cells.row(t) for t in ("gfx900", "sm_61")],
        cells.tags,
        cells.targets,
    )


def test_the_cached_rows_answer_as_the_snapshot(own_cache, monkeypatch):
    decoded = snapshot._checked(None)[1]["timeline"]
    expected = _answers(snapshot.Cells(decoded))
    first = snapshot.load_cells()  # builds the cache file
    files = list(own_cache.glob("timeline-rows-*.msgpack"))
    assert len(files) == 1
    assert _answers(first) == expected

    def no_decode(path, raw):
        raise AssertionError("the rows' cache should spare the snapshot's decode")

    monkeypatch.setattr(snapshot, "_decode", no_decode)
    datacache.reset()  # as a new process: the cells this one keeps per content forgotten
    second = snapshot.load_cells()
    assert isinstance(second._raw["gfx900"], bytes)  # read from the cache file, decoded per row
    assert _answers(second) == expected


def test_a_broken_cache_file_is_rebuilt(own_cache):
    expected = _answers(snapshot.load_cells())
    (side,) = own_cache.glob("timeline-rows-*.msgpack")
    for broken in (b"", b"\xc1garbage", side.read_bytes()[:100]):
        side.write_bytes(broken)
        datacache.reset()  # as a new process
        assert _answers(snapshot.load_cells()) == expected
        assert side.read_bytes() != broken


def test_without_a_cache_the_rows_are_decoded(own_cache, monkeypatch):
    expected = _answers(snapshot.load_cells())
    monkeypatch.setenv("GFXGATE_NO_RULES_CACHE", "1")
    for side in own_cache.glob("timeline-rows-*.msgpack"):
        side.unlink()
    datacache.reset()  # as a new process
    assert _answers(snapshot.load_cells()) == expected
    assert not list(own_cache.glob("timeline-rows-*.msgpack"))
