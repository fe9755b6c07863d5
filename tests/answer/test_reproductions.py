"""Issue 24 reproductions 1–7 and 10 ("the answer follows from the evidence"), through the installed console script.

Each test replays the reproduction's command line and asserts the answer the sources give, not the one the old
fixed strings gave: the files a step copies are the target's, an override names shipped code or says what it also
needs, a remedy says what the release at the log's version does, an installed tree that satisfies a step drops it
with the file@offset, a runtime row judges only the route it ran, and a command that cannot read what it needs
exits 5 with the --source to give instead of answering from nothing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_LOG = ROOT / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log"


def run(exe: str, *args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    full = {**os.environ, **(env or {})}
    return exe(*args, timeout=120, env=full, cwd=cwd)


def scan_json(exe: str, *args: str) -> dict:
    result = run(exe, "scan", *args, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def cell(data: dict, layer: str, target: str) -> dict:
    row = next(row for row in data["layers"] if row["id"] == layer)
    return row["cells"][data["targets"].index(target)]


def route_of(data: dict, target: str) -> dict:
    return next(r for r in data["routes"] if r["target"] == target)


def steps_of(route: dict) -> dict[str, str]:
    return {s["workaround"]: s["setting"] for b in route["backends"] if b["option"] for s in b["option"]["steps"]}


# -- 1: the files a step copies are the target's own ------------------------------------------------------------
@pytest.mark.parametrize("target", ["gfx906", "gfx906:xnack+", "gfx900"])
def test_1_copy_step_names_the_targets_own_rocblas_files(gfxgate_cli, target):
    data = scan_json(gfxgate_cli, "-t", target, "--ref", "ollama=v0.17.5")  # the study's release: -DAMDGPU_TARGETS
    steps = steps_of(route_of(data, target))
    processor = target.split(":")[0]
    assert f"*{processor}*" in steps["copy-rocblas-tensile"], steps
    other = {"gfx906": "gfx900", "gfx900": "gfx906"}[processor]
    assert other not in steps["copy-rocblas-tensile"] and other not in steps["build-amdgpu-targets"], steps
    assert f"-DAMDGPU_TARGETS={target} " in steps["build-amdgpu-targets"], steps
    md = run(gfxgate_cli, "scan", "-t", target, "--ref", "ollama=v0.17.5").stdout
    step_lines = [line for line in md.splitlines() if line.lstrip().startswith("- step ")]
    # the copy names no folder that may lack the files: "$ROCBLAS", a rocBLAS of the bundled version (issue 37 item 6)
    assert any(
        f'cp "$ROCBLAS"/library/\\*{processor}\\* ' in line or f'cp "$ROCBLAS"/library/*{processor}* ' in line
        for line in step_lines
    ), step_lines
    assert not any(other in line.split("`")[1] for line in step_lines), (
        step_lines
    )  # no step's setting names another target


# -- 2: an override names a target whose files the same release ships, or says what it also needs ---------------
def test_2_override_remedy_at_v0175_says_gfx906_is_deleted_too(gfxgate_cli):
    data = scan_json(gfxgate_cli, "-t", "gfx900", "--ref", "ollama=v0.17.5")
    assert data["sources"][0]["ref"] == "v0.17.5" or any(s["ref"] == "v0.17.5" for s in data["sources"])
    packaging = cell(data, "release-packaging", "gfx900")
    assert "HSA_OVERRIDE_GFX_VERSION=9.0.6" in packaging["remedy"]
    # the same release's Dockerfile deletes *gfx90[06]*: the remedy cites gfx906's own refusing cell and what it needs
    assert "does not ship gfx906 either" in packaging["remedy"], packaging["remedy"]
    assert "release-packaging blocked for gfx906 at ollama@v0.17.5:Dockerfile:97" in packaging["remedy"]
    assert "also needs gfx906's rocBLAS files" in packaging["remedy"]
    # and the answer does not offer the override as a route of its own
    rocm = next(b for b in route_of(data, "gfx900")["backends"] if b["backend"] == "rocm")
    assert rocm["option"]["route"] != "rocm-override"


def test_2_override_route_where_the_release_ships_the_posed_target(gfxgate_cli):
    """gfx1031 → 10.3.0 (gfx1030): v0.17.5 ships gfx1030's code and files, so the override is a route by itself."""
    data = scan_json(gfxgate_cli, "-t", "gfx1031", "--ref", "ollama=v0.17.5")
    rocm = next(b for b in route_of(data, "gfx1031")["backends"] if b["backend"] == "rocm")["option"]
    assert rocm["route"] == "rocm-override" and rocm["override_target"] == "gfx1030"
    assert [s["setting"] for s in rocm["steps"]] == ["HSA_OVERRIDE_GFX_VERSION=10.3.0"]
    assert "does not ship" not in run(gfxgate_cli, "scan", "-t", "gfx1031", "--ref", "ollama=v0.17.5").stdout


