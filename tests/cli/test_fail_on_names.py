"""`--fail-on` has one meaning per option name (issue 40): `--fail-on-layer` (diagnose), `--fail-on-backend` (doctor,
fleet doctor / node), `--fail-on-target` (diff, check). The old `--fail-on` still works for each, hidden from --help,
with a deprecation note on stderr. Run in process (``gfxgate_cli``: the exit code, stdout and stderr that
``gfxgate.cli.main`` gives the console script); that the installed script exits with what ``main`` answers, row by
row of the README's exit-code table, is tests/test_exit_codes.py's claim."""

from __future__ import annotations

import os

import pytest

from tests.diagnose import logs
from tests.doctor.machines import machine

VEGA_DROPIN = '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=9.0.6"\n'


def _env(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GFXGATE_", "XDG_")) and k not in ("NO_COLOR", "TERM", "COLUMNS", "FORCE_COLOR")
    }
    env.update({"GFXGATE_CACHE_DIR": str(tmp_path / "cache"), "GFXGATE_NO_PROGRESS": "1"})
    return env


def _run(cli, tmp_path, *args):
    return cli(*args, env=_env(tmp_path))


def _deprecated(stderr: str, new: str) -> bool:
    return f"--fail-on is deprecated here: use {new}" in stderr


def test_diagnose_fail_on_layer_and_the_old_spelling(gfxgate_cli, tmp_path):
    log = tmp_path / "s.log"
    log.write_text("\n".join(logs.ollama_0_12_3()) + "\n", encoding="utf-8")
    new = _run(gfxgate_cli, tmp_path, "diagnose", "--no-upstream", "--fail-on-layer", "discovery", str(log))
    assert new.returncode == 1 and not _deprecated(new.stderr, "--fail-on-layer")
    assert (
        _run(
            gfxgate_cli, tmp_path, "diagnose", "--no-upstream", "--fail-on-layer", "installed-gpu-code", str(log)
        ).returncode
        == 0
    )
    old = _run(gfxgate_cli, tmp_path, "diagnose", "--no-upstream", "--fail-on", "discovery", str(log))
    assert old.returncode == 1 and _deprecated(old.stderr, "--fail-on-layer")
    assert old.stdout == new.stdout
    both = _run(
        gfxgate_cli,
        tmp_path,
        "diagnose",
        "--no-upstream",
        "--fail-on-layer",
        "installed-gpu-code",
        "--fail-on",
        "discovery",
        str(log),
    )  # both spellings add up, in either order
    assert both.returncode == 1
    both = _run(
        gfxgate_cli,
        tmp_path,
        "diagnose",
        "--no-upstream",
        "--fail-on",
        "discovery",
        "--fail-on-layer",
        "installed-gpu-code",
        str(log),
    )
    assert both.returncode == 1
    bad = _run(gfxgate_cli, tmp_path, "diagnose", "--no-upstream", "--fail-on-layer", "discovry", str(log))
    assert bad.returncode == 2 and "unknown --fail-on-layer layer 'discovry'" in bad.stderr


def test_doctor_fail_on_backend_and_the_old_spelling(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "vega56", "vega56", version="0.17.5", dropin=VEGA_DROPIN)
    new = _run(gfxgate_cli, tmp_path, "doctor", "--root", str(root), "--fail-on-backend", "vulkan")
    assert new.returncode == 1 and not _deprecated(new.stderr, "--fail-on-backend")
    old = _run(gfxgate_cli, tmp_path, "doctor", "--root", str(root), "--fail-on", "vulkan")
    assert old.returncode == 1 and _deprecated(old.stderr, "--fail-on-backend")
    bad = _run(gfxgate_cli, tmp_path, "doctor", "--root", str(root), "--fail-on-backend", "nope")
    assert bad.returncode == 2 and "unknown --fail-on-backend backend nope" in bad.stderr


def test_diff_fail_on_target_and_the_old_spelling(gfxgate_cli, tmp_path):
    old_json, new_json = tmp_path / "old.json", tmp_path / "new.json"
    # the study's pin set and the newest release, both from the embedded snapshots (offline)
    assert (
        _run(
            gfxgate_cli,
            tmp_path,
            "scan",
            "-t",
            "gfx900,gfx1030",
            "--format",
            "json",
            "-o",
            str(old_json),
            "--ref",
            "ollama=v0.17.5",
        ).returncode
        == 0
    )
    assert (
        _run(gfxgate_cli, tmp_path, "scan", "-t", "gfx900,gfx1030", "--format", "json", "-o", str(new_json)).returncode
        == 0
    )
    regressed = _run(gfxgate_cli, tmp_path, "diff", str(old_json), str(new_json), "--fail-on-target", "gfx900")
    assert regressed.returncode == 1 and "gfx900 regressed" in regressed.stderr
    assert not _deprecated(regressed.stderr, "--fail-on-target")
    assert "named in `--fail-on-target`" in regressed.stdout
    same = _run(gfxgate_cli, tmp_path, "diff", str(new_json), str(new_json), "--fail-on-target", "gfx900")
    assert same.returncode == 0
    old = _run(gfxgate_cli, tmp_path, "diff", str(old_json), str(new_json), "--fail-on", "gfx900")
    assert old.returncode == 1 and _deprecated(old.stderr, "--fail-on-target")
    missing = _run(gfxgate_cli, tmp_path, "diff", str(old_json), str(new_json), "--fail-on-target", "gfx803")
    assert missing.returncode == 2 and "--fail-on-target names gfx803" in missing.stderr


@pytest.mark.parametrize(
    ("command", "new"),
    [
        (("diagnose",), "--fail-on-layer"),
        (("doctor",), "--fail-on-backend"),
        (("diff",), "--fail-on-target"),
        (("check",), "--fail-on-target"),
        (("fleet", "doctor"), "--fail-on-backend"),
        (("fleet", "node"), "--fail-on-backend"),
    ],
)
def test_help_names_the_new_option_only(gfxgate_cli, tmp_path, command, new):
    shown = _run(gfxgate_cli, tmp_path, *command, "--help")
    assert shown.returncode == 0 and new in shown.stdout
    assert "--fail-on " not in shown.stdout.replace(new, "")
