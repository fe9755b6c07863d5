"""jsontext.dumps writes exactly what json.dumps writes, and uses orjson for the outputs gfxgate makes."""

from __future__ import annotations

import json

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gfxgate import jsontext

_keys = st.one_of(st.text(max_size=8), st.sampled_from(["a", "B", "é", "gfx900", "😀", "\x00", "\u2028"]))
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.sampled_from([1e16, 1e-7, -0.0, 0.1, 123456.789]),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_keys, inner, max_size=4),
        st.dictionaries(st.integers(-3, 3), inner, max_size=2),
    ),
    max_leaves=25,
)


@settings(max_examples=800, deadline=None)
@given(_json, st.booleans(), st.booleans())
@example({"\x7f": None}, False, True)  # found by this test: json escapes DEL under ensure_ascii, orjson does not
@example(["a\x7fb"], True, False)
def test_same_text_as_json_dumps(data, sort_keys, ensure_ascii):
    try:
        expected = json.dumps(data, indent=2, sort_keys=sort_keys, ensure_ascii=ensure_ascii)
    except TypeError:  # e.g. sort_keys over mixed int/str keys: json refuses, so must we
        return
    assert jsontext.dumps(data, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == expected


def test_string_content_that_looks_like_an_exponent_is_still_exact():
    data = {"note": 'x": 1e5', "list": ["\n 1e5", 'a": 2e-3,'], "n": 1e22, "m": [3e-9, 1.5]}
    assert jsontext.dumps(data) == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def test_reports_are_written_by_orjson(monkeypatch):
    """The fast path is the one taken for real report data (not a silent fallback every time)."""
    from gfxgate.gate.scan import scan_matrix
    from gfxgate.targets import catalog

    data = scan_matrix([catalog().parse("gfx900")]).to_json()
    expected = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)

    def refuse(*args, **kwargs):
        raise AssertionError("json.dumps used for a report orjson can write")

    monkeypatch.setattr(json, "dumps", refuse)
    assert jsontext.dumps(data) == expected
