"""Issue 36's property over EVERY (target, release) cell of the embedded timeline: the views agree.

For each release of rules/snapshots/timeline.json.zst and each target of it (62 targets x 245 releases), in process
(the use cases the installed script runs, without a process per cell):

* the Route read back from the stored timeline (``Cells.route_at``: what doctor, workarounds and diagnose read at a
  release no embedded matrix holds) is the stored one: best route, label, each backend's state and step ids;
* at the releases the embedded snapshots hold (the pins', the study's v0.17.5), the Route ``scan`` computes (offline,
  from the embedded evidence) is the stored one, backend by backend, step by step, for every target;
* the refusals diagnose cites for a log of that target at that release (``diagnose/remedy.py: keep_existing``, what
  a finding's workarounds pass through) leave out no step the stored Route takes, and leave out every step whose
  routes the stored Route refuses (their backend has no route);
* ``workarounds`` at that release (one call per release over all the AMD targets): an override entry is "not
  shipped" exactly where the override check over the stored release refuses it and never where a stored ROCm
  route is that override; each entry that is a stored Route's step carries that step's setting for the target;
* ``doctor`` on a captured machine of each AMD target at that version gives the stored Route's steps per backend
  (one captured tree per release with one KFD node per AMD target, built from tests/doctor/machines.py's official
  install layout; at the embedded releases the matrix holds the machine's installed files, so the comparison is
  with ``scan --installed`` there, as tests/answer/test_views_agree.py does). NVIDIA targets: doctor reports no
  route for them (its NVIDIA rows are notes, issue 38), so their cells are checked by the other views only.

Measured on the shared 2-core machine: the whole module 70 s of CPU at 5a37e0d, 16-18 s since the views read each
snapshot content, pin file and Route once per process (issue 40); of it, doctor the most (245 runs of 38 GPUs: 9,310
cells), then diagnose, the read-back (15,190 cells), workarounds (245 calls) and scan.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from gfxgate.gate.route import default_routes, override_check
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.timeline import snapshot as timeline_snapshot


@pytest.fixture(scope="module")
def cells():
    return timeline_snapshot.load_cells()


@pytest.fixture(autouse=True)
def _offline_first_run(monkeypatch, tmp_path_factory):
    """As a first run on a machine: no cached clone, no GFXGATE_SOURCE_* (the embedded evidence answers)."""
    import os

    for name in [n for n in os.environ if n.startswith("GFXGATE_SOURCE")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "every-cell-cache"))


def _embedded() -> list[str]:
    from gfxgate.sources.resolve import load_pins

    return [load_pins().sources["ollama"].ref, "v0.17.5"]


def _stored(cell) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {b.backend: (b.state, tuple(b.steps)) for b in cell.backends}


def _of(route) -> dict[str, tuple[str, tuple[str, ...]]]:
    return {
        b.backend: (b.state, tuple(s.workaround for s in b.option.steps) if b.option else ()) for b in route.backends
    }


def test_the_route_read_back_is_the_stored_one_at_every_cell(cells):
    checked = 0
    for target in cells.targets:
        for tag in cells.tags:
            cell, route = cells.cell_at(target, tag), cells.route_at(target, tag)
            assert (route.best.route if route.best else "undecided") == cell.route, (target, tag)
            assert (route.label, route.certain) == (cell.label, cell.certain), (target, tag)
            assert _of(route) == _stored(cell), (target, tag)
            for b in route.backends:  # a backend's route is the rule its steps name, with that rule's backend
                if b.option is not None:
                    assert next(r for r in default_routes().routes if r.id == b.option.route).backend == b.backend
            checked += 1
    assert checked == len(cells.targets) * len(cells.tags) > 9000


@pytest.mark.parametrize("tag", _embedded())
def test_scan_computes_the_stored_route_for_every_target(cells, tag):
    from gfxgate.app.scan import ScanRequest, scan
    from gfxgate.sources.resolve import load_pins

    refs = {} if tag == load_pins().sources["ollama"].ref else {"ollama": tag}
    result = scan(ScanRequest(targets=(",".join(cells.targets),), refs=refs, offline=True))
    assert {r.target for r in result.routes} == set(cells.targets)
    for route in result.routes:
        cell = cells.cell_at(route.target, tag)
        assert (route.best.route if route.best else "undecided") == cell.route, (route.target, tag)
        assert _of(route) == _stored(cell) == _of(cells.route_at(route.target, tag)), (route.target, tag)


def test_diagnose_cites_the_stored_routes_refusals_at_every_cell(cells):
    from gfxgate.diagnose.remedy import keep_existing

    rules, workarounds = default_routes(), default_workarounds()
    steps = tuple(dict.fromkeys(s.workaround for r in rules.routes for s in r.steps))
    taking = {
        w: [r for r in rules.routes if any(s.workaround == w for s in r.steps)] for w in steps
    }  # once, not per cell
    left_out = kept = 0
    for target in cells.targets:
        for tag in cells.tags:
            route = cells.route_at(target, tag)
            taken = {s.workaround for b in route.backends if b.option for s in b.option.steps}
            backend = {b.backend: b.state for b in route.backends}
            ids, notes = keep_existing(steps, workarounds, target, tag, "ollama")
            out = {note.split(" left out: ")[0] for note in notes if " left out: " in note}
            assert not out & taken, (target, tag, out & taken)
            for w in (w for w in workarounds if w.id in steps and w.exists_at({"ollama": tag}.get)):
                mine = [r for r in taking[w.id] if r.backend in backend]
                if mine and all(backend[r.backend] == "none" for r in mine):
                    assert w.id in out and w.id not in ids, (target, tag, w.id, notes)
            left_out += len(out)
            kept += len(taken)
    assert left_out > 1000 and kept > 1000, (left_out, kept)


def test_workarounds_gives_each_entry_the_stored_routes_status_at_every_release(cells):
    from gfxgate.app.workarounds import WorkaroundsRequest, workarounds

    amd = [t for t in cells.targets if t.startswith("gfx")]
    overrides = [w for w in default_workarounds() if w.override]
    checked = 0
    for tag in cells.tags:
        answer = workarounds(WorkaroundsRequest(targets=(",".join(amd),), refs={"ollama": tag}, offline=True))
        entries = {r.workaround.id: r for r in answer.reports}
        view = cells.at(tag)
        for w in (w for w in overrides if w.id in entries):
            check = override_check(view, w.override)
            assert (entries[w.id].state == "not shipped") == (check.checked and not check.ships), (w.id, tag)
        for target in amd:
            for b in cells.route_at(target, tag).backends:
                for i, step in enumerate(b.option.steps if b.option else ()):
                    entry = entries[step.workaround]
                    if i == 0 and b.backend == "rocm" and step.workaround in {w.id for w in overrides}:
                        assert entry.state != "not shipped", (target, tag, step.workaround)
                    setting = entry.workaround.setting
                    assert setting == step.setting or f"{target}: {step.setting}" in setting, (target, tag, setting)
                    checked += 1
    assert checked > 5000


def _gtv(target: str) -> int:
    """gfxNNxy as KFD's gfx_target_version (host/sysfs.py: gfx_name read backwards)."""
    m = re.fullmatch(r"gfx([0-9]+)([0-9a-f])([0-9a-f])", target)
    assert m is not None, target
    return int(m[1]) * 10000 + int(m[2], 16) * 100 + int(m[3], 16)


