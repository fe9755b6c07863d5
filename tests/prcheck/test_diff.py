"""`gfxgate diff`: classification, both evidences, exit codes 0 / 1 / 2 / 6."""

from __future__ import annotations

import json

import pytest

from gfxgate.prcheck.diff import DRIFT, EVIDENCE, IMPROVEMENT, REGRESSION, RESOLVED, classify, diff_matrices
from tests.prcheck.golden import TARGETS, gfxgate


@pytest.mark.parametrize(
    "old,new,kind",
    [
        ("allowed", "blocked", REGRESSION),
        ("allowed", "override-required", REGRESSION),
        ("partial", "blocked", REGRESSION),
        ("blocked", "allowed", IMPROVEMENT),
        ("override-required", "partial", IMPROVEMENT),
        ("allowed", "unknown", DRIFT),
        ("blocked", "not-scanned", DRIFT),
        ("unknown", "blocked", RESOLVED),
        ("allowed", "allowed", None),
        ("unknown", "unknown", None),
    ],
)
def test_classify(old, new, kind):
    assert classify(old, new) == kind


@pytest.fixture(scope="module")
def reports(tmp_path_factory, history_upstream):
    """Scan JSON of the synthetic upstream at several tags (built once)."""
    from tests.prcheck.golden import upstream_env

    work = tmp_path_factory.mktemp("diff")
    env = upstream_env(work, history_upstream)
    paths = {}
    for ref in ("v0.11.0", "v0.11.1", "v0.12.0", "v0.14.0", "v0.14.10"):
        out = work / f"{ref}.json"
        done = gfxgate(["scan", "--ref", f"ollama={ref}", *TARGETS, "--format", "json", "-o", str(out)], env, work)
        assert done.returncode == 0, done.stderr
        paths[ref] = out
    return work, env, paths


def run_diff(reports, old, new, *args):
    work, env, paths = reports
    return gfxgate(["diff", str(paths[old]), str(paths[new]), *args], env, work)


def test_regression_named_in_fail_on_exits_1_with_readable_markdown(reports):
    done = run_diff(reports, "v0.11.0", "v0.14.0", "--fail-on", "gfx900")
    assert done.returncode == 1
    assert "| gfx900 | Release packaging | **regression** | allowed | **blocked** |" in done.stdout
    # both evidences side by side
    assert "`ollama@v0.11.0:CMakeLists.txt:14`" in done.stdout and "`ollama@v0.14.0:CMakeLists.txt:17`" in done.stdout
    assert "gfx900 regressed: cmake-filter allowed -> override-required" in done.stderr


def test_no_fail_on_or_other_target_exits_0(reports):
    assert run_diff(reports, "v0.11.0", "v0.14.0").returncode == 0
    done = run_diff(reports, "v0.11.0", "v0.14.0", "--fail-on", "gfx1030")  # gfx1030 only improved
    assert done.returncode == 0, done.stderr
    assert "No regression for gfx1030" in done.stdout


def test_improvement_is_not_a_regression(reports):
    done = run_diff(reports, "v0.14.0", "v0.11.0", "--format", "json")
    assert done.returncode == 0
    data = json.loads(done.stdout)
    kinds = {(c["target"], c["layer"]): c["kind"] for c in data["changes"]}
    assert kinds[("gfx900", "release-packaging")] == IMPROVEMENT
    assert kinds[("gfx900", "cmake-filter")] == IMPROVEMENT
    assert data["counts"]["regression"] == 2 and data["failing"] == []


def test_discovery_regression_backwards_fails(reports):
    # v0.14.0 -> v0.11.0: discovery goes back from the probe (allowed) to the allowlist (partial): a regression
    assert run_diff(reports, "v0.14.0", "v0.11.0", "--fail-on", "gfx900").returncode == 1


