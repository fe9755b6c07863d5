"""Issue 36, items 1, 6 and 8 of its Why, through the installed script (each failed on main before the answer layer).

1. `workarounds -t gfx900` listed HSA_OVERRIDE_GFX_VERSION=9.0.6 as live at v0.32.15 and at v0.17.5, although those
   releases ship no gfx906 (the release deletes its rocBLAS files and builds none): workarounds now reads the same
   override check as scan's override route and doctor, and says "not shipped".
6. doctor fell back to the timeline when clr could not be read (scan uses its embedded copy), and its note asked for
   --source ollama though ollama was read.
8. `workarounds --offline` without a clone exited 5, while scan and timeline answer from the embedded evidence.

The ollama "clones" here are real git repositories tagged as the release (tests.gitrepos), holding the lines the
override entry's checks read, so the entry's own check is live and only the override check can say "not shipped".
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest


def run(exe: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GFXGATE_CACHE_DIR": str(cache)}  # no cached clone of anything
    return exe(*args, timeout=180, env=env)


def _ollama(tmp_path: Path, tag: str) -> Path:
    """A git repository tagged ``tag`` whose envconfig reads HSA_OVERRIDE_GFX_VERSION (the override entry's check)."""
    from tests.gitrepos import commit_tree, new_repo

    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        {
            "envconfig/config.go": (
                "package envconfig\n\n"
                'var HsaOverrideGfxVersion = String("HSA_OVERRIDE_GFX_VERSION")\n'
                'var Vulkan = Bool("OLLAMA_VULKAN")\n'
            ),
            "docs/gpu.md": (
                "Set HSA_OVERRIDE_GFX_VERSION to run an unsupported GPU as a close one, e.g.\n"
                'HSA_OVERRIDE_GFX_VERSION="10.3.0" for an RX 6700 XT (gfx1031).\n'
            ),
        },
        "release",
        tag=tag,
    )
    return tmp_path / "ollama"


def _entries(stdout: str) -> dict[str, dict]:
    return {w["id"]: w for w in json.loads(stdout)["workarounds"]}


def _route(exe: str, target: str, cache: Path, *ref: str) -> dict:
    result = run(exe, "scan", "-t", target, "--format", "json", *ref, cache=cache)
    assert result.returncode == 0, result.stderr
    return next(r for r in json.loads(result.stdout)["routes"] if r["target"] == target)


def _rocm_override(route: dict) -> str | None:
    """The override workaround of the route's ROCm backend, None when ROCm's route is not the override."""
    rocm = next(b for b in route["backends"] if b["backend"] == "rocm")
    option = rocm.get("option")
    if not option or option["route"] != "rocm-override":
        return None
    return option["steps"][0]["workaround"]


