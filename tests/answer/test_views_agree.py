"""Issue 36's property: every view gives the same answer for the same target at the same release.

Over the embedded timeline (rules/snapshots/timeline.json.zst), for every (target, release) of it:

* the stored Route is whole: each backend's route stores its step ids, the best route's are the cell's steps;
* the refusals diagnose cites (diagnose/remedy.py: a step "left out" because no route that takes it can exist at that
  release) never name a step the stored route takes;
* the override check (gfxgate.answer.override, over the stored release) says "ships" wherever the stored ROCm route
  is that override, and never where it is refused — the check `workarounds` and diagnose read.

Through the installed script, at the two releases embedded snapshots hold (the pins' and the study's pin set), for
every target of the timeline: the route `scan` computes is the stored one, backend by backend, step by step; the
live/not-live state `workarounds` gives each override entry is the stored release's override check; and `doctor`
on a captured machine of each card the doctor fixtures build (gfx900, gfx1031, gfx1103) gives the stored route's
steps per backend — at every release where that target's stored route changes (each cell's first and last
release) and at the two embedded ones, through one process per card. Every (target, release) cell, doctor's for
every AMD target included, is tests/answer/test_every_cell.py's (in process, one captured tree per release).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from gfxgate.gate.route import default_routes, override_check
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.timeline import snapshot as timeline_snapshot


@pytest.fixture(scope="module")
def timeline():
    return timeline_snapshot.load()


@pytest.fixture(scope="module")
def cells():
    return timeline_snapshot.load_cells()


def _rocm(cell):
    return next((b for b in cell.backends if b.backend == "rocm"), None)


def test_the_stored_route_holds_each_backends_steps(timeline):
    rules = default_routes()
    known = {w.id for w in default_workarounds()}
    backend_of = {r.id: r.backend for r in rules.routes}
    checked = 0
    for row in timeline.rows:
        for cell in row.cells:
            for b in cell.backends:
                assert (b.state == "route") or not b.steps, (row.target, cell.first, b.backend)
                assert set(b.steps) <= known, (row.target, cell.first, b.steps)
            if cell.route in backend_of and backend_of[cell.route] != "cpu":
                best = next(b for b in cell.backends if b.backend == backend_of[cell.route])
                assert best.steps == cell.steps, (row.target, cell.first, best.steps, cell.steps)
                checked += 1
    assert checked > 150


def test_diagnose_never_rules_out_a_step_the_stored_route_takes(timeline, cells):
    from gfxgate.diagnose.remedy import _ruled_out

    checked = 0
    for row in timeline.rows:
        processor = row.target.split(":")[0]
        for cell in row.cells:
            for tag in dict.fromkeys((cell.first, cell.last)):
                for b in cell.backends:
                    for step in b.steps:
                        assert _ruled_out(cells, step, processor, tag) is None, (row.target, tag, b.backend, step)
                        checked += 1
    assert checked > 300


def test_the_override_check_agrees_with_the_stored_route_at_every_release(timeline, cells):
    """Every (target, release) of the timeline (the full product, 38 targets x 245 releases): for each override
    that applies to the target and exists there, the check over the stored release ships it wherever the stored ROCm
    route is that override, and a checked refusal is never the stored ROCm route."""
    overrides = [w for w in default_workarounds() if w.override]
    ships = refused = 0
    for row in timeline.rows:
        processor = row.target.split(":")[0]
        mine = [w for w in overrides if processor in w.applies_to]
        if not mine:
            continue
        for tag in timeline.tags:
            rocm = _rocm(cells.cell_at(row.target, tag))
            for w in mine:
                if not w.exists_at({"ollama": tag}.get):
                    continue
                check = override_check(cells.at(tag), w.override)
                taken = rocm is not None and rocm.state == "route" and rocm.steps[:1] == (w.id,)
                if taken:
                    assert check.ships, (row.target, tag, w.id, check.clause(f"ollama {tag}"))
                    ships += 1
                elif check.checked and not check.ships:
                    refused += 1
    assert ships > 100 and refused > 100, (ships, refused)


# -- through the installed script, at the releases the embedded snapshots hold -----------------------------------
def _run(exe: str, *args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GFXGATE_CACHE_DIR": str(cache)}
    return exe(*args, timeout=300, env=env)


EMBEDDED = [("pin", ()), ("study", ("--ref", "ollama=v0.17.5"))]


def _tag(ref: tuple[str, ...]) -> str:
    from gfxgate.sources.resolve import load_pins

    return ref[1].split("=", 1)[1] if ref else load_pins().sources["ollama"].ref


@pytest.mark.parametrize("name,ref", EMBEDDED, ids=[n for n, _ in EMBEDDED])
def test_scan_computes_the_stored_route_backend_by_backend(gfxgate_cli, timeline, cells, tmp_path, name, ref):
    tag = _tag(ref)
    result = _run(
        gfxgate_cli, "scan", "-t", ",".join(timeline.targets), "--format", "json", "--offline", *ref, cache=tmp_path
    )
    assert result.returncode == 0, result.stderr
    for route in json.loads(result.stdout)["routes"]:
        cell = cells.cell_at(route["target"], tag)
        assert (route["best"]["route"] if route["best"] else "undecided") == cell.route, route["target"]
        stored = {b.backend: (b.state, b.steps) for b in cell.backends}
        for b in route["backends"]:
            option = b.get("option")
            state = "route" if option else ("undecided" if b["undecided"] else "none")
            steps = tuple(s["workaround"] for s in option["steps"]) if option else ()
            assert (state, steps) == stored[b["backend"]], (route["target"], tag, b["backend"])


@pytest.mark.parametrize("name,ref", EMBEDDED, ids=[n for n, _ in EMBEDDED])
def test_workarounds_gives_each_override_the_stored_releases_status(gfxgate_cli, timeline, cells, tmp_path, name, ref):
    tag = _tag(ref)
    targets = [
        t for t in timeline.targets if any(t.split(":")[0] in w.applies_to for w in default_workarounds() if w.override)
    ]
    result = _run(
        gfxgate_cli, "workarounds", "-t", ",".join(targets), "--format", "json", "--offline", *ref, cache=tmp_path
    )
    assert result.returncode == 0, result.stderr
    entries = {w["id"]: w for w in json.loads(result.stdout)["workarounds"]}
    overrides = [w for w in default_workarounds() if w.override and w.id in entries]
    assert len(overrides) >= 3
    for w in overrides:
        check = override_check(cells.at(tag), w.override)
        assert (entries[w.id]["state"] == "not shipped") == (check.checked and not check.ships), (w.id, tag)
        for target in targets:  # a target whose stored ROCm route is this override: never "not shipped"
            rocm = _rocm(cells.cell_at(target, tag))
            if rocm is not None and rocm.state == "route" and rocm.steps[:1] == (w.id,):
                assert entries[w.id]["state"] != "not shipped", (w.id, target, tag)


CARDS = {"vega56": "gfx900", "rx6700xt": "gfx1031", "780m": "gfx1103"}  # tests/doctor/machines.py's cards


@pytest.mark.parametrize("card", sorted(CARDS))
def test_doctor_gives_the_stored_steps_at_every_change_of_the_route(card, timeline, cells, tmp_path, monkeypatch):
    """In-process doctor (the same use case the script runs) on a captured machine of the card, its `ollama
    --version` set to each release: offline and without a clone, as a first run on a machine is."""
    from gfxgate.app.doctor import DoctorRequest, examine
    from tests.doctor.machines import machine

    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "cache"))
    target = CARDS[card]
    root = machine(tmp_path / card, card, version="0.0.0")
    manifest = root / ".gfxgate-doctor/stat.json"
    data = json.loads(manifest.read_text())
    tags = {c.first for c in timeline.row(target).cells} | {c.last for c in timeline.row(target).cells}
    tags |= {_tag(ref) for _, ref in EMBEDDED}
    checked = 0
    for tag in sorted(tags, key=timeline.tags.index):
        data["probes"]["ollama --version"] = f"ollama version is {tag.removeprefix('v')}\n"
        manifest.write_text(json.dumps(data))
        report = examine(DoctorRequest(root=root)).report.targets[0]
        assert report.target == target and report.version == tag.removeprefix("v")
        given = {
            b.backend: tuple(s.workaround for s in b.steps if s.workaround != "access" and s.origin == "route")
            for b in report.backends
            if b.state != "no route" and b.state != "undecided"
        }
        if report.matrix_from == "embedded timeline":
            stored = {b.backend: b.steps for b in cells.cell_at(target, tag).backends if b.state == "route"}
        else:  # an embedded snapshot's release: the matrix has the machine's installed files too, as scan --installed
            stored = _scan_steps(target, tag, root)
        assert given == stored, (target, tag, report.matrix_from)
        checked += 1
    assert checked == len(tags)


def _scan_steps(target: str, tag: str, root: Path) -> dict[str, tuple[str, ...]]:
    """scan's route at ``tag`` with the machine's installed files (``--installed``), backend by backend."""
    from gfxgate.app.scan import ScanRequest, scan
    from gfxgate.sources.resolve import load_pins

    refs = {} if tag == load_pins().sources["ollama"].ref else {"ollama": tag}
    route = scan(
        ScanRequest(targets=(target,), refs=refs, offline=True, installed=(str(root / "usr/local/lib/ollama"),))
    ).routes[0]
    return {b.backend: tuple(s.workaround for s in b.option.steps) for b in route.backends if b.option is not None}


@pytest.mark.parametrize("target", ["gfx900", "gfx1031"])
def test_workarounds_offline_gives_the_stored_override_status_where_the_route_changes(
    gfxgate_cli, target, timeline, cells, tmp_path
):
    """Through the installed script, offline without a clone, at the first release of each of the target's cells (a
    release no snapshot holds is answered from the stored timeline): each override entry is "not shipped" exactly
    where the check over the stored release refuses it, and never where the stored ROCm route is that override."""
    from gfxgate.sources.resolve import load_pins

    embedded = {load_pins().sources["ollama"].ref, "v0.17.5"}
    overrides = [w for w in default_workarounds() if w.override and target in w.applies_to]
    checked = 0
    for cell in timeline.row(target).cells:
        tag = cell.first
        if tag in embedded:
            continue
        result = _run(
            gfxgate_cli,
            "workarounds",
            "-t",
            target,
            "--format",
            "json",
            "--offline",
            "--ref",
            f"ollama={tag}",
            cache=tmp_path,
        )
        assert result.returncode == 0, (tag, result.stderr)
        entries = {w["id"]: w for w in json.loads(result.stdout)["workarounds"]}
        rocm = _rocm(cell)
        for w in overrides:
            if w.id not in entries:  # not at this release (exists_in)
                continue
            check = override_check(cells.at(tag), w.override)
            assert (entries[w.id]["state"] == "not shipped") == (check.checked and not check.ships), (target, tag, w.id)
            if rocm is not None and rocm.state == "route" and rocm.steps[:1] == (w.id,):
                assert entries[w.id]["state"] != "not shipped", (target, tag, w.id)
            checked += 1
    assert (
        checked >= 4
    )  # gfx1031's cells since v0.12.6-v0.12.11 joined v0.12.4's (issue 36: no Vulkan in those archives)