@pytest.mark.parametrize("listed, kept", [("[gfx1030 gfx1100]", False), ("[gfx1030 gfx1100 gfx906]", True)])
def test_2_diagnose_offers_no_override_to_a_target_the_line_says_is_not_there(gfxgate_cli, tmp_path, listed, kept):
    """A discovery rejection that lists what the installed library supports: 9.0.6 (gfx906) is offered only where
    gfx906 is listed; otherwise the finding says why it was left out."""
    log = tmp_path / "ollama.log"
    log.write_text(
        'time=2025-10-05T10:00:00.512+02:00 level=INFO source=routes.go:1528 msg="Listening on 127.0.0.1:11434 (version 0.12.3)"\n'
        f'time=2025-10-05T10:00:01.100+02:00 level=WARN source=amd_linux.go:380 msg="amdgpu is not supported (supported types:{listed})" gpu_type=gfx900 gpu=0 library=/usr/lib/ollama/rocm\n'
    )
    data = json.loads(run(gfxgate_cli, "diagnose", str(log), "--format", "json", "--no-upstream").stdout)
    finding = next(f for d in data["logs"] for f in d["findings"] if f["message"] == "ollama-amdgpu-not-supported")
    assert ("hsa-override-9.0.6" in finding["workarounds"]) is kept, finding["workarounds"]
    assert "copy-rocblas-tensile" in finding["workarounds"]
    assert any("9.0.6 left out: it selects gfx906" in c for c in finding["context"]) is not kept


# -- 3: a remedy is a template filled from the facts of the log's release ---------------------------------------
def test_3_rocblas_remedy_says_what_v0123_does_not_a_fixed_claim(gfxgate_cli):
    result = run(gfxgate_cli, "diagnose", str(SAMPLE_LOG), "--format", "json", "--no-upstream")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    finding = next(f for d in data["logs"] for f in d["findings"] if f["message"] == "rocblas-tensile-missing")
    assert "release packages delete them" not in finding["remedy"]
    assert "ollama v0.12.3's release deletes no rocBLAS file for gfx900" in finding["remedy"], finding["remedy"]
    assert "{" not in finding["remedy"]


def test_3_the_same_remedy_at_a_release_that_deletes_the_files(gfxgate_cli, tmp_path):
    log = tmp_path / "ollama-0.17.5.log"
    log.write_text(SAMPLE_LOG.read_text().replace("(version 0.12.3)", "(version 0.17.5)"))
    result = run(gfxgate_cli, "diagnose", str(log), "--format", "json", "--no-upstream")
    data = json.loads(result.stdout)
    finding = next(f for d in data["logs"] for f in d["findings"] if f["message"] == "rocblas-tensile-missing")
    assert "ollama v0.17.5's release deletes them (release-packaging blocked" in finding["remedy"], finding["remedy"]


def test_3_a_crash_while_loading_is_not_explained_with_compute_frames(gfxgate_cli):
    data = json.loads(run(gfxgate_cli, "diagnose", str(SAMPLE_LOG), "--format", "json", "--no-upstream").stdout)
    crash = next(f for d in data["logs"] for f in d["findings"] if f["message"] == "go-signal-crash")
    assert "phase: load" in crash["context"]
    assert "compute frames" not in crash["remedy"] and "while loading the model" in crash["remedy"], crash["remedy"]


def test_3_every_remedy_placeholder_is_a_known_fact():
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.remedy import FIELDS, placeholders

    for message in default_catalogue().messages:
        assert set(placeholders(message.remedy or "")) <= set(FIELDS), message.id