def test_moved_lines_only_are_evidence_changes(reports):
    done = run_diff(reports, "v0.11.1", "v0.12.0", "--fail-on", "gfx900", "--format", "json")
    assert done.returncode == 0
    changes = json.loads(done.stdout)["changes"]
    assert changes and {c["kind"] for c in changes} == {EVIDENCE}
    assert {c["layer"] for c in changes} == {"cmake-filter"}


def test_identical_reports_have_no_change(reports):
    done = run_diff(reports, "v0.11.0", "v0.11.1", "--format", "json")
    assert done.returncode == 0
    assert json.loads(done.stdout)["changes"] == []


def test_drift_when_a_rule_stops_matching(reports):
    done = run_diff(reports, "v0.14.0", "v0.14.10", "--fail-on", "gfx900,gfx1030", "--format", "text")
    assert done.returncode == 1  # presets dropped gfx900 at v0.14.9
    assert "drift        gfx900     cmake-filter         override-required -> unknown" in done.stdout
    assert "did not match" in done.stdout


@pytest.mark.parametrize("fail_on", ["gfx803", "gfx9999"])
def test_fail_on_target_not_compared_is_usage_error(reports, fail_on):
    done = run_diff(reports, "v0.11.0", "v0.14.0", "--fail-on", fail_on)
    assert done.returncode == 2
    assert fail_on in done.stderr


def test_unreadable_inputs_exit_6(reports, tmp_path):
    work, env, paths = reports
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "something-else"}))
    for bad in (broken, other, tmp_path / "missing.json"):
        done = gfxgate(["diff", str(paths["v0.11.0"]), str(bad)], env, work)
        assert done.returncode == 6, (bad, done.stderr)
        assert str(bad.name) in done.stderr


def test_diff_matrices_reports_targets_only_on_one_side(reports):
    _, _, paths = reports
    old = json.loads(paths["v0.11.0"].read_text())
    new = json.loads(paths["v0.14.0"].read_text())
    new["targets"] = ["gfx900"]
    for layer in new["layers"]:
        layer["cells"] = [c for c in layer["cells"] if c["target"] == "gfx900"]
    result = diff_matrices(old, new)
    assert result.targets == ("gfx900",)
    assert "target gfx1030 is only in the old report" in result.notes


def gfm_cells(row: str) -> list[str]:
    """A GFM table row's cells the way cmark-gfm reads them: a cell runs to the next pipe that is not escaped (a
    backslash escapes the ASCII punctuation after it, itself included); then ``\\|`` becomes ``|`` in each cell."""
    cells, cell, i = [], "", 1 if row.startswith("|") else 0
    while i < len(row):
        if row[i] == "\\" and i + 1 < len(row) and not row[i + 1].isalnum() and not row[i + 1].isspace():
            cell += row[i : i + 2]
            i += 2
        elif row[i] == "|":
            cells.append(cell.strip().replace("\\|", "|"))
            cell, i = "", i + 1
        else:
            cell += row[i]
            i += 1
    return cells + ([cell.strip().replace("\\|", "|")] if cell.strip() else [])


def test_evidence_text_with_backslash_and_pipe_stays_one_code_span_in_its_cell(reports, tmp_path):
    # inside a code span backslashes are literal; only the pipe needs its escape, for the table
    work, env, paths = reports
    new = json.loads(paths["v0.14.0"].read_text())
    text = r"a\b|c"
    for layer in new["layers"]:
        for cell in layer["cells"]:
            if (layer["id"], cell["target"]) == ("cmake-filter", "gfx900"):
                cell["evidence"][0]["text"] = text
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(new))
    done = gfxgate(["diff", str(paths["v0.11.0"]), str(edited)], env, work)
    assert done.returncode == 0, done.stderr
    section = done.stdout.split("## gfx900 — Build target list (from source)")[1]
    row = next(line for line in section.splitlines() if line.startswith("| evidence |"))
    cells = gfm_cells(row)
    assert len(cells) == 3, cells  # evidence, old, new: the pipe did not split the cell
    assert cells[2].startswith(f"`ollama@v0.14.0:CMakeLists.txt:17` `{text}`<br>"), cells[2]
