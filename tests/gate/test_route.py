"""The route (the answer at the end of the gate matrix) on real fixture matrices: applies, refuses, undecided."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from tests.conftest import schema_validator
from gfxgate.cli import main
from gfxgate.errors import RuleError
from gfxgate.gate.route import RouteOption, RouteStep, decide, default_routes, load_routes
from gfxgate.gate.scan import FactsRequest, scan_matrix
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.model import Status, Verdict
from gfxgate.resources import rules_dir
from gfxgate.targets import catalog


def matrix_at(ref: str, *names: str):
    return scan_matrix([catalog().parse(n) for n in names], FactsRequest(refs={"ollama": ref}))


def scan_routes(capsys, *args: str) -> dict:
    with pytest.raises(SystemExit) as info:
        main(["scan", "--format", "json", *args])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    data = json.loads(out)
    schema_validator("matrix").validate(data)  # jsonschema.validate, its schema checked once per module
    return {r["target"]: r for r in data["routes"]}


def test_out_of_the_box_before_the_release_dropped_gfx900(source_env, capsys):
    routes = scan_routes(capsys, "-t", "gfx900", "-t", "gfx1030", "--ref", "ollama=v0.12.3")
    for name in ("gfx900", "gfx1030"):
        r = routes[name]
        assert r["label"] == "ROCm out of the box" and r["best"]["route"] == "rocm-release"
        assert r["best"]["steps"] == []
        wheres = {e["where"] for e in r["best"]["evidence"]}
        assert "ollama@v0.12.3:CMakePresets.json:23" in wheres  # the ROCm 6 preset's AMDGPU_TARGETS
        assert r["certain"] is True and r["reason"] is None  # the first (shortest) route applies


def backend(route: dict, name: str) -> dict:
    return next(b for b in route["backends"] if b["backend"] == name)


def test_gfx900_at_v0_17_5_needs_a_build_and_the_rocblas_files(source_env, capsys):
    r = scan_routes(capsys, "-t", "gfx900", "--ref", "ollama=v0.17.5")["gfx900"]
    # the shortest route is one environment variable: Vulkan is built, shipped and opt-in at this version
    assert r["label"] == "Vulkan: OLLAMA_VULKAN=1" and r["certain"]
    (vk_step,) = r["best"]["steps"]
    assert vk_step["workaround"] == "ollama-vulkan" and vk_step["covers"] == ["vulkan"]
    # a live scan checks each step as `gfxgate workarounds` does: OLLAMA_VULKAN is still read at this tag
    assert vk_step["check"]["state"] == "live"
    assert vk_step["check"]["evidence"][0]["where"].startswith("ollama@v0.17.5:envconfig/config.go:")
    assert any("OLLAMA_VULKAN=1" in e["text"] for e in vk_step["evidence"])
    rocm = backend(r, "rocm")["option"]
    assert rocm["label"] == "ROCm: build + rocBLAS files"
    assert r["sentence"] == "gfx900 at v0.17.5: Vulkan: OLLAMA_VULKAN=1; or ROCm: build + rocBLAS files"
    steps = {s["workaround"]: s for s in rocm["steps"]}
    assert list(steps) == ["build-amdgpu-targets", "copy-rocblas-tensile"]
    assert steps["build-amdgpu-targets"]["covers"] == ["cmake-filter", "cmake-presets"]
    assert steps["copy-rocblas-tensile"]["covers"] == ["release-packaging"]
    assert steps["copy-rocblas-tensile"]["evidence"][0]["where"] == "ollama@v0.17.5:Dockerfile:3"
    assert "rm -f" in steps["copy-rocblas-tensile"]["evidence"][0]["text"]
    assert any(
        "Release build targets is blocked" in why for why in backend(r, "rocm")["refused"]
    )  # why not out of the box


def test_override_route_reads_the_override_targets_column(source_env, capsys):
    routes = scan_routes(capsys, "-t", "gfx1031", "-t", "gfx803", "--live")
    r = backend(routes["gfx1031"], "rocm")["option"]
    assert r["label"] == "ROCm: override 10.3.0"
    assert r["override_target"] == "gfx1030"
    (step,) = r["steps"]
    assert step["workaround"] == "hsa-override-10.3.0" and step["setting"] == "HSA_OVERRIDE_GFX_VERSION=10.3.0"
    assert step["covers"] == ["cmake-presets"]  # gfx1031 itself is in no preset
    # negative: no override applies to gfx803 and no rocBLAS step is needed — a build only
    gfx803 = backend(routes["gfx803"], "rocm")["option"]
    assert gfx803["label"] == "ROCm: build"
    assert [s["workaround"] for s in gfx803["steps"]] == ["build-amdgpu-targets"]
    # the hidden override column is not shown in the matrix
    with pytest.raises(SystemExit):
        main(["scan", "--format", "json", "-t", "gfx1031", "--live"])
    assert json.loads(capsys.readouterr()[0])["targets"] == ["gfx1031"]


def test_an_unknown_layer_leaves_the_route_undecided(source_env):
    # the real matrix at v0.17.5, with the release-packaging cell unknown (as when the Dockerfile rule stops matching)
    m = scan_matrix([catalog().parse(n) for n in ("gfx900", "gfx906")], FactsRequest(refs={"ollama": "v0.17.5"}))
    m = dataclasses.replace(m, targets=("gfx900", "gfx906"))
    unknown = Verdict(
        "release-packaging", "gfx900", Status.UNKNOWN, "unknown", reason="rule did not match at ollama@v0.17.5"
    )
    cells = {**m.cells, ("release-packaging", "gfx900"): unknown}
    r = decide(dataclasses.replace(m, cells=cells), "gfx900")
    rocm = r.backend("rocm")
    assert rocm.state == "undecided" and any("Release packaging is unknown" in why for why in rocm.undecided)
    assert rocm.option is None  # no ROCm route is guessed
    if r.best is not None:  # another backend may still decide the answer, but never a ROCm route
        assert r.best.backend != "rocm"
    else:
        assert r.label == "undecided" and not r.certain


def test_cpu_only_when_every_gpu_backend_is_refused(source_env, tmp_path):
    data = yaml.safe_load((rules_dir() / "routes.yaml").read_text(encoding="utf-8"))
    data["routes"] = [r for r in data["routes"] if r["backend"] != "vulkan"]
    build = next(r for r in data["routes"] if r["id"] == "rocm-build")
    build["steps"] = [
        s for s in build["steps"] if s["workaround"] != "copy-rocblas-tensile"
    ]  # no way to restore the files
    path = tmp_path / "routes.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    m = matrix_at("v0.17.5", "gfx900", "gfx906")  # gfx906: the column HSA_OVERRIDE_GFX_VERSION=9.0.6 would read
    from gfxgate.gate.ruleset import default_rules

    # every vendor's layers: an AMD target's matrix has AMD's rows only, the NVIDIA routes read NVIDIA's
    rules = load_routes(path, layers={layer.id for layer in default_rules().layers}, workarounds=default_workarounds())
    r = decide(m, "gfx900", rules=rules)
    assert r.label == "CPU only" and r.certain and r.best.backend == "cpu"
    assert any(e.location and e.location.path == "Dockerfile" for e in r.best.evidence)  # why ROCm has no route
    assert r.backend("rocm").state == "none"
    assert any("as gfx906 via HSA_OVERRIDE_GFX_VERSION=9.0.6" in why for why in r.backend("rocm").refused)
    # without the override target's column the same answer is undecided, not guessed
    m = scan_matrix([catalog().parse("gfx900")], FactsRequest(refs={"ollama": "v0.17.5"}))
    narrow = dataclasses.replace(m, targets=("gfx900",))
    assert decide(narrow, "gfx900", rules=rules).best is None


def test_a_route_refuses_to_exist_without_evidence():
    with pytest.raises(ValueError, match="^route rocm-release without evidence$"):
        RouteOption("rocm-release", "rocm", "ROCm out of the box", "out of the box", ())
    with pytest.raises(ValueError, match="^route step copy-rocblas-tensile without evidence$"):
        RouteStep("copy-rocblas-tensile", "t", "s", "r", ("release-packaging",), ())


def test_route_rules_are_checked_at_load(tmp_path):
    text = (rules_dir() / "routes.yaml").read_text(encoding="utf-8")
    layers = {layer.id for layer in matrix_layers()}
    bad_layer = tmp_path / "a.yaml"
    bad_layer.write_text(text.replace("cmake-presets: [allowed]", "cmake-prestes: [allowed]", 1), encoding="utf-8")
    with pytest.raises(RuleError, match="unknown layer 'cmake-prestes'"):
        load_routes(bad_layer, layers=layers, workarounds=default_workarounds())
    bad_step = tmp_path / "b.yaml"
    bad_step.write_text(
        text.replace("workaround: copy-rocblas-tensile", "workaround: copy-rocblas", 1), encoding="utf-8"
    )
    with pytest.raises(RuleError, match="unknown workaround 'copy-rocblas'"):
        load_routes(bad_step, layers=layers, workarounds=default_workarounds())
    bad_status = tmp_path / "c.yaml"
    bad_status.write_text(
        text.replace("discovery: [allowed, partial]", "discovery: [allowed, fine]", 1), encoding="utf-8"
    )
    with pytest.raises(RuleError, match=r"c\.yaml:\d+"):
        load_routes(bad_status, layers=layers)
    bad_setting = tmp_path / "d.yaml"
    bad_setting.write_text(
        text.replace("setting: OLLAMA_VULKAN=1", "setting: OLLAMA_IGPU_ENABLE=1", 1), encoding="utf-8"
    )
    with pytest.raises(RuleError, match="not a value of 'OLLAMA_VULKAN=0'"):
        load_routes(bad_setting, layers=layers, workarounds=default_workarounds())
    assert default_routes().routes[0].id == "rocm-release"


def matrix_layers():
    from gfxgate.gate.ruleset import default_rules

    return default_rules().layers


def test_the_shipped_snapshot_answers_gfx900(capsys):
    """The study's versions (pin set study, its own embedded snapshot, offline): ROCm needs a build and the files the
    release deleted; Vulkan waits for its layer."""
    r = scan_routes(capsys, "-t", "gfx900", "--ref", "ollama=v0.17.5")["gfx900"]
    assert r["version"] == "v0.17.5"
    rocm = backend(r, "rocm")["option"]
    assert rocm["label"] == "ROCm: build + rocBLAS files"
    wheres = [e["where"] for s in rocm["steps"] for e in s["evidence"]]
    assert any(w.startswith("ollama@v0.17.5:Dockerfile:") for w in wheres)
    vulkan = backend(r, "vulkan")["option"]
    assert vulkan["label"] == "Vulkan: OLLAMA_VULKAN=1"
    # the step says the value this route needs, not the workaround entry's own (OLLAMA_VULKAN=0 turns Vulkan off)
    assert [s["setting"] for s in vulkan["steps"]] == ["OLLAMA_VULKAN=1"]
    assert r["label"] == "Vulkan: OLLAMA_VULKAN=1"
    # from the snapshot no step is checked (that needs the sources): the steps say so, explicitly
    assert all(
        s["check"]["state"] == "not checked" and "snapshot" in s["check"]["summary"]
        for b in r["backends"]
        if b["option"]
        for s in b["option"]["steps"]
    )


def test_an_integrated_gpu_needs_its_device_step_on_every_route(source_env, capsys):
    """ollama >= v0.30 drops integrated GPUs unless OLLAMA_IGPU_ENABLE=1: the step joins the route, also under an override."""
    r = scan_routes(capsys, "-t", "gfx1103", "--ref", "ollama=v0.32.15")["gfx1103"]
    labelled = {b["backend"]: b["option"]["label"] for b in r["backends"] if b["option"]}
    assert all(label.endswith("+ OLLAMA_IGPU_ENABLE=1") for label in labelled.values()), labelled
    for b in r["backends"]:
        if b["option"]:
            step = next(s for s in b["option"]["steps"] if s["workaround"] == "ollama-igpu-enable")
            assert "OLLAMA_IGPU_ENABLE=1" in step["evidence"][0]["text"]  # the line that drops the iGPU comes first


def test_a_stale_step_makes_the_answer_uncertain(source_env, capsys):
    """v0.30.0 of the fixture no longer reads OLLAMA_IGPU_ENABLE anywhere: the iGPU step's own check says so."""
    r = scan_routes(capsys, "-t", "gfx1103", "--ref", "ollama=v0.30.0")["gfx1103"]
    steps = [
        s for b in r["backends"] if b["option"] for s in b["option"]["steps"] if s["workaround"] == "ollama-igpu-enable"
    ]
    assert steps and all(s["check"]["state"] == "stale" for s in steps), steps
    assert r["certain"] is False and "step ollama-igpu-enable is stale at ollama@v0.30.0" in r["reason"]


