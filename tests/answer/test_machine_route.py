"""Issue 37 item 1 through the one answer computation: the machine's runners and runs are an input of ``decide``
(``machine=``, applied by ``answer.route.with_machine``), so scan --log, doctor and a Route read back from the timeline
take them the same way."""

from __future__ import annotations

from gfxgate.answer.route import with_machine
from gfxgate.machine import MachineFacts, RunFact, RunnerFact
from gfxgate.timeline import snapshot as timeline_snapshot

CPU_RUN = RunFact("cpu", "ok", "run 1: 0/29 layers on the GPU", "ollama.log:40")
VULKAN_ON = RunFact(
    "vulkan", "cpu", "OLLAMA_VULKAN was on (ollama.log:1), yet discovery listed no Vulkan GPU", "ollama.log:1"
)


def _route(target: str, tag: str):
    return timeline_snapshot.load_cells().route_at(target, tag)


def test_without_a_machine_the_route_is_the_releases():
    route = _route("gfx900", "v0.32.15")
    assert with_machine(route, None) is route
    assert with_machine(route, MachineFacts()) == route  # nothing recognised: nothing judged


def test_a_backend_whose_runs_ran_on_the_cpu_gives_way_to_one_the_machine_does_not_refute():
    route = _route("gfx900", "v0.32.15")
    assert route.best is not None and route.best.backend == "vulkan" and not route.best.steps  # "nothing to change"
    mine = with_machine(route, MachineFacts(runs=(VULKAN_ON, CPU_RUN)))
    vulkan = next(b for b in mine.backends if b.backend == "vulkan")
    assert vulkan.machine is not None and vulkan.machine.state == "ran on the CPU"
    assert mine.best is not None and mine.best.backend == "rocm" and mine.label == mine.best.label
    assert "machine" in vulkan.to_json() and "machine" not in next(b for b in route.backends).to_json()


def test_no_route_is_nothing_to_change_for_runs_on_the_cpu():
    """Every run on the CPU, Vulkan not switched on by the log: the step-less route is "ran on the CPU" too."""
    route = _route("gfx900", "v0.32.15")
    mine = with_machine(route, MachineFacts(runs=(CPU_RUN,)))
    for b in mine.backends:
        if b.option is not None and not b.option.steps and b.backend != "cpu":
            assert b.machine is not None and b.machine.state == "ran on the CPU", b


def test_a_runner_that_is_not_installed_is_said_and_the_best_route_moves():
    route = _route("gfx1030", "v0.32.15")
    assert route.best is not None and route.best.backend == "rocm"
    arch = MachineFacts(
        layouts=("arch",),
        runners=(
            RunnerFact("rocm", "arch", False, (), "ollama-rocm", ("sudo pacman -S ollama-rocm",), "PKGBUILD"),
            RunnerFact("vulkan", "arch", True, ("/usr/lib/ollama/libggml-vulkan.so",), "ollama-vulkan", (), "PKGBUILD"),
        ),
    )
    mine = with_machine(route, arch)
    rocm = next(b for b in mine.backends if b.backend == "rocm")
    assert rocm.machine is not None and rocm.machine.state == "not installed" and rocm.machine.package == "ollama-rocm"
    assert mine.best is not None and mine.best.backend == "vulkan"


# -- the copy step: one computed step that scan, workarounds and doctor print (issue 36/37) --------------------------
def _run(cli, *args: str) -> dict:
    """The command in process (tests/inprocess.py; what it prints is the claim, not the script's start), with the
    test's own cache folder (tests/conftest.py: a copy of the run's seed, no clone): each of the three commands
    started the installed script, the first with an empty cache folder of its own that it filled with the rules."""
    import json

    done = cli(*args, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_the_copy_step_is_one_step_in_scan_workarounds_and_doctor(gfxgate_cli, tmp_path, built):
    """gfx900 at v0.17.5 (the README's machine: the official install, /opt/rocm without gfx900 files): scan and
    workarounds print the route's copy step with what the machine must check; doctor prints the same command with
    this machine's folders filled in, and says that no rocBLAS here has the files and which version they must be."""
    from tests.doctor.machines import machine

    scan = _run(gfxgate_cli, "scan", "-t", "gfx900", "--ref", "ollama=v0.17.5", "--offline")
    route = scan["routes"][0]
    setting = next(
        s["setting"]
        for b in route["backends"]
        if b["option"]
        for s in b["option"]["steps"]
        if s["workaround"] == "copy-rocblas-tensile"
    )
    command, _, check = setting.partition("  # ")
    assert command == 'cp "$ROCBLAS"/library/*gfx900* <ollama>/lib/ollama/rocm*/rocblas/library/', setting
    assert "/opt/rocm" not in setting and "librocblas.so" in check and "version" in check, setting
    entries = {
        w["id"]: w
        for w in _run(gfxgate_cli, "workarounds", "-t", "gfx900", "--ref", "ollama=v0.17.5", "--offline")["workarounds"]
    }
    assert entries["copy-rocblas-tensile"]["setting"] == setting
    root = machine(tmp_path / "m", "vega56", version="0.17.5", built=built)  # real GPU code (clang-19), as the README's
    report = _run(gfxgate_cli, "doctor", "--root", str(root))["targets"][0]
    step = next(s for b in report["backends"] for s in b["steps"] if s["workaround"] == "copy-rocblas-tensile")
    bundled = "/usr/local/lib/ollama/rocm/rocblas/library/"
    assert step["commands"] == ["sudo " + command.replace("<ollama>/lib/ollama/rocm*/rocblas/library/", bundled)], step
    assert "set ROCBLAS to a rocBLAS built for gfx900" in step["what"], step["what"]
