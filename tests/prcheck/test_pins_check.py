"""`gfxgate pins bump` and `gfxgate check`: the PR-check path end to end against two pins files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gfxgate.prcheck.pins import ref_lines, set_ref
from tests.prcheck.golden import gfxgate
from tests.prcheck.test_sarif import validate
from tests.prcheck.upstream import pins_text


def test_set_ref_changes_only_the_value_and_keeps_comments():
    text = pins_text("v0.11.0")
    new, old = set_ref(text, "ollama", "v0.14.10")
    assert old == "v0.11.0"
    before, after = text.splitlines(), new.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert changed == [
        ('ref = "v0.11.0"          # the version we ship', 'ref = "v0.14.10"         # the version we ship')
    ]
    assert len(before) == len(after)
    assert set_ref(text, "rocm-docs", "rocm-6.4.0")[0].count('ref = "rocm-6.4.0"       # newest tag we can verify') == 1
    assert ref_lines(text) == {
        "ollama": 5,
        "ollama-python": 10,
        "rocm-docs": 15,
        "llama-cpp": 20,
        "clr": 25,
        "rocblas": 30,
        "ollama-for-amd": 35,
        "therock": 41,
    }


def test_set_ref_refuses_bad_tags_and_missing_tables():
    from gfxgate.errors import RuleError, UsageError

    with pytest.raises(UsageError):
        set_ref(pins_text("v0.11.0"), "ollama", 'v1"; rm -rf /')
    with pytest.raises(RuleError):
        set_ref(pins_text("v0.11.0"), "nope", "v1.0.0")


def bump(project: Path, src_env: dict, *args: str):
    """``gfxgate pins bump ARGS`` on the project's pins (a temporary copy), named explicitly: without ``--pins`` the
    default is the pins of the repository around the current folder, and where none is found, this checkout's own
    rules/pins.toml, which a bump to a fixture tag would silently rewrite."""
    return gfxgate(["pins", "bump", *args, "--pins", str(project / "rules" / "pins.toml")], src_env, project)


def test_bump_edits_the_pin_and_regenerates_the_snapshot(project, src_env):
    pins = project / "rules" / "pins.toml"
    done = bump(project, src_env, "ollama", "v0.14.0")
    assert done.returncode == 0, done.stderr
    assert "ollama: v0.11.0 -> v0.14.0" in done.stderr
    assert pins.read_text() == pins_text("v0.14.0")
    from gfxgate.gate import snapshot

    snap = snapshot.load(project / "rules" / "snapshots" / "pins.json")
    assert snap.pins["ollama"]["ref"] == "v0.14.0"
    facts = snap.facts["ollama-dockerfile-rocblas-removal"]
    assert facts.state == "matched" and facts.ref == "v0.14.0"
    written = (project / "rules" / "snapshots" / "pins.json").read_text()
    assert (
        str(src_env["GFXGATE_SOURCE_OLLAMA"]) not in written and "https://github.com/ollama/ollama.git" in written
    )  # pinned URLs


def test_bump_without_pins_edits_the_pins_of_the_repository_around_the_current_folder(project, src_env):
    from gfxgate.prcheck.pins import default_pins_path

    checkout_pins = Path(__file__).resolve().parents[2] / "rules" / "pins.toml"
    # Precondition, checked in this process before the child runs: the default is the project's copy, so the run
    # below cannot touch this checkout's pins.
    assert default_pins_path(project) == (project / "rules" / "pins.toml").resolve()
    before = checkout_pins.stat()
    done = gfxgate(["pins", "bump", "ollama", "v0.12.0", "--no-snapshot"], src_env, project)
    assert done.returncode == 0, done.stderr
    assert (project / "rules" / "pins.toml").read_text() == pins_text("v0.12.0")
    after = checkout_pins.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_bump_to_an_unknown_tag_changes_nothing(project, src_env):
    pins = project / "rules" / "pins.toml"
    before = pins.read_text()
    done = bump(project, src_env, "ollama", "v0.14.5")
    assert done.returncode == 4
    assert "nearest tags" in done.stderr and "v0.14.0" in done.stderr
    assert pins.read_text() == before and not (project / "rules" / "snapshots").exists()
    done = bump(project, src_env, "olama", "v0.14.0")
    assert done.returncode == 2 and "did you mean ollama" in done.stderr


def test_check_fails_on_a_gfx900_regression_with_a_readable_markdown_diff(project, tmp_path, src_env):
    assert bump(project, src_env, "ollama", "v0.14.0", "--no-snapshot").returncode == 0
    summary, sarif = tmp_path / "summary.md", tmp_path / "check.sarif"
    summary.write_text("# earlier step\n")
    done = gfxgate(
        [
            "check",
            "--base-ref",
            "main",
            "-t",
            "gfx900,gfx1030",
            "--fail-on",
            "gfx900",
            "--summary",
            str(summary),
            "--sarif-output",
            str(sarif),
        ],
        src_env,
        project,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("# gfxgate check against main: gfx900, gfx1030")
    lines = done.stdout.splitlines()
    assert any(line.startswith("Old: ") and "`ollama@v0.11.0`" in line for line in lines)
    assert any(line.startswith("New: ") and "`ollama@v0.14.0`" in line for line in lines)
    assert (
        "| gfx900 | Build target list (from source) | **regression** | allowed | **override-required** |" in done.stdout
    )
    assert "**Failing**: gfx900 regressed" in done.stdout
    assert "gfx900 regressed: release-packaging allowed -> blocked" in done.stderr
    text = summary.read_text()
    assert text.startswith("# earlier step\n# gfxgate check against main") and "**regression**" in text
    doc = json.loads(sarif.read_text())
    validate(doc)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"]}
    assert uris == {"rules/pins.toml"}


def test_check_passes_without_a_regression(project, src_env):
    # v0.12.0 only moves lines; gfx1030 only improves up to v0.14.0
    assert bump(project, src_env, "ollama", "v0.12.0", "--no-snapshot").returncode == 0
    done = gfxgate(["check", "--base-ref", "main", "-t", "gfx900", "--fail-on", "gfx900"], src_env, project)
    assert done.returncode == 0, done.stderr
    assert "No cell changed status." in done.stdout and "Evidence moved" in done.stdout
    assert bump(project, src_env, "ollama", "v0.14.0", "--no-snapshot").returncode == 0
    done = gfxgate(
        ["check", "--base-ref", "main", "-t", "gfx900,gfx1030", "--fail-on", "gfx1030", "--format", "json"],
        src_env,
        project,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["failing"] == [] and data["counts"]["regression"] == 2


def test_check_errors(project, src_env):
    done = gfxgate(["check", "--base-ref", "no-such-ref", "-t", "gfx900"], src_env, project)
    assert done.returncode == 4 and "unknown git ref" in done.stderr
    stray = project / "other.toml"
    stray.write_text(pins_text("v0.11.0"))
    done = gfxgate(["check", "--base-ref", "main", "-t", "gfx900", "--pins", str(stray)], src_env, project)
    assert done.returncode == 4 and "does not exist at main" in done.stderr
    done = gfxgate(["check", "--base-ref", "main", "-t", "gfx900", "--fail-on", "gfx906"], src_env, project)
    assert done.returncode == 2


def test_check_reads_the_rules_at_the_base_ref_too(project, src_env):
    import shutil

    import git

    shipped = Path(__file__).resolve().parents[2] / "rules"
    shutil.copy(shipped / "layers.yaml", project / "rules" / "layers.yaml")
    shutil.copytree(shipped / "gates", project / "rules" / "gates")
    repo = git.Repo(project)
    repo.index.add(["rules/layers.yaml", "rules/gates"])
    repo.index.commit("our own rules")
    (project / "rules" / "gates" / "cmake-filter.yaml").unlink()  # the PR deletes a rule file
    done = gfxgate(
        ["check", "--base-ref", "main", "-t", "gfx900", "--rules", "rules", "--format", "json"], src_env, project
    )
    assert done.returncode == 0, done.stderr
    change = {c["layer"]: c for c in json.loads(done.stdout)["changes"]}["cmake-filter"]
    assert change["kind"] == "drift" and change["old"]["status"] == "allowed" and change["new"]["status"] == "unknown"