def test_the_build_step_gives_the_configure_command_of_the_scanned_version(source_env, capsys):
    """ollama >= v0.30 builds ROCm only with -DOLLAMA_LLAMA_BACKENDS=…: the build step says the command of the version
    (the build target list cell's remedy), not the workaround's generic `cmake -B build -DAMDGPU_TARGETS=…`."""

    def build_step(ref):
        r = scan_routes(capsys, "-t", "gfx900", "--ref", f"ollama={ref}")["gfx900"]
        rocm = backend(r, "rocm")["option"]
        return next(s for s in rocm["steps"] if s["workaround"] == "build-amdgpu-targets")

    new = build_step("v0.30.0")
    assert (
        new["setting"]
        == "cmake -B build . -DOLLAMA_LLAMA_BACKENDS=rocm_v7_2 -DCMAKE_HIP_ARCHITECTURES=gfx900 && cmake --build build"
    )
    old = build_step("v0.17.5")
    assert old["setting"] == "cmake -B build -DAMDGPU_TARGETS=gfx900 && cmake --build build"


def test_setting_from_must_name_a_layer_the_step_covers(tmp_path):
    layers = {layer.id for layer in scan_matrix([catalog().parse("gfx900")]).layers}
    path = tmp_path / "routes.yaml"
    path.write_text(
        (rules_dir() / "routes.yaml").read_text().replace("setting_from: cmake-filter", "setting_from: vulkan")
    )
    with pytest.raises(RuleError, match="setting_from 'vulkan' is not a layer the step covers"):
        load_routes(path, layers=layers, workarounds=default_workarounds())
