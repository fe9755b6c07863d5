"""Issue 13, item 6: the same situation gets the same answer (and exit code) whichever way it is reached.

Run through the installed console script; the README's exit-code table is the contract.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest


@pytest.fixture()
def env(tmp_path):
    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(tmp_path / "empty-cache")
    return out


def gfx(exe, env, cwd, *args):
    return exe(*args, env=env, cwd=cwd, timeout=120)


def test_installed_path_that_does_not_exist_is_6_like_artifacts(gfxgate_cli, env, tmp_path):
    scan = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--installed", "/nonexistent")
    artifacts = gfx(gfxgate_cli, env, tmp_path, "artifacts", "/nonexistent")
    assert scan.returncode == artifacts.returncode == 6, (scan.stderr, artifacts.stderr)
    assert "no such file or folder" in scan.stderr


def test_live_offline_with_an_empty_cache_is_5_like_ref(gfxgate_cli, env, tmp_path):
    live = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--live", "--offline")
    ref = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--offline", "--ref", "ollama=v0.12.3")
    assert live.returncode == ref.returncode == 5, (live.stderr, ref.stderr)
    assert "this run is offline (it clones nothing)" in live.stderr and "Traceback" not in live.stderr


def test_rules_folder_alone_stays_on_the_snapshot(gfxgate_cli, env, tmp_path):
    """--rules without --live used to switch to live mode silently and reach for the network."""
    from gfxgate.resources import rules_dir

    rules = tmp_path / "rules"
    shutil.copytree(rules_dir(), rules, ignore=shutil.ignore_patterns("snapshots", "__pycache__"))
    # the cache is empty: a live scan would have to clone (and here fail to), so equal cells prove no live read
    own = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--format", "json", "--rules", str(rules))
    shipped = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--format", "json")
    assert own.returncode == 0, own.stderr
    own_json, shipped_json = json.loads(own.stdout), json.loads(shipped.stdout)
    assert any("evaluated against the embedded snapshot" in n for n in own_json["notes"])
    cells = lambda d: [(c["layer"], c["status"]) for layer in d["layers"] for c in layer["cells"]]  # noqa: E731
    assert cells(own_json) == cells(shipped_json)


def test_a_local_file_as_source_is_a_usage_error_not_a_network_failure(gfxgate_cli, env, tmp_path):
    (tmp_path / "notes.txt").write_text("not a repository\n")
    proc = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--source", f"ollama={tmp_path / 'notes.txt'}")
    assert proc.returncode == 2, proc.stderr
    assert "is a file" in proc.stderr


def test_a_ref_that_looks_like_an_option_is_refused(gfxgate_cli, env, tmp_path):
    proc = gfx(gfxgate_cli, env, tmp_path, "scan", "-t", "gfx900", "--ref", "ollama=--output=x")
    assert proc.returncode == 2, proc.stderr
    assert "is not a tag or branch name" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_pins_bump_never_rewrites_the_installed_package(tmp_path, monkeypatch, capsys):
    """Outside a checkout the default pins are the installed package's; bump refuses them (usage error, exit 2).

    Through gfxgate.cli.main (its exit-code mapping), in process because the installed package is simulated: a
    rules folder outside any git repository stands for site-packages/gfxgate/_rules.
    """
    from gfxgate.cli import main
    from gfxgate.app import pins as pins_app

    installed = tmp_path / "site-packages" / "gfxgate" / "_rules"
    installed.mkdir(parents=True)
    (installed / "pins.toml").write_text("# installed copy\n")
    elsewhere = tmp_path / "elsewhere"  # not a git work tree: the default pins are the installed copy
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    from tests.inprocess import clear_caches

    # every module that names rules_dir (imported at its top since issue 40's import move) sees the installed copy;
    # the command's modules are imported first, so that none binds the stand-in for good while it is in place
    import gfxgate.prcheck.pins  # noqa: F401
    import gfxgate.sources.resolve  # noqa: F401

    for where in ("gfxgate.prcheck.pins", "gfxgate.sources.resolve", "gfxgate.resources"):
        monkeypatch.setattr(f"{where}.rules_dir", lambda: installed)
    clear_caches()
    try:
        with pytest.raises(SystemExit) as done:
            main(["pins", "bump", "ollama", "v0.17.5", "--offline"])
    finally:
        clear_caches()  # nothing read from the stand-in folder outlives the test
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("gfxgate: error: pins bump edits rules/pins.toml of a gfxgate checkout;")
    assert "installed package's copy" in err
    assert (installed / "pins.toml").read_text() == "# installed copy\n"
    pins_app.refuse_installed_copy(Path(__file__).resolve().parents[1] / "rules" / "pins.toml")  # a checkout: fine
