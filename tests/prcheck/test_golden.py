"""The golden outputs under golden/ are what gfxgate generates now (regenerate: python -m tests.prcheck.golden)."""

from __future__ import annotations

import json

import jsonschema

from tests.prcheck.golden import GOLDEN, generate
from tests.prcheck.test_sarif import sarif_schema


def test_golden_outputs_are_current(tmp_path):
    files = generate(tmp_path)
    assert sorted(files) == sorted(p.name for p in GOLDEN.iterdir())
    stale = [name for name, text in files.items() if (GOLDEN / name).read_text(encoding="utf-8") != text]
    assert not stale, f"stale golden files {stale}: run `python -m tests.prcheck.golden`"


def test_golden_files_are_sorted_json_and_valid_sarif():
    import tempfile

    for path in GOLDEN.iterdir():
        if path.suffix in (".json", ".sarif"):
            data = json.loads(path.read_text(encoding="utf-8"))
            assert path.read_text(encoding="utf-8") == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        if path.suffix == ".sarif":
            jsonschema.Draft7Validator(sarif_schema()).validate(json.loads(path.read_text(encoding="utf-8")))
    text = (GOLDEN / "diff.md").read_text(encoding="utf-8")
    assert "| gfx900 | CMake target list (build from source) | **regression** | allowed | **override-required** |" in text
    assert "**Failing**: gfx900 regressed" in text
    text = "".join(p.read_text(encoding="utf-8") for p in GOLDEN.iterdir())
    assert tempfile.gettempdir() not in text and str(GOLDEN.parents[2]) not in text  # nothing machine-specific