def _machine(root: Path, targets: list[str]) -> Path:
    """tests/doctor/machines.py's Vega 56 machine (the official install layout, its service, /dev and groups) with
    one KFD GPU node per target."""
    from tests.doctor.machines import machine

    root = machine(root, "vega56", version="0.0.0")
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    props = (nodes / "1/properties").read_text()
    for i, target in enumerate(targets):
        (nodes / str(i + 1)).mkdir(exist_ok=True)
        text = re.sub(r"gfx_target_version [0-9]+", f"gfx_target_version {_gtv(target)}", props)
        (nodes / str(i + 1) / "properties").write_text(
            text if i == 0 else re.sub(r"drm_render_minor [0-9]+", "drm_render_minor 0", text)
        )
    return root


def test_doctor_gives_the_stored_routes_steps_at_every_cell(cells, tmp_path):
    from gfxgate.app.doctor import DoctorRequest, examine
    from gfxgate.app.scan import ScanRequest, scan
    from gfxgate.sources.resolve import load_pins

    amd = [t for t in cells.targets if t.startswith("gfx")]
    root = _machine(tmp_path / "machine", amd)
    manifest = root / ".gfxgate-doctor/stat.json"
    data = json.loads(manifest.read_text())
    pin = load_pins().sources["ollama"].ref
    checked = 0
    for tag in cells.tags:
        data["probes"]["ollama --version"] = f"ollama version is {tag.removeprefix('v')}\n"
        manifest.write_text(json.dumps(data))
        reports = examine(DoctorRequest(root=root)).report.targets
        assert sorted(r.target for r in reports) == sorted(amd), tag
        expected: dict[str, dict[str, tuple[str, ...]]] = {}
        if tag in _embedded():  # the matrix holds the machine's installed files too, as scan --installed
            refs = {} if tag == pin else {"ollama": tag}
            for route in scan(
                ScanRequest(
                    targets=(",".join(amd),), refs=refs, offline=True, installed=(str(root / "usr/local/lib/ollama"),)
                )
            ).routes:
                expected[route.target] = {
                    b.backend: tuple(s.workaround for s in b.option.steps)
                    for b in route.backends
                    if b.option is not None
                }
        for report in reports:
            assert report.version == tag.removeprefix("v"), (report.target, tag)
            given = {
                b.backend: tuple(s.workaround for s in b.steps if s.workaround != "access" and s.origin == "route")
                for b in report.backends
                if b.state not in ("no route", "undecided")
            }
            stored = expected.get(report.target) or {
                b.backend: b.steps for b in cells.cell_at(report.target, tag).backends if b.state == "route"
            }
            assert given == stored, (report.target, tag, report.matrix_from)
            checked += 1
    assert checked == len(amd) * len(cells.tags)
