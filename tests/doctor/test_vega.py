"""Issue 37: the study's own user — a Vega 56 (gfx900) on Arch/EndeavourOS at "100 % CPU" — and the machines around
it, each captured from real files and run through the installed script: the verdict per backend, the first step, and
that following the steps on a copy of the tree leaves no blocking setting behind (doctor run again on the copy)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.diagnose import logs
from tests.doctor.distros import arch, debian, doctor_json, follow, install_arch
from tests.doctor.machines import machine

VEGA_DROPIN = '[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=9.0.6"\n'
STUDY = "Vulkan crashed at num_gpu ≥ 1 with qwen3.5:2b"


def _backends(report: dict) -> dict:
    return {b["backend"]: b for b in report["targets"][0]["backends"]}


def _first_command(backend: dict) -> str:
    step = next(s for s in backend["steps"] if not s["done"])
    return step["commands"][0]


def _arch_packages(built=None):
    return {
        name: (lambda root, name=name: install_arch(root, name, built=built))
        for name in ("ollama-rocm", "ollama-vulkan", "ollama-cuda", "rocblas")
    }


def _blocking(report: dict) -> list[str]:
    return [
        f"{r['layer']}: {r['summary']}"
        for r in report["targets"][0]["rows"]
        if r["layer"] in ("override", "access") and r["status"] == "blocked"
    ]


def test_arch_ollama_alone_is_cpu_only(gfxgate_cli, tmp_path):
    root = arch(tmp_path / "arch")
    data = doctor_json(gfxgate_cli, root)
    assert data["facts"]["layouts"] == ["arch"] and data["facts"]["distro"] == ["endeavouros", "arch"]
    assert data["installs"]["ollama"][0]["version"] == "0.32.15"  # pacman's database, no binary run
    report = data["targets"][0]
    backends = _backends(data)
    assert backends["vulkan"]["state"] == "not installed" and backends["rocm"]["state"] == "not installed"
    assert "runs" not in {b["state"] for b in backends.values() if b["backend"] != "cpu"}
    # the answer leads with what the machine lacks for the route's first backend, and carries the study's run
    assert report["answer"].startswith("On this machine: Vulkan not installed")
    assert "nothing to change" not in report["answer"]
    assert f"{STUDY}; not measured at v0.32.15: `gfxgate sweep` checks yours" in report["answer"]
    assert _first_command(backends["vulkan"]) == "sudo pacman -S ollama-vulkan vulkan-radeon"
    assert _first_command(backends["rocm"]) == "sudo pacman -S ollama-rocm"
    assert report["pin_commands"] == [
        "sudo pacman -R ollama",
        "curl -fsSL https://ollama.com/install.sh | OLLAMA_VERSION=0.12.3 sh",
    ]
    assert "the Vulkan runner" in report["pin_gives_up"]
    done = gfxgate_cli("doctor", "--root", str(root), "--fail-on", "vulkan")
    assert done.returncode == 1 and "vulkan" in done.stderr
    # follow Vulkan's steps on a copy: the runner is then installed, and nothing blocks
    after = tmp_path / "after"
    shutil.copytree(root, after, symlinks=True)
    assert follow(after, backends["vulkan"]["steps"], _arch_packages()) == ["install vulkan-radeon"]
    again = _backends(doctor_json(gfxgate_cli, after))
    assert again["vulkan"]["state"] in ("runs", "needs steps") and again["rocm"]["state"] == "not installed"


def test_arch_ollama_rocm_reads_the_system_rocblas(gfxgate_cli, tmp_path, built):
    root = arch(tmp_path / "arch", packages=("ollama", "ollama-rocm"), built=built)
    data = doctor_json(gfxgate_cli, root)
    assert data["installs"]["system_rocblas"] == ["/opt/rocm/lib/rocblas/library"]
    rows = {r["layer"]: r for r in data["targets"][0]["rows"]}
    # ollama-rocm bundles no rocBLAS: the system's (extra/rocblas in /opt/rocm) is what it loads, and is scanned
    assert rows["rocblas-artifacts"]["status"] == "allowed"
    assert rows["rocblas-artifacts"]["evidence"][0]["where"].startswith("/opt/rocm/lib/rocblas/library/")
    assert rows["installed-gpu-code"]["status"] == "allowed"
    assert rows["installed-gpu-code"]["evidence"][0]["where"].startswith("/usr/lib/ollama/rocm_v7_2/libggml-hip.so")
    backends = _backends(data)
    assert backends["rocm"]["state"] in ("runs", "needs steps")
    assert backends["vulkan"]["state"] == "not installed"
    assert _first_command(backends["vulkan"]) == "sudo pacman -S ollama-vulkan vulkan-radeon"


def test_arch_ollama_vulkan(gfxgate_cli, tmp_path):
    root = arch(tmp_path / "arch", packages=("ollama", "ollama-vulkan"))
    backends = _backends(doctor_json(gfxgate_cli, root))
    assert backends["vulkan"]["state"] in ("runs", "needs steps")
    assert (
        backends["rocm"]["state"] == "not installed"
        and _first_command(backends["rocm"]) == "sudo pacman -S ollama-rocm"
    )


def test_official_v0_32_15_with_a_vega_log_on_the_cpu(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.32.15", runner="rocm_v7_2", render_members="ollama")
    (root / "etc/os-release").write_text('NAME="EndeavourOS"\nID="endeavouros"\nID_LIKE="arch"\n')
    log = tmp_path / "ollama.log"
    log.write_text("\n".join(logs.ollama_0_32()) + "\n")
    data = doctor_json(gfxgate_cli, root, "--log", str(log))
    report = data["targets"][0]
    assert report["answer"].startswith("On this machine: every run in the log ran on the CPU")
    assert "nothing to change" not in report["answer"]
    vulkan = _backends(data)["vulkan"]
    # the official archive has the Vulkan runner; with OLLAMA_VULKAN on and no Vulkan GPU, the driver is missing
    assert vulkan["state"] == "ran on the CPU"
    assert f"OLLAMA_VULKAN was on ({log}:1)" in vulkan["reason"]
    assert _first_command(vulkan) == "sudo pacman -S vulkan-radeon"
    done = gfxgate_cli("doctor", "--root", str(root), "--log", str(log), "--fail-on", "vulkan")
    assert done.returncode == 1


def test_a_log_whose_vulkan_runs_crashed_is_failed_on_this_machine(gfxgate_cli, tmp_path):
    root = machine(tmp_path / "m", "vega56", version="0.17.5", render_members="ollama")
    log = tmp_path / "ollama.log"
    log.write_text("\n".join(logs.ollama_0_17_5_crash()) + "\n")
    data = doctor_json(gfxgate_cli, root, "--log", str(log))
    vulkan = _backends(data)["vulkan"]
    assert vulkan["state"] == "failed on this machine", vulkan
    assert str(log) in vulkan["reason"] and "ggml_backend_sched_graph_compute_async" in vulkan["reason"]
    assert (
        gfxgate_cli("doctor", "--root", str(root), "--log", str(log), "--fail-on", "vulkan", text=False).returncode == 1
    )


def test_the_readme_dropin_machine_loses_its_blocking_override(gfxgate_cli, tmp_path, built):
    root = machine(tmp_path / "m", "vega56", version="0.17.5", dropin=VEGA_DROPIN, built=built)
    data = doctor_json(gfxgate_cli, root)
    assert _blocking(data)  # the override and the access row
    rocm = _backends(data)["rocm"]
    first = next(s for s in rocm["steps"] if not s["done"])
    assert first["workaround"] == "remove-override"
    assert first["commands"][0] == "sudo sed -i '2d' /etc/systemd/system/ollama.service.d/override.conf"
    assert first["evidence"][0]["where"] == "/etc/systemd/system/ollama.service.d/override.conf:2"
    # the build step is the whole recipe at v0.17.5
    build = next(s for s in rocm["steps"] if s["workaround"].startswith("build-"))
    assert build["commands"][0].startswith("# install AMD's ROCm 6.3.3 HIP SDK")
    assert (
        "git clone --branch v0.17.5 --depth 1 https://github.com/ollama/ollama.git ollama-v0.17.5 && cd ollama-v0.17.5"
        in build["commands"]
    )
    assert any("-DAMDGPU_TARGETS=gfx900" in c for c in build["commands"])
    assert any(c.startswith("sudo cmake --install build --prefix /usr/local") for c in build["commands"])
    after = tmp_path / "after"
    shutil.copytree(root, after, symlinks=True)
    skipped = follow(after, rocm["steps"], {})
    assert all(
        c.startswith(("#", "git clone", "cmake ", "go build", "sudo cmake --install", "sudo cp ")) for c in skipped
    ), skipped
    assert "HSA_OVERRIDE_GFX_VERSION" not in (after / "etc/systemd/system/ollama.service.d/override.conf").read_text()
    again = doctor_json(gfxgate_cli, after)
    assert _blocking(again) == []
    assert "override" not in {r["layer"] for r in again["targets"][0]["rows"]}


def test_the_780m_at_v0_30_0_offline_follows_its_installed_rocblas(gfxgate_cli, tmp_path, built):
    root = machine(
        tmp_path / "m",
        "780m",
        version="0.30.0",
        runner="rocm_v7_2",
        render_members="ollama",
        rocblas_targets=("gfx1100", "gfx1101", "gfx1102"),
        built=built,
    )
    data = doctor_json(gfxgate_cli, root)
    report = data["targets"][0]
    assert report["matrix_from"] == "embedded timeline"  # offline, not the pin: the timeline's cell
    rocm = _backends(data)["rocm"]
    commands = "\n".join(c for s in rocm["steps"] for c in s["commands"])
    assert (
        'Environment="HSA_OVERRIDE_GFX_VERSION=11.0.0"' in commands and 'Environment="OLLAMA_IGPU_ENABLE=1"' in commands
    )
    step = next(s for s in rocm["steps"] if s["workaround"] == "hsa-override-11.0.0")
    assert step["evidence"][0]["where"] == "/usr/local/lib/ollama/rocm_v7_2/rocblas/library"
    assert step["evidence"][0]["note"] == "TensileLibrary_lazy_gfx1103.dat missing"
    assert (
        "override 11.0.0" in report["answer"]
        and "out of the box" not in report["answer"].split(":", 1)[1].split(";")[0]
    )
    after = tmp_path / "after"
    shutil.copytree(root, after, symlinks=True)
    assert follow(after, rocm["steps"], {}) == []
    again = doctor_json(gfxgate_cli, after)
    assert _blocking(again) == [] and _backends(again)["rocm"]["state"] == "runs"


@pytest.fixture(scope="session")
def sid_hip():
    """Debian sid's libggml0-backend-hip and librocblas4, real .deb contents (tests/debian.py; cached)."""
    from tests.debian import foreign_packages
    from tests.reallama import _required

    if not (shutil.which("apt-get") and shutil.which("dpkg")):
        _required("apt-get and dpkg are not installed")
    return foreign_packages("sid", ["libggml0-backend-hip", "librocblas4"], "apt-get", "dpkg")


