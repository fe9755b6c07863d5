"""Routes beyond the official release (issue 44, docs/forks.md): the ollama-for-amd fork's Windows route, read from the
fork's own files at its pin (the embedded snapshot's facts, excerpted in tests/rules/ollama-for-amd-*), listed after
the official routes and never chosen as the best."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from gfxgate.errors import RuleError
from gfxgate.gate.route import load_routes
from gfxgate.resources import rules_dir


def _scan(exe: str, target: str, *extra: str) -> dict:
    done = subprocess.run(
        [exe, "scan", "-t", target, "--format", "json", *extra], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    (route,) = json.loads(done.stdout)["routes"]
    return route


def test_the_forks_answer_for_gfx1031_on_windows_names_its_rocmlibs_step(gfxgate_exe):
    route = _scan(gfxgate_exe, "gfx1031", "--os", "windows")
    (fork,) = route["beyond"]
    assert (fork["route"], fork["source"], fork["version"], fork["state"]) == (
        "ollama-for-amd",
        "ollama-for-amd",
        "v0.30.8",
        "applies",
    )
    option = fork["option"]
    assert option["label"].startswith(
        "ollama-for-amd v0.30.8 (Windows, gfx1031 built): replace its rocBLAS library with ROCmLibs"
    )
    (step,) = option["steps"]
    assert step["workaround"] == "ollama-for-amd-rocmlibs"
    assert (
        "\\lib\\ollama\\rocm_v7_1\\rocblas\\library" in step["setting"]
        and "ROCmLibs files for gfx1031" in step["setting"]
    )
    where = {
        (e["location"]["repo"], e["location"]["ref"], e["location"]["path"], e["location"]["line"])
        for e in option["evidence"]
    }
    assert ("ollama-for-amd", "v0.30.8", "llama/server/CMakePresets.json", 181) in where  # rocm_v7_1_windows's list
    assert (
        "ollama-for-amd",
        "v0.30.8",
        "wiki for build on amd",
        30,
    ) in where  # "replace library within rocblas\library"
    # after the official routes, never instead of them; the official sentence (doctor's, the timeline's) is unchanged
    assert route["best"]["route"] != "ollama-for-amd" and "ollama-for-amd" not in route["sentence"]
    answer = _md_answer(exe=gfxgate_exe, target="gfx1031", os="windows")
    assert route["sentence"] + "; or " + option["label"] + "\n" in answer


def test_linux_is_the_default_and_has_no_windows_fork_route(gfxgate_exe):
    assert [b["route"] for b in _scan(gfxgate_exe, "gfx1031")["beyond"]] == ["therock"]
    assert [b["route"] for b in _scan(gfxgate_exe, "gfx1031", "--os", "linux")["beyond"]] == ["therock"]


def test_gfx900_on_linux_through_therocks_packages_untested(gfxgate_exe):
    route = _scan(gfxgate_exe, "gfx900")
    (rock,) = route["beyond"]
    assert (rock["route"], rock["version"], rock["state"]) == ("therock", "therock-7.14", "applies")
    option = rock["option"]
    assert option["label"] == "TheRock therock-7.14 packages (gfx900 built; a llama-server built against them)"
    # Build Passing only: the route says it is unverified, from the Sanity Tested column's empty cell
    (condition,) = option["conditions"]
    assert condition.startswith("not sanity-tested by TheRock: its packages for gfx900 are unverified on hardware")
    where = {(e["location"]["path"], e["location"]["line"]) for e in option["evidence"]}
    assert ("cmake/therock_amdgpu_targets.cmake", 48) in where  # gfx900's declaration: rocBLAS is not excluded
    assert ("SUPPORTED_GPUS.md", 70) in where  # the Radeon Linux table's gfx900 row
    assert (
        route["sentence"]
        + "; or "
        + option["label"]
        + " (if: not sanity-tested by TheRock: its packages for gfx900 are "
        "unverified on hardware)\n"
    ) in _md_answer(exe=gfxgate_exe, target="gfx900", os="linux")


def test_gfx90c_has_no_therock_package_at_the_pinned_tag(gfxgate_exe):
    (rock,) = _scan(gfxgate_exe, "gfx90c")["beyond"]
    assert rock["state"] == "refused" and "Build Passing is empty" in rock["reasons"][0]
    assert "- **or therock** (therock@therock-7.14): refused — " in _md_answer(
        exe=gfxgate_exe, target="gfx90c", os="linux"
    )


def test_windows_answers_have_no_linux_therock_route(gfxgate_exe):
    assert [b["route"] for b in _scan(gfxgate_exe, "gfx900", "--os", "windows")["beyond"]] == ["ollama-for-amd"]


def test_a_target_the_forks_preset_lacks_is_refused_with_the_preset_line(gfxgate_exe):
    (fork,) = _scan(gfxgate_exe, "gfx900", "--os", "windows")["beyond"]
    assert fork["route"] == "ollama-for-amd"
    assert fork["state"] == "refused" and fork["option"] is None
    assert "not in AMDGPU_TARGETS of any preset (rocm_v7_1_windows)" in fork["reasons"][0]
    assert any(e["location"]["path"] == "llama/server/CMakePresets.json" for e in fork["evidence"])


def _md_answer(*, exe: str, target: str, os: str) -> str:
    done = subprocess.run(
        [exe, "scan", "-t", target, "--os", os, "--format", "md"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout[done.stdout.index("## The answer") :]


def test_the_text_answer_lists_the_fork_after_the_official_routes(gfxgate_exe):
    answer = _md_answer(exe=gfxgate_exe, target="gfx1031", os="windows")
    assert answer.index("- **Vulkan (default)**") < answer.index("- **or ollama-for-amd v0.30.8")
    assert "`ollama-for-amd@v0.30.8:wiki for build on amd:30`" in answer


@pytest.mark.parametrize(
    "edit,problem",
    [
        ("    source: ollama-for-amd\n", "names its source"),  # a beyond route without its source
        ("    beyond: true\n", "source: on a route that is not beyond"),
    ],
)
def test_a_beyond_route_is_checked_when_loaded(tmp_path, edit, problem):
    text = (rules_dir() / "routes.yaml").read_text()
    assert edit in text
    path = tmp_path / "routes.yaml"
    path.write_text(text.replace(edit, "", 1))
    with pytest.raises(RuleError, match=problem):
        load_routes(path)


def test_the_schema_refuses_an_unknown_os(tmp_path):
    text = (rules_dir() / "routes.yaml").read_text()
    path = tmp_path / "routes.yaml"
    path.write_text(text.replace("    os: [windows]\n", "    os: [macos]\n", 1))
    with pytest.raises(RuleError):
        load_routes(path)


@pytest.mark.skipif(shutil.which("git") is None, reason="git")
def test_no_fork_layer_no_fork_route():
    """A view that read no fork (the stored timeline) lists no fork route: nothing was read, which is not unknown."""
    from gfxgate.gate.route import decide
    from gfxgate.gate.scan import FactsRequest, scan_matrix
    from gfxgate.targets import catalog
    import dataclasses

    matrix = scan_matrix([catalog().parse("gfx1031")], FactsRequest(os="windows"))
    assert [b.route for b in matrix.routes[0].beyond] == ["ollama-for-amd"]
    layers = tuple(la for la in matrix.layers if not la.id.startswith(("fork-", "therock-")))
    bare = dataclasses.replace(
        matrix, layers=layers, cells={k: v for k, v in matrix.cells.items() if k[0] in {la.id for la in layers}}
    )
    assert decide(bare, "gfx1031", os="windows").beyond == ()
