"""ARCHITECTURE.md's worked example, run: a new gate layer with a new matcher touches only ``rules/``, one matcher
module and its tests.

``worked_example/`` holds exactly what the page tells a maintainer to write: the layer entry appended to
``rules/layers.yaml``, the gate rule file, the matcher module and a fixture case of real upstream text with its
``ruleid:`` annotations. The test adds them to a copy of the shipped rules and, in a fresh process, puts the module
folder on ``gfxgate.matchers.__path__`` — the only thing a module in ``gfxgate/matchers/`` has that this folder has
not — then runs the console entry point: the gates schema names the matcher, and a live scan (every other source a
fixture repository, ``clr`` the fixture case) shows the new row deciding what the annotations say, with their
evidence lines. No other line of gfxgate lists the matcher or the layer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gfxgate.resources import rules_dir
from tests.upstream_fixtures import source_env, upstream  # noqa: F401 - fixtures: upstream-shaped git repositories
from tests.gate.rule_fixtures import read_case

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = Path(__file__).resolve().parent / "worked_example"
CASE = EXAMPLE / "fixtures" / "hip-isa-list" / "rocm-6.2.0"

_RUN = """
import sys
import gfxgate.matchers
gfxgate.matchers.__path__.append(sys.argv[1])
from gfxgate.cli import main
main(sys.argv[2:])
"""


def _gfxgate(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", _RUN, str(EXAMPLE / "matchers"), *args],
        cwd=cwd,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def rules(tmp_path: Path) -> Path:
    """The shipped rules plus the example's layer and gate file, as a maintainer's tree would have them."""
    out = tmp_path / "rules"
    shutil.copytree(rules_dir(), out, ignore=shutil.ignore_patterns("snapshots", "__pycache__"))
    with open(out / "layers.yaml", "a", encoding="utf-8") as layers:
        layers.write((EXAMPLE / "rules" / "layers.yaml").read_text(encoding="utf-8"))
    shutil.copy(EXAMPLE / "rules" / "gates" / "hip-runtime.yaml", out / "gates")
    return out


def test_the_gates_schema_names_the_new_matcher_and_its_params(rules, tmp_path):
    run = _gfxgate("schema", "gates", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rule = json.loads(run.stdout)["$defs"]["rule"]
    assert "isa-list" in rule["properties"]["matcher"]["enum"]
    branch = next(b for b in rule["allOf"] if b["if"]["properties"]["matcher"]["const"] == "isa-list")
    assert branch["then"]["properties"]["params"]["required"] == ["array"]


def test_a_live_scan_shows_the_new_row_as_its_fixture_says(rules, tmp_path, source_env):  # noqa: F811
    tree = tmp_path / "clr"
    expectations = read_case(CASE, tree)  # annotation lines blanked, line numbers kept
    assert {e.rule_id for e in expectations} == {"hip-isa-list"} and all(e.kind == "ruleid" for e in expectations)
    expected = {(target, status, e.path, e.evidence_line) for e in expectations for target, status in e.statuses}
    targets = sorted({target for target, *_ in expected})
    run = _gfxgate(
        "scan",
        "--live",
        "--offline",
        "--rules",
        str(rules),
        "--source",
        f"clr={tree}",
        *[f"--target={t}" for t in targets],
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    layers = {layer["id"]: layer for layer in json.loads(run.stdout)["layers"]}
    assert list(layers)[-1] == "hip-runtime" and layers["hip-runtime"]["title"] == "HIP runtime ISA list"
    found = set()
    for cell in layers["hip-runtime"]["cells"]:
        lines = {(ev["location"]["path"], ev["location"]["line"]) for ev in cell["evidence"]}
        assert all(ev["location"]["repo"] == "clr" and ev["source"] == "hip-isa-list" for ev in cell["evidence"])
        found |= {(cell["target"], cell["status"], path, line) for path, line in lines}
    assert expected <= found, (sorted(expected), sorted(found))
    blocked = next(c for c in layers["hip-runtime"]["cells"] if c["status"] == "blocked")
    assert blocked["remedy"].startswith(f"A runtime without a row for {blocked['target']} ")


def test_the_example_is_what_the_architecture_page_shows():
    """The page names every file of the example, and the matcher needs nothing the page does not say."""
    page = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    example = [
        p for p in EXAMPLE.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.name != "__init__.py"
    ]
    for path in sorted(example):
        assert path.relative_to(ROOT).as_posix() in page, f"ARCHITECTURE.md does not name {path.relative_to(ROOT)}"
    module = (EXAMPLE / "matchers" / "isa_list.py").read_text(encoding="utf-8")
    assert "check_params" not in module  # optional: the schema checks the params
    assert re.search(r"^MATCHER: Matcher = IsaList\(\)$", module, re.M)  # typed: the protocol of matchers/