@pytest.mark.slow
def test_debian_sid_llama_cpp_hip(gfxgate_cli, tmp_path, sid_hip):
    root = debian(tmp_path / "deb", sid_hip)
    (root / "etc/os-release").write_text('PRETTY_NAME="Debian GNU/Linux forky/sid"\nID=debian\n')
    data = doctor_json(gfxgate_cli, root)
    assert data["facts"]["layouts"] == ["debian"]
    rocm = next(r for r in data["facts"]["runners"] if r["backend"] == "rocm")
    assert rocm["installed"] and rocm["files"] == ["/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so"]
    rows = {r["layer"]: r for r in data["targets"][0]["rows"]}
    # gfxgate's own scanner reads the package's code objects: gfx900 is among the targets it was built for
    assert rows["installed-gpu-code"]["status"] == "allowed"
    assert rows["installed-gpu-code"]["evidence"][0]["where"].startswith(
        "/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so@0x"
    )
    assert data["installs"]["system_rocblas"] == ["/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"]
    assert rows["rocblas-artifacts"]["status"] == "allowed"
    vulkan = _backends(data)["vulkan"]
    assert vulkan["state"] == "not installed"
    assert _first_command(vulkan) == "sudo apt install libggml0-backend-vulkan mesa-vulkan-drivers"