def test_3_a_catalogue_remedy_with_an_unknown_placeholder_is_refused(tmp_path):
    text = (ROOT / "rules" / "messages.yaml").read_text()
    bad = tmp_path / "messages.yaml"
    bad.write_text(text.replace("{crash_phase}: switch backend", "{c_field}: switch backend", 1))
    from gfxgate.diagnose.catalogue import load as load_catalogue
    from gfxgate.errors import RuleError

    with pytest.raises(RuleError, match=r"unknown placeholder \{c_field\}"):
        load_catalogue(bad)


# -- 4: a runtime row confirms or refutes only the backend route it exercised ----------------------------------
@pytest.mark.slow
def test_4_cpu_only_endpoint_is_not_a_failing_gpu_backend(reallama_vulkan, tmp_path, gfxgate_cli):
    """A real sweep (Debian sid llama-server, Vulkan on lavapipe) with --gpu-target gfx900: a CPU-only endpoint
    (`--device none`) and a Vulkan endpoint, both answering every cell. The servers run one compute thread and get
    a 1-token prompt (test_sweep_llamaserver's ``server`` and ``SHORT_PROMPT``: a thread per core spins at every
    barrier, a batch-sized prompt makes lavapipe compile its matrix-multiply pipelines, seconds of CPU a run); the
    runtime row reads which route answered, not how fast or on how long a prompt. num_gpu 0 and 1: the reproduction
    was "cpu fails with num_gpu ≠ 0"; one layer on lavapipe is 0.1-0.2 s of CPU a run, every layer 1-1.5 s."""
    import shlex

    from tests.sweep.test_sweep_llamaserver import SHORT_PROMPT, server, sweep

    worklog = tmp_path / "w.jsonl"
    servers = {
        "cpu": server(reallama_vulkan, "vulkan", "--device", "none"),
        "vulkan": server(reallama_vulkan, "vulkan"),
    }
    sweep(worklog, servers, reallama_vulkan.model, *SHORT_PROMPT, num_gpu=(0, 1))
    assert shlex.join(servers["cpu"]).endswith("--device none")
    data = scan_json(gfxgate_cli, "-t", "gfx900", "--runtime", str(worklog))
    runtime = cell(data, "runtime", "gfx900")
    assert runtime["status"] == "allowed", runtime
    assert "cpu fails" not in runtime["summary"] and "vulkan" in runtime["summary"]
    route = route_of(data, "gfx900")
    assert route["best"]["backend"] == "vulkan"
    assert route["runtime"]["outcome"] == "confirmed", route["runtime"]  # was "partly confirmed"
    assert route["runtime"]["summary"].startswith("Vulkan runtime allowed")
    report = run(gfxgate_cli, "sweep", "report", str(worklog), "--format", "json")
    assert report.returncode == 0, report.stderr


# -- 5: a log's version is the version judged, or the mismatch is said; a log judges only its own backend -------
def test_5_log_of_0123_says_the_version_and_leaves_the_vulkan_route_unjudged(gfxgate_cli):
    data = scan_json(gfxgate_cli, "--target", "auto", "--log", str(SAMPLE_LOG), "--ref", "ollama=v0.17.5")
    route = route_of(data, "gfx900")
    assert route["version"] == "v0.17.5" and route["best"]["backend"] == "vulkan"
    runtime = route["runtime"]
    assert runtime["outcome"] == "not measured", runtime  # was "refuted": the log never ran Vulkan
    assert runtime["summary"].startswith("the runtime ran ollama 0.12.3, this answer is for v0.17.5")
    assert "--ref ollama=v0.12.3" in runtime["summary"] and "exercised ROCm (blocked" in runtime["summary"]
    md = run(gfxgate_cli, "scan", "--target", "auto", "--log", str(SAMPLE_LOG), "--ref", "ollama=v0.17.5").stdout
    assert "run refuted" not in md and "compute frames" not in md


