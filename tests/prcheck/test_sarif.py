"""SARIF 2.1.0 for scan and diff: valid, deterministic, stable ids and fingerprints, locations in this repository."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jsonschema
import pytest

from gfxgate.report import FORMATS, FORMATTERS
from tests.prcheck.golden import REPO, TARGETS, gfxgate

DATA = Path(__file__).resolve().parent / "data"


@functools.cache
def sarif_schema() -> dict:
    return json.loads((DATA / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def validate(doc: dict) -> None:
    jsonschema.Draft7Validator(sarif_schema()).validate(doc)


def test_every_output_format_has_a_formatter():
    assert set(FORMATTERS) == set(FORMATS) and "sarif" in FORMATTERS


@pytest.fixture(scope="module")
def scans(tmp_path_factory, history_upstream):
    from tests.prcheck.golden import upstream_env

    work = tmp_path_factory.mktemp("sarif")
    env = upstream_env(work, history_upstream)

    def scan(ref: str, *extra: str) -> dict:
        done = gfxgate(["scan", "--ref", f"ollama={ref}", *TARGETS, "--format", "sarif", *extra], env, work)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    return scan


def test_scan_sarif_is_valid_and_deterministic(scans):
    first, second = scans("v0.14.0"), scans("v0.14.0")
    validate(first)
    assert first == second
    run = first["runs"][0]
    assert run["tool"]["driver"]["name"] == "gfxgate"
    levels = {(r["properties"]["target"], r["properties"]["layer"]): r["level"] for r in run["results"]}
    assert levels[("gfx900", "release-packaging")] == "error"  # blocked
    assert levels[("gfx900", "cmake-filter")] == "warning"  # override-required
    assert ("gfx1030", "cmake-filter") not in levels  # allowed cells are not results
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert all(re.fullmatch(r"gfxgate/scan/[a-z-]+", i) for i in ids)
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_scan_locations_point_at_the_rule_definition_in_this_repository(scans):
    run = scans("v0.14.0")["runs"][0]
    for result in run["results"]:
        loc = result["locations"][0]["physicalLocation"]
        path = REPO / loc["artifactLocation"]["uri"]
        assert path.is_file(), loc
        line = path.read_text(encoding="utf-8").splitlines()[loc["region"]["startLine"] - 1]
        if result["properties"]["rules"]:
            assert any(f"id: {rule}" in line for rule in result["properties"]["rules"]), line
    packaging = next(r for r in run["results"] if r["properties"]["layer"] == "release-packaging")
    assert (
        packaging["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "rules/gates/release-packaging.yaml"
    )
    # upstream evidence travels in the message, not as a location
    assert "ollama@v0.14.0:Dockerfile:3" in packaging["message"]["text"]


def test_scan_with_a_rules_folder_points_at_that_folder(tmp_path):
    """`--rules DIR`: each result points at DIR's file and the line of the rule there, not at the shipped rules."""
    import shutil

    rules = tmp_path / "myrules"
    (rules / "gates").mkdir(parents=True)
    shutil.copy(REPO / "rules" / "layers.yaml", rules)
    for path in (REPO / "rules" / "gates").glob("*.yaml"):  # the same rules, three lines further down
        (rules / "gates" / path.name).write_text("# a copy\n" * 3 + path.read_text(encoding="utf-8"), encoding="utf-8")
    env = {"GFXGATE_CACHE_DIR": str(tmp_path / "cache")}
    done = gfxgate(["scan", "-t", "gfx900", "--rules", "myrules", "--format", "sarif"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)["runs"][0]["results"]
    located = [r for r in results if r["properties"]["rules"]]
    assert located
    for result in located:
        loc = result["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uri"].startswith("myrules/gates/"), loc
        line = (
            (tmp_path / loc["artifactLocation"]["uri"])
            .read_text(encoding="utf-8")
            .splitlines()[loc["region"]["startLine"] - 1]
        )
        assert any(f"id: {rule}" in line for rule in result["properties"]["rules"]), line
    # a folder outside the working folder is named by its file URI
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = gfxgate(["scan", "-t", "gfx900", "--rules", str(rules), "--format", "sarif"], env, elsewhere)
    assert done.returncode == 0, done.stderr
    packaging = next(
        r for r in json.loads(done.stdout)["runs"][0]["results"] if r["properties"]["layer"] == "release-packaging"
    )
    uri = packaging["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == (rules / "gates" / "release-packaging.yaml").resolve().as_uri()


def test_fingerprints_survive_moved_lines_and_new_tags(scans):
    def prints(doc):
        return {
            (r["properties"]["target"], r["properties"]["layer"]): r["partialFingerprints"]["gfxgate/v1"]
            for r in doc["runs"][0]["results"]
        }

    at_300, at_310 = prints(scans("v0.13.0")), prints(scans("v0.13.1"))  # v0.13.1 moved ml/device.go
    assert at_300 == at_310
    at_400 = prints(scans("v0.14.0"))
    assert at_400[("gfx900", "cmake-filter")] == at_300[("gfx900", "cmake-filter")]
    assert ("gfx900", "release-packaging") in at_400 and ("gfx900", "release-packaging") not in at_300


def test_diff_sarif_points_at_the_pin(tmp_path):
    from gfxgate.prcheck.diff import diff_matrices
    from gfxgate.report.sarif import diff_sarif

    golden = json.loads((Path(__file__).parent / "golden" / "diff.json").read_text(encoding="utf-8"))
    assert golden["counts"]["regression"] == 2
    doc = json.loads((Path(__file__).parent / "golden" / "diff.sarif").read_text(encoding="utf-8"))
    validate(doc)
    results = doc["runs"][0]["results"]
    assert {r["ruleId"] for r in results} == {"gfxgate/diff/regression", "gfxgate/diff/improvement"}
    regression = next(r for r in results if r["properties"]["layer"] == "cmake-filter")
    assert regression["level"] == "error"
    where = regression["locations"][0]["physicalLocation"]
    assert (
        where["artifactLocation"]["uri"] == "rules/pins.toml" and where["region"]["startLine"] == 5
    )  # ref = of ollama
    assert "ollama@v0.11.0:CMakeLists.txt:14" in regression["message"]["text"]
    assert "ollama@v0.14.0:CMakeLists.txt:17" in regression["message"]["text"]
    # an empty diff is still a valid SARIF run, with no rules and no results
    empty = diff_sarif(
        diff_matrices({"targets": [], "layers": [], "sources": []}, {"targets": [], "layers": [], "sources": []})
    )
    validate(empty)
    assert empty["runs"][0]["results"] == []