@pytest.mark.slow
def test_the_debian_package_targets_in_the_rules_are_the_real_debs(gfxgate_cli, sid_hip):
    """rules/installs.yaml's packaged targets of libggml0-backend-hip and librocblas4 are what the .debs hold."""
    from gfxgate.datafiles import load_yaml
    from gfxgate.resources import rules_dir

    packaged = load_yaml(rules_dir() / "installs.yaml", "installs")["packaged"]
    hip = next(p for p in packaged if p["package"] == "libggml0-backend-hip")
    blas = next(p for p in packaged if p["package"] == "librocblas4")
    done = gfxgate_cli(
        "artifacts",
        "--format",
        "json",
        str(sid_hip / "usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so"),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(json.loads(done.stdout)["targets"]) == sorted(hip["targets"])
    lazy = sorted(
        p.name.removeprefix("TensileLibrary_lazy_").removesuffix(".dat")
        for p in (sid_hip / "usr/lib/x86_64-linux-gnu/rocblas").glob("*/library/TensileLibrary_lazy_*.dat")
    )
    assert lazy == sorted(blas["targets"])


def test_runtime_evidence_is_valid_and_carried_by_the_gfx900_answer(tmp_path):
    from gfxgate.machine import runtime_evidence, runtime_runs

    runs = runtime_runs()
    assert {r.id for r in runs} >= {
        "study-vega56-vulkan-qwen35",
        "study-vega56-rocm-qwen35",
        "study-vega56-vulkan-tinyllama",
        "h200-cuda-sweep",
        "h200-vulkan-sweep",
    }
    crash = next(r for r in runtime_evidence("gfx900", "vulkan") if r.outcome == "crashed")
    assert crash.sentence("0.32.15") == (
        "on a Radeon RX Vega 56 at ollama 0.17.4, Vulkan crashed at num_gpu ≥ 1 with qwen3.5:2b; "
        "not measured at v0.32.15: `gfxgate sweep` checks yours"
    )
    # the H200 figures are the committed sweep report's
    report = json.loads((Path(__file__).parents[2] / "samples/h200/sweep-report.json").read_text())
    for run in (r for r in runs if r.id.startswith("h200-")):
        cells = [c for c in report["cells"] if c["endpoint"] == run.backend]
        assert sorted(c["num_gpu"] for c in cells) == sorted(run.num_gpu)
        assert sum(c["passes"] for c in cells) == run.passed


def test_doctor_text_fits_80_columns_with_the_answer_first(gfxgate_cli, tmp_path):
    import os

    root = machine(tmp_path / "m", "vega56", version="0.17.5", dropin=VEGA_DROPIN)
    done = gfxgate_cli("doctor", "--root", str(root), "--format", "text", env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    answer = next(
        i for i, line in enumerate(lines) if line.startswith("The answer for Radeon RX Vega 56: gfx900 at v0.17.5")
    )
    assert answer < lines.index("GPUs") and all(not line.startswith("- ") for line in lines[:answer])
    assert any(line.endswith("…") for line in lines)  # the layers' "why", cut where it does not fit
    assert "\x1b[" not in done.stdout  # not a terminal: no colour
    # a command is wrapped, never cut: every word of it is there
    text = " ".join(done.stdout.split())
    assert "sudo sed -i '2d' /etc/systemd/system/ollama.service.d/override.conf" in text


def test_doctor_text_is_coloured_on_request():
    from gfxgate.doctor.model import BackendVerdict, MachineReport, TargetReport
    from gfxgate.doctor.render import render
    from gfxgate.host.install import Installs

    report = MachineReport(
        root="/",
        gpus=(),
        amdgpu_loaded=True,
        installs=Installs((), (), (), (), ()),
        unit=None,
        targets=(
            TargetReport(
                "gfx900",
                "Radeon RX Vega 56",
                "0.32.15",
                "embedded timeline",
                (),
                (BackendVerdict("vulkan", "Vulkan", "not installed", "Vulkan (default)"),),
                "On this machine: Vulkan not installed \x1b[31m",
            ),
        ),
    )
    coloured = render(report, "text", width=80, color=True)
    plain = render(report, "text", width=80, color=False)
    assert "\x1b[" in coloured and "\x1b[" not in plain
    import re

    bare = re.sub(r"\x1b\[[0-9;]*m", "", coloured)  # the SGR codes the formatter wrote
    assert bare == plain
    assert "Vulkan not installed ␛[31m" in plain  # the report's own text is inert


def test_diagnose_on_a_v0_32_15_vega_log(gfxgate_cli, tmp_path):
    """The override to gfx906 comes after the copy step (v0.32.15 ships no gfx906), and the log's Vulkan that was on
    and offered no GPU is said."""
    log = tmp_path / "ollama.log"
    log.write_text("\n".join(logs.ollama_0_32()) + "\n")
    done = gfxgate_cli("diagnose", str(log), "--format", "json")
    data = json.loads(done.stdout)["logs"][0]
    rocblas = next(f for f in data["findings"] if f["layer"] == "discovery" and f["target"] == "gfx900")
    assert rocblas["workarounds"] == ["copy-rocblas-tensile", "hsa-override-9.0.6"]
    assert any("ollama v0.32.15 does not ship gfx906 either" in c for c in rocblas["context"])
    assert any(
        n.startswith(f"OLLAMA_VULKAN was on ({log}:1), yet discovery listed no Vulkan GPU") for n in data["notes"]
    )


def test_scan_never_says_nothing_to_change_to_a_log_on_the_cpu(gfxgate_cli, tmp_path):
    import os

    log = tmp_path / "ollama.log"
    log.write_text("\n".join(logs.ollama_0_32()) + "\n")
    done = gfxgate_cli(
        "scan", "--target", "auto", "--log", str(log), "--format", "text", env={**os.environ, "COLUMNS": "100"}
    )
    assert done.returncode in (0, 1), done.stderr
    assert "nothing to change" not in done.stdout
    # the log's runs are an input of the answer (answer.route.with_machine, issue 37 item 1): Vulkan, on and offering
    # no GPU, "ran on the CPU" on this machine, so the answer leads with the backend the runs did not refute
    assert "on this machine: ran on the CPU — OLLAMA_VULKAN was on" in " ".join(done.stdout.split())
    assert "The answer for gfx900 at v0.32.15: ROCm: build + rocBLAS files" in done.stdout
    data = json.loads(gfxgate_cli("scan", "--target", "auto", "--log", str(log), "--format", "json").stdout)
    vulkan = next(b for b in data["routes"][0]["backends"] if b["backend"] == "vulkan")
    assert vulkan["machine"]["state"] == "ran on the CPU" and data["routes"][0]["best"]["backend"] == "rocm"


def test_a_sweep_that_saw_vulkan_crash_makes_it_failed_on_this_machine(gfxgate_cli, tmp_path):
    """The study's shape as a sweep worklog: Vulkan crashed at every num_gpu ≥ 1, ROCm ran."""
    from benchmarks.fuzz import sweep_record
    from gfxgate.sweep.worklog import WorklogWriter

    root = machine(
        tmp_path / "m",
        "vega56",
        version="0.17.5",
        render_members="ollama",
        dropin='[Service]\nEnvironment="OLLAMA_VULKAN=1"\n',
    )
    worklog = tmp_path / "gfxgate-sweep.jsonl"
    with WorklogWriter(worklog) as writer:
        for n in (0, 1, 2):
            extra = (
                {"phase": {"phase": "compute", "reason": "SIGSEGV in ggml_backend_sched_graph_compute_async"}}
                if n
                else {}
            )
            writer.append(sweep_record(n, "ok" if n == 0 else "crash", "vulkan", **extra))
            writer.append(sweep_record(n, "ok", "rocm"))
    data = doctor_json(gfxgate_cli, root, "--runtime", str(worklog))
    backends = _backends(data)
    vulkan = backends["vulkan"]
    assert vulkan["state"] == "failed on this machine"
    assert (
        "sweep run r1: crash at num_gpu 1 (m), compute: SIGSEGV in ggml_backend_sched_graph_compute_async; "
        "llama runner process has terminated"
    ) in vulkan["reason"]
    assert f"{worklog}:3 (run r1)" in vulkan["reason"]
    assert backends["rocm"]["state"] != "failed on this machine"
    assert (
        gfxgate_cli(
            "doctor", "--root", str(root), "--runtime", str(worklog), "--fail-on", "vulkan", text=False
        ).returncode
        == 1
    )


def test_scan_of_gfx900_carries_the_studys_run(gfxgate_cli):
    import os

    done = gfxgate_cli("scan", "-t", "gfx900", "--format", "text", env={**os.environ, "COLUMNS": "250"})
    line = next(x for x in done.stdout.splitlines() if x.startswith("  recorded: "))
    assert line == (
        "  recorded: on a Radeon RX Vega 56 at ollama 0.17.4, Vulkan crashed at num_gpu ≥ 1 with qwen3.5:2b; "
        "not measured at v0.32.15: `gfxgate sweep` checks yours (the same card ran tinyllama 20/20 on it: "
        "model dependent)"
    )
    assert done.stdout.index("The answer for gfx900") < done.stdout.index(line) < done.stdout.index("Layer ")


def test_scan_prints_the_build_recipe_doctor_follows(gfxgate_cli, tmp_path, built):
    """One computation, many views: the ROCm build step of `scan` carries the same recipe (answer/steps.py:
    build_recipe) as doctor's build step on a machine at that version; scan, without a machine, has the generic SDK
    line, and an NVIDIA build step no ROCm recipe."""
    scan = json.loads(gfxgate_cli("scan", "-t", "gfx900", "--ref", "ollama=v0.17.5", "--format", "json").stdout)
    steps = [s for r in scan["routes"] for b in r["backends"] if b.get("option") for s in b["option"]["steps"]]
    build = next(s for s in steps if s["workaround"] == "build-amdgpu-targets")
    assert build["recipe"][0].startswith("# install AMD's ROCm 6.3.3 HIP SDK")
    assert (
        "git clone --branch v0.17.5 --depth 1 https://github.com/ollama/ollama.git ollama-v0.17.5 && cd ollama-v0.17.5"
        in build["recipe"]
    )
    assert any(line.startswith(build["setting"]) for line in build["recipe"])
    root = machine(tmp_path / "m", "vega56", version="0.17.5", dropin=VEGA_DROPIN, built=built)
    rocm = _backends(doctor_json(gfxgate_cli, root))["rocm"]
    commands = next(s for s in rocm["steps"] if s["workaround"].startswith("build-"))["commands"]
    assert list(commands) == list(build["recipe"])  # the same machine-less lines: this capture names no distribution
    nvidia = json.loads(gfxgate_cli("scan", "-t", "sm_53", "--format", "json").stdout)  # 5.3: a build of its own
    cuda = [s for r in nvidia["routes"] for b in r["backends"] if b.get("option") for s in b["option"]["steps"]]
    assert [s["workaround"] for s in cuda] == ["build-cuda-architectures"] and cuda[0]["recipe"] == []