def test_5_a_log_of_the_judged_version_says_no_mismatch(gfxgate_cli, tmp_path):
    log = tmp_path / "ollama-0.17.5.log"
    log.write_text(SAMPLE_LOG.read_text().replace("(version 0.12.3)", "(version 0.17.5)"))
    runtime = route_of(
        scan_json(gfxgate_cli, "--target", "auto", "--log", str(log), "--ref", "ollama=v0.17.5"), "gfx900"
    )["runtime"]
    assert not runtime["summary"].startswith("the runtime ran ollama"), runtime


# -- 6: a step the installed tree already satisfies is dropped, citing the file@offset -------------------------
@pytest.fixture(scope="module")
def installed_gfx900(built, rocblas_folder, tmp_path_factory) -> Path:
    """An installed tree as a user's own build leaves it: libggml-hip.so with gfx900 code (clang-19) and rocBLAS
    files for gfx900 (real code objects named as rocBLAS names them)."""
    import shutil

    root = tmp_path_factory.mktemp("installed") / "lib" / "ollama"
    shutil.copytree(rocblas_folder / "rocblas", root / "rocm" / "rocblas")
    shutil.copy(built.hip_so("libggml-hip.so", archs=("gfx900",)), root / "libggml-hip.so")
    return root.parent


def test_6_installed_build_satisfies_the_build_and_copy_steps(gfxgate_cli, installed_gfx900):
    data = scan_json(gfxgate_cli, "-t", "gfx900", "--installed", str(installed_gfx900))
    assert cell(data, "rocblas-artifacts", "gfx900")["status"] == "allowed"
    assert cell(data, "installed-gpu-code", "gfx900")["status"] == "allowed"
    rocm = next(b for b in route_of(data, "gfx900")["backends"] if b["backend"] == "rocm")["option"]
    assert rocm["route"] == "rocm-build" and rocm["label"] == "ROCm: the installed build", rocm["label"]
    assert rocm["steps"] == []
    done = {s["workaround"]: s for s in rocm["satisfied"]}
    assert set(done) == {"build-amdgpu-targets", "copy-rocblas-tensile"}
    assert done["build-amdgpu-targets"]["layer"] == "installed-gpu-code"
    assert any("libggml-hip.so@0x" in e["where"] for e in done["build-amdgpu-targets"]["evidence"])
    assert any("Kernels.so-000-gfx900.hsaco@0x" in e["where"] for e in done["copy-rocblas-tensile"]["evidence"])
    md = run(gfxgate_cli, "scan", "-t", "gfx900", "--installed", str(installed_gfx900)).stdout
    assert "build + rocBLAS files" not in md
    assert "already done: copy-rocblas-tensile — the installed tree's rocblas-artifacts row is allowed" in md


def test_6_a_tree_with_another_targets_rocblas_files_keeps_the_copy_step(gfxgate_cli, built, tmp_path):
    import shutil

    import msgpack

    root = tmp_path / "lib" / "ollama"
    library = root / "rocm" / "rocblas" / "library"
    library.mkdir(parents=True)
    shutil.copy(built.hip_so("libggml-hip.so", archs=("gfx900",)), root / "libggml-hip.so")
    shutil.copy(built.code_object("gfx1030"), library / "Kernels.so-000-gfx1030.hsaco")
    (library / "TensileLibrary_lazy_gfx1030.dat").write_bytes(msgpack.packb({"library": {"type": "Hardware"}}))
    data = scan_json(gfxgate_cli, "-t", "gfx900", "--installed", str(tmp_path / "lib"))
    assert cell(data, "rocblas-artifacts", "gfx900")["status"] != "allowed"
    rocm = next(b for b in route_of(data, "gfx900")["backends"] if b["backend"] == "rocm")
    option = rocm["option"]
    assert option is not None, (rocm, cell(data, "rocblas-artifacts", "gfx900"))
    assert [s["workaround"] for s in option["steps"]] == ["copy-rocblas-tensile"], option
    assert "*gfx900*" in option["steps"][0]["setting"]
    assert [s["workaround"] for s in option["satisfied"]] == ["build-amdgpu-targets"]
    assert option["label"] == "ROCm: rocBLAS files"


