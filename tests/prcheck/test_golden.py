"""The golden outputs under golden/ are what gfxgate generates now (regenerate: python -m tests.prcheck.golden)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tests.prcheck.golden import FULL_ID, GOLDEN, generate, normalise_commits
from tests.prcheck.test_sarif import sarif_schema


def test_golden_outputs_are_current(tmp_path, history_upstream):
    files = generate(tmp_path, history_upstream)
    assert sorted(files) == sorted(p.name for p in GOLDEN.iterdir())
    stale = [name for name, text in files.items() if (GOLDEN / name).read_text(encoding="utf-8") != text]
    assert not stale, f"stale golden files {stale}: run `python -m tests.prcheck.golden`"


def test_golden_files_are_sorted_json_and_valid_sarif():
    import tempfile

    for path in GOLDEN.iterdir():
        if path.suffix in (".json", ".sarif"):
            data = json.loads(path.read_text(encoding="utf-8"))
            assert (
                path.read_text(encoding="utf-8")
                == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            )
        if path.suffix == ".sarif":
            jsonschema.Draft7Validator(sarif_schema()).validate(json.loads(path.read_text(encoding="utf-8")))
    text = (GOLDEN / "diff.md").read_text(encoding="utf-8")
    assert "| gfx900 | Build target list (from source) | **regression** | allowed | **override-required** |" in text
    assert "**Failing**: gfx900 regressed" in text
    text = "".join(p.read_text(encoding="utf-8") for p in GOLDEN.iterdir())
    assert tempfile.gettempdir() not in text and str(GOLDEN.parents[2]) not in text  # nothing machine-specific


def _evidence(node):
    if isinstance(node, dict):
        if "commit" in node and "where" in node:
            yield node
        for value in node.values():
            yield from _evidence(value)
    elif isinstance(node, list):
        for value in node:
            yield from _evidence(value)


def test_golden_evidence_names_the_commit_of_the_tag_it_was_read_at():
    """Commit ids are normalised, not dropped: each evidence's id is the fixture commit of its ``where`` tag."""
    checked = 0
    for name in ("diff.json", "history.json"):
        text = (GOLDEN / name).read_text(encoding="utf-8")
        assert not FULL_ID.search(text)
        for evidence in _evidence(json.loads(text)):
            assert evidence["commit"] == f"<commit {evidence['where'].split(':')[0]}>"
            checked += 1
    assert checked > 50
    new = next(
        line for line in (GOLDEN / "diff.md").read_text(encoding="utf-8").splitlines() if line.startswith("New: ")
    )
    assert "`ollama@v0.14.0` (<commit:12 ollama@v0.14.0>)" in new


def test_commit_normalisation_keeps_ids_checked():
    names = {"0123456789abcdef0123456789abcdef01234567": "ollama@v0.11.0"}
    text = normalise_commits('"0123456789abcdef0123456789abcdef01234567" (0123456789ab) (0123456789a) abc', names)
    assert (
        text == '"<commit ollama@v0.11.0>" (<commit:12 ollama@v0.11.0>) (0123456789a) abc'
    )  # a short id stays visible
    with pytest.raises(AssertionError, match="not a commit of the fixture repositories"):
        normalise_commits("ffffffffffffffffffffffffffffffffffffffff", names)
