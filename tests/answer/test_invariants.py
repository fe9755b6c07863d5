"""Issue 24 item 2: invariants of the answer over every target × release.

* no route step names another target's files (a step's setting names the target's own processor, or none);
* every override route points at code the same release ships (the posed target's own rows pass there);
* scan, workarounds and timeline give the same steps and settings for the same target at the same version;
* no route step without a check result (live) or an explicit "not checked" (snapshot).

Over the embedded timeline snapshot (every target × every release, always), the scan at the pin (every target of
the timeline, through the console script), and — opt-in with GFXGATE_TEST_UPSTREAM — the live timeline over a real
ollama clone, every probed release's matrix and answer (decide is observed in-process).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gfxgate.gate.route import default_routes, override_shipped, step_setting
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.targets import catalog
from gfxgate.timeline import snapshot as timeline_snapshot

GFX = re.compile(r"gfx[0-9a-f]{3,4}")
PASSING = {
    "cmake-presets": {"allowed", "partial"},
    "release-packaging": {"allowed"},
    "discovery": {"allowed", "partial"},
}


@pytest.fixture(scope="module")
def timeline():
    return timeline_snapshot.load()


def _named(setting: str) -> set[str]:
    return set(GFX.findall(setting))


def test_no_step_names_another_targets_files_at_any_release(timeline):
    by_id = {w.id: w for w in default_workarounds()}
    checked = 0
    for row in timeline.rows:
        processor = row.target.split(":")[0]
        for cell in row.cells:
            for tag in (cell.first, cell.last):
                for step in cell.steps:
                    w = by_id[step]
                    if not w.exists_at({"ollama": tag}.get):
                        continue
                    setting = step_setting(w.at({"ollama": tag}.get), row.target)
                    assert _named(setting) <= {processor}, (row.target, tag, step, setting)
                    checked += 1
    assert checked > 100  # the property was exercised (steps over 34 targets × 245 releases)


def test_every_override_route_points_at_code_the_release_ships(timeline):
    """A rocm-override cell: the posed target's own row passes the override route's needs at that release."""
    cat = catalog()
    overrides = [w for w in default_workarounds() if w.override]
    seen = 0
    for row in timeline.rows:
        for cell in row.cells:
            if cell.route != "rocm-override":
                continue
            processor = row.target.split(":")[0]
            for tag in (cell.first, cell.last):
                posed = [cat.from_hsa_override(w.override).name for w in overrides if processor in w.applies_to]
                shipped = []
                for name in posed:
                    if name not in timeline.targets:
                        continue
                    layers = dict(timeline.cell_at(name, tag).layers)
                    if all(layers.get(layer) in ok for layer, ok in PASSING.items()):
                        shipped.append(name)
                assert shipped, (row.target, tag, posed)
                seen += 1
    assert seen > 10


def test_snapshot_steps_say_not_checked_and_settings_are_the_targets(gfxgate_cli):
    targets = ",".join(timeline_snapshot.load().targets)
    result = gfxgate_cli("scan", "-t", targets, "--format", "json", timeout=120)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    steps = 0
    for route in data["routes"]:
        processor = route["target"].split(":")[0]
        for backend in route["backends"]:
            for step in (backend["option"] or {}).get("steps", ()):
                assert step["check"] is not None and step["check"]["state"] == "not checked", (route["target"], step)
                assert _named(step["setting"]) <= {processor}, (route["target"], step["setting"])
                steps += 1
    assert steps > 30


def test_scan_and_timeline_give_the_same_answer_at_the_pin(gfxgate_cli, timeline):
    """The timeline's cell at the pinned release and the scan at the pin: the same route and the same steps."""
    from gfxgate.sources.resolve import load_pins

    pin = load_pins().sources["ollama"].ref
    targets = list(timeline.targets)
    data = json.loads(gfxgate_cli("scan", "-t", ",".join(targets), "--format", "json", timeout=120).stdout)
    for route in data["routes"]:
        cell = timeline.cell_at(route["target"], pin)
        best = route["best"]
        assert (best["route"] if best else "undecided") == cell.route, (route["target"], cell.route)
        assert tuple(s["workaround"] for s in (best or {}).get("steps", ())) == cell.steps, route["target"]