# -- 7: `workarounds -t` and the scan's route step show the same setting ----------------------------------------
def test_7_workarounds_and_scan_show_the_same_vulkan_setting(gfxgate_cli, tmp_path):
    scan = steps_of(route_of(scan_json(gfxgate_cli, "-t", "gfx900", "--ref", "ollama=v0.17.5"), "gfx900"))
    result = run(
        gfxgate_cli,
        "workarounds",
        "-t",
        "gfx900",
        "--format",
        "json",
        "--offline",
        "--ref",
        "ollama=v0.17.5",
        "--source",
        f"ollama={_ollama_fixture(tmp_path)}",
    )
    assert result.returncode == 0, result.stderr
    listed = {w["id"]: w["setting"] for w in json.loads(result.stdout)["workarounds"]}
    assert scan["ollama-vulkan"] == "OLLAMA_VULKAN=1"
    for workaround, setting in scan.items():
        assert listed[workaround] == setting, (workaround, listed[workaround], setting)


def _ollama_fixture(tmp_path: Path, tag: str = "v0.17.5") -> Path:
    """A real git repository tagged ``tag`` (the study's release by default), so `workarounds` can check its
    entries there."""
    from tests.gitrepos import commit_tree, new_repo

    repo = new_repo(tmp_path / "ollama")
    commit_tree(
        repo,
        {
            "envconfig/config.go": 'package envconfig\n\nvar Vulkan = Bool("OLLAMA_VULKAN")\n',
            "Dockerfile": "RUN rm -f dist/lib/ollama/rocm/rocblas/library/*gfx90[06]*\n",
        },
        "pinned",
        tag=tag,
    )
    return tmp_path / "ollama"


