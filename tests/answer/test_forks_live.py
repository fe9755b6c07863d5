"""The routes beyond the release read live (docs/forks.md): the fork's files given with --source, checked as the
official steps are; and without them, the shipped snapshot's facts of the pin, said in the cell."""

from __future__ import annotations

import json
import shutil

import pytest

from gfxgate.cli import main
from tests.gate.rule_fixtures import FIXTURES, read_case
from tests.upstream_fixtures import source_env, upstream  # noqa: F401 - fixtures: upstream-shaped git repositories


def _scan(capsys, *args: str) -> dict:
    with pytest.raises(SystemExit) as info:
        main(["scan", "--format", "json", *args])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    return json.loads(out)


def _fork_tree(tmp_path):
    """The fork's files as excerpted in tests/rules (its preset at v0.30.8, its build wiki), as one folder."""
    tree = tmp_path / "fork"
    for case in ("ollama-for-amd-windows-presets/v0.30.8", "ollama-for-amd-rocblas-replace/v0.30.8"):
        part = tmp_path / case.replace("/", "-")
        read_case(FIXTURES / case, part)
        shutil.copytree(part, tree, dirs_exist_ok=True)
    return tree


def test_a_live_scan_reads_the_forks_files_and_checks_its_step(source_env, capsys, tmp_path):
    out = _scan(capsys, "-t", "gfx1031", "--os", "windows", "--source", f"ollama-for-amd={_fork_tree(tmp_path)}")
    (fork,) = out["routes"][0]["beyond"]
    assert fork["state"] == "applies"
    (step,) = fork["option"]["steps"]
    # the workaround's checks run on the given tree: the wiki line is there, the preset excerpt has no runner folder
    assert step["check"]["state"] == "stale" and "OLLAMA_RUNNER_DIR" in step["check"]["summary"]
    assert not out["routes"][0]["reason"] or "ollama-for-amd" not in out["routes"][0]["reason"]  # beyond: not the best


def test_a_live_scan_without_the_fork_answers_from_the_snapshot_of_its_pin(source_env, capsys):
    out = _scan(capsys, "-t", "gfx1031", "--os", "windows", "--live")
    (fork,) = out["routes"][0]["beyond"]
    assert fork["state"] == "applies" and fork["version"] == "v0.30.8"
    cells = {c["layer"]: c for layer in out["layers"] for c in layer["cells"]}
    assert (
        "ollama-for-amd cannot be read here: evidence from the embedded snapshot of ollama-for-amd@v0.30.8"
        in cells["fork-build"]["summary"]
    )