@pytest.mark.parametrize("study", [False, True], ids=["today", "study"])
@pytest.mark.parametrize("target", ["gfx803", "gfx900", "gfx906", "gfx1031", "gfx1103"])
def test_workarounds_and_scan_give_the_same_setting(gfxgate_cli, target, study, tmp_path):
    """At today's pin and at the study's release (its pin set): the same setting for the same workaround."""
    from gfxgate.sources.resolve import load_pins
    from tests.answer.test_reproductions import _ollama_fixture, route_of, scan_json, steps_of

    ref = ("--ref", "ollama=v0.17.5") if study else ()
    tag = "v0.17.5" if study else load_pins().sources["ollama"].ref
    scan = steps_of(route_of(scan_json(gfxgate_cli, "-t", target, *ref), target))
    result = gfxgate_cli(
        "workarounds",
        "-t",
        target,
        "--format",
        "json",
        "--offline",
        *ref,
        "--source",
        f"ollama={_ollama_fixture(tmp_path, tag)}",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    listed = {w["id"]: w["setting"] for w in json.loads(result.stdout)["workarounds"]}
    for workaround, setting in scan.items():
        assert listed[workaround] == setting, (target, workaround)
    for workaround, setting in listed.items():  # the other entries: filled for the target, no other's name
        assert _named(setting) <= {target.split(":")[0]} or workaround.startswith("hsa-override"), (workaround, setting)


# -- opt-in: the live timeline over a real ollama clone, every probed release's matrix and answer -----------------
@pytest.mark.upstream
@pytest.mark.skipif(not os.environ.get("GFXGATE_TEST_UPSTREAM"), reason="set GFXGATE_TEST_UPSTREAM to run")
def test_invariants_over_every_probed_release_of_a_real_clone(monkeypatch, capsys):
    import gfxgate.gate.route as route_module
    from gfxgate.cli import main

    seen: list = []
    real = route_module.decide

    def observed(matrix, target, **kwargs):
        route = real(matrix, target, **kwargs)
        seen.append((matrix, target, route))
        return route

    monkeypatch.setattr(route_module, "decide", observed)
    monkeypatch.setattr("gfxgate.timeline.compute.decide", observed)  # the timeline's own name (imported at its top)
    clone = Path(os.environ["GFXGATE_TEST_UPSTREAM"]) / "ollama"
    with pytest.raises(SystemExit) as info:
        main(["timeline", "--live", "--offline", "--source", f"ollama={clone}", "--format", "json"])
    capsys.readouterr()
    assert info.value.code == 0
    assert len({r.version for _, _, r in seen}) > 50
    rules = default_routes()
    for matrix, target, route in seen:
        processor = target.split(":")[0]
        for backend in route.backends:
            option = backend.option
            if option is None:
                continue
            for step in option.steps:
                assert _named(step.setting) <= {processor}, (target, route.version, step.setting)
            if option.route == "rocm-override":
                value = option.steps[0].setting.split("=", 1)[1]
                missing, _ = override_shipped(matrix, value, rules)
                assert missing is None, (target, route.version, missing)


# -- doctor: the same steps and settings as the scan at the machine's installed version ------------------------------
def _doctor_steps(exe: str, root: Path) -> tuple[dict, dict[str, list[str]]]:
    result = exe("doctor", "--root", str(root), "--format", "json", timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)["targets"][0]
    return report, {
        s["workaround"]: s["commands"] for b in report["backends"] for s in b["steps"] if s["workaround"] != "access"
    }


@pytest.mark.parametrize(
    "card, version",
    [
        ("vega56", "0.17.5"),
        ("vega56", "0.32.15"),
        ("780m", "0.32.15"),
        ("vega56", "0.20.0"),
        ("vega56", "0.12.4"),
        ("780m", "0.20.0"),
    ],
)
def test_doctor_gives_the_scans_steps_and_settings_at_the_installed_version(gfxgate_cli, tmp_path, card, version):
    """A captured machine (tests/doctor/machines.py) with Ollama ``version`` installed: doctor's route steps are the
    timeline's at that release, each with the setting every other view shows (step_setting), no placeholder left;
    at a release with no embedded matrix doctor answers from the timeline cell and must still name every step."""
    from gfxgate.gate.route import default_routes
    from tests.doctor.machines import machine

    target = {"vega56": "gfx900", "780m": "gfx1103"}[card]
    tag = f"v{version}"
    report, steps = _doctor_steps(gfxgate_cli, machine(tmp_path / card, card, version=version))
    cell = timeline_snapshot.load().cell_at(target, tag)
    # the route sentence, then (issue 37) what was recorded on such a card: "… Caution: on a Radeon RX Vega 56 …"
    sentence = report["answer"].split(". Caution: ")[0]
    if sentence.split("; or ")[0].endswith("(installed rocBLAS)"):
        # issue 37: the machine's own rocBLAS decides where it differs from the release's (the captured 780m's has no
        # gfx1103 catalog): the answer is then the override to a target that rocBLAS has, not the release's route
        assert sentence.startswith(f"{target} at {tag}: ROCm + override ") and cell.label != sentence, sentence
        return
    # the Route's sentence: scan's at an embedded release, the stored Route's (read back, Cells.route_at) elsewhere
    stored = timeline_snapshot.load_cells().route_at(target, tag)
    assert stored.label == cell.label and sentence in (f"{target} at {tag}: {cell.label}", stored.sentence), report[
        "answer"
    ]
    best = next(b for b in report["backends"] if b["label"] == cell.label)
    assert [s["workaround"] for s in best["steps"] if s["workaround"] != "access"] == list(cell.steps), (
        best,
        cell.steps,
    )
    rules = {s.workaround: s for r in default_routes().routes for s in r.steps} | {
        s.workaround: s for s in default_routes().device_steps
    }
    by_id = {w.id: w.at({"ollama": tag}.get) for w in default_workarounds()}
    for step in (s for b in report["backends"] for s in b["steps"] if s["workaround"] != "access" and not s["done"]):
        assert step["check"] and step["check"].startswith("not checked — "), step  # a snapshot's answer: said so
    for workaround, commands in steps.items():
        text = "\n".join(commands)
        assert not re.search(r"\{[a-z_]+\}", text), (workaround, text)
        setting = step_setting(by_id[workaround], target, rule=rules.get(workaround))
        if workaround == "copy-rocblas-tensile":  # the machine's own folders: the target's files, no other's
            assert f"*{target}*" in text and _named(text) <= {target}, text
        elif workaround == "build-amdgpu-targets" and "cmake" in text:  # the version's configure command
            assert f"={target}" in text and _named(text) <= {target}, text
        else:
            assert setting in text, (workaround, setting, text)


# -- diagnose: at the log's release, the workarounds and settings the scan and the timeline give ----------------------
def test_diagnose_at_every_route_change_offers_what_the_release_has(gfxgate_cli, timeline, tmp_path):
    """The sample log (gfx900, a rocBLAS failure and a crash while loading) announced as each release where gfx900's
    answer changes (the first and last tag of every timeline cell): no finding offers a route step whose every route
    the timeline's cell rules out (OLLAMA_VULKAN only where the vulkan row is reachable), a Vulkan remedy says
    OLLAMA_VULKAN=1 exactly where the release's answer needs that step, the 'exact value' of an override is the
    setting `gfxgate workarounds` gives that entry, and no placeholder is left."""
    from gfxgate.gate.workarounds import default_workarounds as workarounds

    sample = Path(__file__).resolve().parents[2] / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log"
    settings = {w.id: w.setting for w in workarounds()}
    tags = sorted({tag for c in timeline.row("gfx900").cells for tag in (c.first, c.last)}, key=timeline.tags.index)
    for tag in tags:
        log = tmp_path / f"ollama-{tag}.log"
        log.write_text(sample.read_text().replace("(version 0.12.3)", f"(version {tag[1:]})"))
        result = gfxgate_cli("diagnose", str(log), "--format", "json", "--no-upstream", timeout=120)
        assert result.returncode == 0, (tag, result.stderr)
        findings = [f for d in json.loads(result.stdout)["logs"] for f in d["findings"]]
        cell = timeline.cell_at("gfx900", tag)
        vulkan = dict(cell.layers).get("vulkan")
        for f in findings:
            assert not re.search(r"\{[a-z_]+\}", f["remedy"] or ""), (tag, f["message"], f["remedy"])
            if "ollama-vulkan" in f["workarounds"]:
                assert vulkan in ("allowed", "partial", "override-required"), (tag, f["message"], vulkan)
            if "Vulkan" in (f["remedy"] or "") and "between ROCm and" in f["remedy"]:
                assert ("OLLAMA_VULKAN=1" in f["remedy"]) == (
                    "ollama-vulkan" in cell.steps or vulkan == "override-required"
                ), (tag, cell.steps, f["remedy"])
            for line in f["context"]:
                if line.startswith("exact value: "):
                    value = line.removeprefix("exact value: ").split(" ")[0]
                    assert value in settings.values(), (tag, line)
        crash = next(f for f in findings if f["message"] == "go-signal-crash")
        assert ("ollama-vulkan" in crash["workarounds"]) == (vulkan != "blocked"), (tag, vulkan, crash["workarounds"])
    assert len(tags) >= 8


# -- opt-in: the scan at every route change of the embedded timeline gives the timeline's route (the real clones) ----
@pytest.mark.upstream
@pytest.mark.skipif(not os.environ.get("GFXGATE_TEST_UPSTREAM"), reason="set GFXGATE_TEST_UPSTREAM to run")
def test_scan_and_timeline_give_the_same_route_at_every_route_change(gfxgate_cli, timeline, tmp_path):
    """`scan --ref ollama=TAG` with the ollama and clr clones at the first and last release of every timeline cell: the
    same route and steps as the embedded timeline for every target (the rocm-runtime row read at the same coupled
    ROCm by both). rocm-docs (the official matrix, which no route needs) is the ROCm clone if there, else an empty
    folder."""
    root = Path(os.environ["GFXGATE_TEST_UPSTREAM"])
    if not (root / "clr").is_dir():
        pytest.skip("no clr clone (ROCm/clr) in GFXGATE_TEST_UPSTREAM")
    docs = root / "ROCm" if (root / "ROCm").is_dir() else tmp_path / "no-rocm-docs"
    docs.mkdir(exist_ok=True)
    tags = sorted(
        {tag for row in timeline.rows for c in row.cells for tag in (c.first, c.last)}, key=timeline.tags.index
    )
    compared = 0
    for tag in tags:
        run = gfxgate_cli(
            "scan",
            "--format",
            "json",
            "-t",
            ",".join(timeline.targets),
            "--ref",
            f"ollama={tag}",
            "--source",
            f"ollama={root / 'ollama'}",
            "--source",
            f"clr={root / 'clr'}",
            "--source",
            f"rocm-docs={docs}",
            timeout=300,
            env={**os.environ, "GFXGATE_OFFLINE": "1"},
        )
        assert run.returncode == 0, (tag, run.stderr)
        for route in json.loads(run.stdout)["routes"]:
            cell = timeline.cell_at(route["target"], tag)
            best = route["best"]
            assert (best["route"] if best else "undecided") == cell.route, (route["target"], tag, cell.route)
            assert tuple(s["workaround"] for s in (best or {}).get("steps", ())) == cell.steps, (route["target"], tag)
            compared += 1
    assert compared >= len(tags) * len(timeline.targets)