# -- 10: never answer from nothing ------------------------------------------------------------------------------
def test_10_workarounds_offline_without_ollama_exits_5_naming_the_source(gfxgate_cli, tmp_path):
    """At a version nothing embedded holds (issue 36 item 8: at the pins', a pin set's and every release of the
    embedded timeline, the embedded evidence answers: tests/answer/test_answer_items.py)."""
    result = run(
        gfxgate_cli,
        "workarounds",
        "-t",
        "gfx900",
        "--offline",
        "--ref",
        "ollama=v0.99.0",
        env={"GFXGATE_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.returncode == 5, (result.returncode, result.stdout[:300])
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2 and "--source ollama=CLONE" in lines[0], lines


def test_10_no_placeholder_reaches_any_output(gfxgate_cli):
    for args in (["scan", "-t", "gfx900,gfx906,gfx1031"], ["diagnose", str(SAMPLE_LOG), "--no-upstream"]):
        out = run(gfxgate_cli, *args).stdout
        assert not re.search(
            r"\{(?:target|processor|version|release_rocblas|crash_phase|c_field|json_key|go_field)\}", out
        ), args


def _offline_env(tmp_path: Path) -> dict:
    """An empty cache and offline: no source can be read unless given with --source."""
    return {"GFXGATE_CACHE_DIR": str(tmp_path / "empty-cache"), "GFXGATE_OFFLINE": "1"}


def _one_error_line(result: subprocess.CompletedProcess, source: str) -> None:
    """Exit 5, nothing on stdout, one line naming ``--source SOURCE=CLONE`` (``source`` may be a regex of names: at
    today's pin the first source a live scan opens can be clr, coupled by ollama's Dockerfile)."""
    assert result.returncode == 5, (result.returncode, result.stdout[:400], result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) <= 2 and re.search(f"--source (?:{source})=CLONE", lines[0]) and "Traceback" not in result.stderr
    ), lines


def test_10_trace_offline_without_sources_exits_5_not_placeholders(gfxgate_cli, tmp_path):
    result = run(gfxgate_cli, "trace", "num_gpu", env=_offline_env(tmp_path))
    _one_error_line(result, "ollama-python")  # was: "Sources: none readable", "{c_field}", exit 0


def test_10_trace_with_sources_shows_no_placeholder(gfxgate_cli, upstream):
    env = {
        "GFXGATE_SOURCE_OLLAMA": str(upstream / "ollama"),
        "GFXGATE_SOURCE_LLAMA_CPP": str(upstream / "llama.cpp"),
        "GFXGATE_OFFLINE": "1",
    }
    result = run(gfxgate_cli, "trace", "num_gpu", "--ref", "ollama=v0.12.3", env=env)
    if result.returncode == 5:  # ollama-python is not among the fixture repositories: the line names it
        _one_error_line(result, "ollama-python")
    else:
        assert result.returncode == 0, result.stderr
        assert not re.search(r"\{[a-z_]+\}", result.stdout)


def test_10_messages_offline_without_ollama_exits_5(gfxgate_cli, tmp_path):
    _one_error_line(run(gfxgate_cli, "messages", env=_offline_env(tmp_path)), "ollama")


def test_10_scan_live_offline_without_clones_exits_5(gfxgate_cli, tmp_path):
    _one_error_line(
        run(gfxgate_cli, "scan", "--live", "-t", "gfx900", env=_offline_env(tmp_path)), "ollama|clr|rocm-docs"
    )


def test_10_check_without_sources_fails_closed(gfxgate_cli, tmp_path):
    """A PR check that cannot read ollama exits 5; it used to drop ollama, say "No cell changed status", exit 0."""
    from tests.gitrepos import commit_tree, new_repo

    pins = (ROOT / "rules" / "pins.toml").read_text()
    repo = new_repo(tmp_path / "project")
    commit_tree(repo, {"rules/pins.toml": pins}, "base")
    commit_tree(repo, {"rules/pins.toml": pins + "\n# a change\n"}, "change")
    result = run(
        gfxgate_cli,
        "check",
        "--base-ref",
        "HEAD~1",
        "-t",
        "gfx900",
        "--pins",
        str(tmp_path / "project" / "rules" / "pins.toml"),
        env=_offline_env(tmp_path),
        cwd=tmp_path / "project",
    )
    _one_error_line(result, "ollama|clr|rocm-docs")


def test_10_diff_of_a_side_that_could_not_read_ollama_fails_closed(gfxgate_cli, tmp_path):
    good = run(gfxgate_cli, "scan", "-t", "gfx900", "--format", "json").stdout
    data = json.loads(good)
    for layer in data["layers"]:
        for c in layer["cells"]:
            if c["evidence"] and c["evidence"][0]["where"].startswith("ollama@"):
                c.update(
                    status="unknown",
                    evidence=[],
                    remedy=None,
                    workarounds=[],
                    summary="unknown",
                    reason="source not available: ollama: no cached clone of https://github.com/ollama/ollama.git, "
                    "and this run is offline (it clones nothing)",
                )
    (tmp_path / "old.json").write_text(json.dumps(data))
    (tmp_path / "new.json").write_text(good)
    result = run(gfxgate_cli, "diff", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    _one_error_line(result, "ollama")
    same = run(gfxgate_cli, "diff", str(tmp_path / "new.json"), str(tmp_path / "new.json"))
    assert same.returncode == 0, same.stderr


def test_10_a_source_that_cannot_be_opened_is_tried_once_per_run(gfxgate_cli, tmp_path):
    """`workarounds` checks several entries in rocm-docs and ollama-python: each unreadable source is cloned once,
    not once per entry (the run used to spend seconds on repeated clone attempts)."""
    trace = tmp_path / "git-trace"
    env = {
        "GFXGATE_CACHE_DIR": str(tmp_path / "cache"),
        "GIT_TRACE": str(trace),
        "GFXGATE_SOURCE_ROCM_DOCS": f"file://{tmp_path}/no-such-rocm.git",
        "GFXGATE_SOURCE_OLLAMA_PYTHON": f"file://{tmp_path}/no-such-python.git",
    }
    result = run(
        gfxgate_cli,
        "workarounds",
        "--format",
        "json",
        "--ref",
        "ollama=v0.17.5",
        "--source",
        f"ollama={_ollama_fixture(tmp_path)}",
        env=env,
    )
    assert result.returncode == 0, result.stderr
    states = {w["id"]: w["state"] for w in json.loads(result.stdout)["workarounds"]}
    assert states["hsa-enable-sdma-0"] == "unknown"  # rocm-docs could not be read: said per entry, with the reason
    clones = [line for line in trace.read_text().splitlines() if " clone " in line and "trace: built-in" in line]
    for name in ("no-such-rocm.git", "no-such-python.git"):
        assert sum(name in line for line in clones) == 1, [line for line in clones if name in line]


# -- diagnose at the log's version: no workaround the release does not have, no backend it does not build ---------
def _findings(exe: str, log: Path) -> dict[str, dict]:
    result = run(exe, "diagnose", str(log), "--format", "json", "--no-upstream")
    assert result.returncode == 0, result.stderr
    return {f["message"]: f for d in json.loads(result.stdout)["logs"] for f in d["findings"]}


def _log_at(tmp_path: Path, version: str) -> Path:
    log = tmp_path / f"ollama-{version}.log"
    log.write_text(SAMPLE_LOG.read_text().replace("(version 0.12.3)", f"(version {version})"))
    return log


def test_5_a_crash_at_v0123_offers_no_vulkan_the_release_does_not_build(gfxgate_cli):
    """v0.12.3 builds no Vulkan backend (the timeline's vulkan row is blocked there: no ggml-vulkan sources, no preset,
    nothing shipped; v0.12.6 builds it, but the Linux archives have it from v0.13.0 — issue 36): the crash's remedy
    does not say "switch to Vulkan" of that release, and the
    OLLAMA_VULKAN entry (the Vulkan opt-in route's step) is left out with the reason."""
    crash = _findings(gfxgate_cli, SAMPLE_LOG)["go-signal-crash"]
    assert "ollama-vulkan" not in crash["workarounds"], crash
    assert "num-gpu-0" in crash["workarounds"]
    assert "(ROCm vs Vulkan)" not in crash["remedy"], crash["remedy"]
    assert (
        "ollama v0.12.3 has no Vulkan backend for gfx900: vulkan blocked, ollama v0.1.18 … v0.12.3" in crash["remedy"]
    ), crash["remedy"]
    assert "the Vulkan backend of ollama v0.13.0 or newer" in crash["remedy"], crash["remedy"]
    assert (
        "ollama-vulkan left out: a step of the route 'Vulkan: OLLAMA_VULKAN=1', which ollama v0.12.3 cannot give gfx900 "
        "whatever the steps do (vulkan blocked: ollama v0.1.18 … v0.12.3 in gfxgate's timeline"
    ) in "\n".join(crash["context"])


def test_5_a_crash_at_v0127_offers_no_vulkan_the_archives_do_not_ship(gfxgate_cli, tmp_path):
    """Issue 36: v0.12.6-v0.12.10 build Vulkan on by default, but their Linux tarballs come from the Docker target
    archive_novulkan: the remedy does not send the user to a Vulkan the installed archive does not have."""
    crash = _findings(gfxgate_cli, _log_at(tmp_path, "0.12.7"))["go-signal-crash"]
    assert "ollama-vulkan" not in crash["workarounds"], crash
    assert "the Vulkan backend of ollama v0.13.0 or newer" in crash["remedy"], crash["remedy"]
    assert "ollama v0.12.7 has no Vulkan backend for gfx900" in crash["remedy"], crash["remedy"]


@pytest.mark.parametrize(
    "version, phrase",
    [
        ("0.30.0", "the Vulkan backend (ollama v0.30.0 turns it on by default: vulkan allowed"),
        ("0.17.5", "the Vulkan backend with OLLAMA_VULKAN=1 (ollama v0.17.5 ships it off: vulkan override-required"),
    ],
)
def test_5_a_crash_where_the_release_has_vulkan_says_how_to_reach_it(gfxgate_cli, tmp_path, version, phrase):
    crash = _findings(gfxgate_cli, _log_at(tmp_path, version))["go-signal-crash"]
    assert "ollama-vulkan" in crash["workarounds"], crash
    assert phrase in crash["remedy"], crash["remedy"]
    assert "{" not in crash["remedy"]


def test_2_diagnose_at_v0175_says_the_override_needs_gfx906s_files_too(gfxgate_cli, tmp_path):
    """The scan's remedy at v0.17.5 says 9.0.6 is no help by itself (the release deletes *gfx90[06]* and builds no
    gfx906); diagnose on a log of the same release says the same, from the timeline's gfx906 row, in the same words."""
    finding = _findings(gfxgate_cli, _log_at(tmp_path, "0.17.5"))["rocblas-tensile-missing"]
    said = "\n".join(finding["context"])
    assert (
        "HSA_OVERRIDE_GFX_VERSION=9.0.6: ollama v0.17.5 does not ship gfx906 either (cmake-presets blocked for gfx906 "
        in said
    ), finding["context"]
    assert "release-packaging blocked for gfx906" in said and "set at ollama@v0.12.4:Dockerfile:83" in said
    assert (
        said.count(
            "the override also needs gfx906's rocBLAS files (Kernels.so-000-gfx906*.hsaco, TensileLibrary_*gfx906*) "
            "and a build with gfx906 code"
        )
        == 1
    )
    scan = scan_json(gfxgate_cli, "-t", "gfx900", "--ref", "ollama=v0.17.5")
    assert (
        "the override also needs gfx906's rocBLAS files (Kernels.so-000-gfx906\\*.hsaco" not in said
    )  # no Markdown escapes
    assert (
        "also needs gfx906's rocBLAS files (Kernels.so-000-gfx906*.hsaco, TensileLibrary_*gfx906*) and a build with gfx906 code"
        in cell(scan, "release-packaging", "gfx900")["remedy"]
    )
    at_0123 = _findings(gfxgate_cli, SAMPLE_LOG)["rocblas-tensile-missing"]  # v0.12.3 ships gfx906: no such clause
    assert not any("does not ship gfx906" in c for c in at_0123["context"]), at_0123["context"]


@pytest.mark.parametrize("ref", [(), ("--ref", "ollama=v0.17.5")], ids=["today", "study"])
def test_10_no_angle_placeholder_but_the_install_prefix(gfxgate_cli, ref):
    """A remedy names what the release configures: `cmake --preset 'ROCm 6'` at v0.17.5 (Dockerfile:94), not
    `<ROCm preset>`; the only <…> left in any target's answer is <ollama>, the user's own install prefix."""
    from gfxgate.timeline import snapshot as timeline_snapshot

    result = run(gfxgate_cli, "scan", "-t", ",".join(timeline_snapshot.load().targets), *ref, "--format", "json")
    assert result.returncode == 0, result.stderr
    assert set(re.findall(r"<[A-Za-z][A-Za-z _-]*>", result.stdout)) <= {"<ollama>"}
    if ref:
        presets = cell(json.loads(result.stdout), "cmake-presets", "gfx900")
        assert presets["remedy"] == "build with your own list: cmake --preset 'ROCm 6' -DAMDGPU_TARGETS=gfx900", presets


@pytest.mark.parametrize(
    "args",
    [
        ["timeline", "--live", "-t", "gfx900"],
        ["history", "-t", "gfx900"],
        ["scan", "-t", "gfx900", "--ref", "ollama=v0.12.3"],
        ["scan", "-t", "gfx900", "--ref", "ollama=v0.20.0"],
    ],
    ids=["timeline-live", "history", "scan-v0.12.3", "scan-v0.20.0"],
)
def test_10_a_release_without_an_embedded_answer_names_the_source_to_give(gfxgate_cli, tmp_path, args):
    """A release the embedded snapshots do not hold (the study's and today's do), offline with no clone: exit 5,
    nothing on stdout, and the error says which --source to give (it used to say only "point --source at a local
    clone", naming no source)."""
    result = run(gfxgate_cli, *args, env=_offline_env(tmp_path))
    assert result.returncode == 5, (result.returncode, result.stdout[:300], result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 2 and "--source ollama=CLONE" in result.stderr, lines


def test_10_a_clone_that_fails_names_the_source_to_give(gfxgate_cli, tmp_path):
    """Online, the clone of a release the snapshots do not hold fails (a host that never resolves): exit 5 and the
    --source to give, not only git's "Could not resolve host"."""
    env = {
        "GFXGATE_CACHE_DIR": str(tmp_path / "cache"),
        "GFXGATE_SOURCE_OLLAMA": "https://gfxgate-test.invalid/ollama.git",
    }
    result = run(gfxgate_cli, "scan", "-t", "gfx900", "--ref", "ollama=v0.12.3", env=env)
    assert result.returncode == 5, (result.returncode, result.stderr)
    assert result.stdout == "" and "--source ollama=CLONE" in result.stderr, result.stderr