@pytest.mark.parametrize("tag,ref", [("v0.32.15", ()), ("v0.17.5", ("--ref", "ollama=v0.17.5"))], ids=["pin", "study"])
def test_1_workarounds_says_the_override_is_not_shipped_where_scan_refuses_it(gfxgate_cli, tmp_path, tag, ref):
    clone = _ollama(tmp_path, tag)
    result = run(
        gfxgate_cli,
        "workarounds",
        "-t",
        "gfx900",
        "--format",
        "json",
        "--offline",
        *ref,
        "--source",
        f"ollama={clone}",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    entry = _entries(result.stdout)["hsa-override-9.0.6"]
    assert entry["state"] == "not shipped", entry["state"]
    assert f"ollama {tag} does not ship gfx906 either" in entry["summary"], entry["summary"]
    assert "the variable: live" in entry["summary"]  # its own check still finds the variable read
    # scan at the same version: no ROCm route through 9.0.6 (the same check, over the same release)
    assert _rocm_override(_route(gfxgate_cli, "gfx900", tmp_path / "cache", *ref)) != "hsa-override-9.0.6"


def test_1_without_targets_the_override_is_checked_over_the_stored_release(gfxgate_cli, tmp_path):
    """No -t: the posed targets' statuses come from the embedded timeline at the release read."""
    clone = _ollama(tmp_path, "v0.32.15")
    result = run(
        gfxgate_cli,
        "workarounds",
        "--format",
        "json",
        "--offline",
        "--source",
        f"ollama={clone}",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    entries = _entries(result.stdout)
    assert entries["hsa-override-9.0.6"]["state"] == "not shipped"
    assert entries["hsa-override-10.3.0"]["state"] == "live"  # gfx1030 is built and shipped at v0.32.15


def test_1_an_override_the_release_ships_stays_live(gfxgate_cli, tmp_path):
    """gfx1031's 10.3.0 poses gfx1030, which v0.32.15 ships: live, and scan's ROCm route is that override."""
    clone = _ollama(tmp_path, "v0.32.15")
    result = run(
        gfxgate_cli,
        "workarounds",
        "-t",
        "gfx1031",
        "--format",
        "json",
        "--offline",
        "--source",
        f"ollama={clone}",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    entries = _entries(result.stdout)
    overrides = {i: e for i, e in entries.items() if e.get("override_target")}
    chosen = _rocm_override(_route(gfxgate_cli, "gfx1031", tmp_path / "cache"))
    assert chosen in overrides and overrides[chosen]["state"] == "live", (
        chosen,
        {i: e["state"] for i, e in overrides.items()},
    )


@pytest.mark.parametrize("ref", [(), ("--ref", "ollama=v0.17.5")], ids=["pin", "study"])
def test_8_workarounds_offline_without_a_clone_answers_from_the_embedded_evidence(gfxgate_cli, tmp_path, ref):
    result = run(
        gfxgate_cli, "workarounds", "-t", "gfx900", "--format", "json", "--offline", *ref, cache=tmp_path / "cache"
    )
    assert result.returncode == 0, (result.returncode, result.stderr)
    entries = _entries(result.stdout)
    assert entries["hsa-override-9.0.6"]["state"] == "not shipped"  # the override check needs no clone
    others = [e for i, e in entries.items() if i != "hsa-override-9.0.6"]
    assert others and all(e["state"] == "unknown" and e["summary"].startswith("not checked") for e in others)
    # each entry that is a step of scan's route shows that step's setting (the same answer as scan, offline)
    route = _route(gfxgate_cli, "gfx900", tmp_path / "cache", *ref)
    steps = {s["workaround"]: s["setting"] for b in route["backends"] if b.get("option") for s in b["option"]["steps"]}
    assert steps
    for workaround, setting in steps.items():
        assert entries[workaround]["setting"] == setting, workaround


def test_8_at_a_release_of_the_embedded_timeline_the_stored_answer_answers(gfxgate_cli, tmp_path):
    """v0.20.0: no snapshot holds it, the timeline does: exit 0, every entry not checked, the override checked over the
    stored release (9.0.6 poses gfx906, which v0.20.0 does not ship), the build step's setting the stored route's."""
    result = run(
        gfxgate_cli,
        "workarounds",
        "-t",
        "gfx900",
        "--format",
        "json",
        "--offline",
        "--ref",
        "ollama=v0.20.0",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, (result.returncode, result.stderr)
    entries = _entries(result.stdout)
    assert entries["hsa-override-9.0.6"]["state"] == "not shipped"
    assert "ollama v0.20.0 does not ship gfx906 either" in entries["hsa-override-9.0.6"]["summary"]
    assert "embedded timeline's at v0.20.0" in entries["copy-rocblas-tensile"]["summary"]
    assert entries["copy-rocblas-tensile"]["setting"].startswith('cp "$ROCBLAS"/library/*gfx900* ')


def test_6_doctor_reads_the_sources_when_only_clr_is_missing(gfxgate_cli, tmp_path):
    """A machine at v0.12.3 with an ollama clone and no clr: the matrix is the sources' (clr from its embedded copy,
    as scan does), not the timeline's; without the ollama clone, the note asks for ollama."""
    from tests.doctor.machines import machine

    root = machine(tmp_path / "m", "vega56", version="0.12.3")
    clone = _ollama(tmp_path, "v0.12.3")
    result = run(
        gfxgate_cli,
        "doctor",
        "--root",
        str(root),
        "--format",
        "json",
        "--source",
        f"ollama={clone}",
        cache=tmp_path / "cache",
    )
    assert result.returncode == 0, result.stderr
    target = json.loads(result.stdout)["targets"][0]
    assert target["matrix_from"] == "sources at v0.12.3", (target["matrix_from"], target["notes"])
    assert not any("--source ollama" in n for n in target["notes"]), target["notes"]
    result = run(gfxgate_cli, "doctor", "--root", str(root), "--format", "json", cache=tmp_path / "cache2")
    target = json.loads(result.stdout)["targets"][0]
    assert target["matrix_from"] == "embedded timeline"
    assert any("give --source ollama=CLONE" in n and "ollama: no cached clone" in n for n in target["notes"]), target[
        "notes"
    ]
