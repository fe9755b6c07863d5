"""The sweep on a real GPU (issue 27, issue 30's one-device part): the logs of a real H200 run and real llama.cpp here.

The H200 logs are fixtures captured on the device (tests/sweep/fixtures/h200/README.md says where each came from);
the argv and the CLI are checked against the real Debian llama-server in tests/sweep/test_sweep_llamaserver.py too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gfxgate.sweep.llamaserver import parse_listed_devices, parse_log, sampled_vram, server_argv
from tests.sweep.sweephelp import gfxgate

H200 = Path(__file__).parent / "fixtures" / "h200"


def _facts(name: str):
    lines = (H200 / name).read_text().splitlines()
    return lines, parse_log(lines)


# -- defect 1: the verbosity goes before the endpoint's own flags --------------------------------------------
def test_verbosity_goes_right_after_the_server_executable_before_a_device_flag():
    argv, note = server_argv(
        ["env", "A=1", "/opt/x/ld.so", "--library-path", "/l", "/opt/bin/llama-server", "--device", "CUDA0"],
        Path("m.gguf"),
        5,
        16,
    )
    assert argv[:8] == [
        "env",
        "A=1",
        "/opt/x/ld.so",
        "--library-path",
        "/l",
        "/opt/bin/llama-server",
        "--log-verbosity",
        "4",
    ]
    assert argv.index("--log-verbosity") < argv.index("--device") and argv[-2:] == ["-ngl", "16"] and note == ""


def test_a_command_with_its_own_verbosity_keeps_it_and_an_unknown_wrapper_is_noted():
    argv, note = server_argv(["llama-server", "-lv", "2", "--device", "Vulkan0"], Path("m.gguf"), 5, -1)
    assert argv.count("-lv") == 1 and "--log-verbosity" not in argv and note == ""
    argv, note = server_argv(["my-wrapper", "--device", "Vulkan0"], Path("m.gguf"), 5, 0)
    assert "--log-verbosity" in argv and "no llama-server executable" in note


def test_the_h200_logs_have_the_backend_lines_that_the_verbosity_first_brings():
    lines, facts = _facts("cuda-g16.log")
    assert any("ggml_cuda_init: found 1 CUDA devices" in line for line in lines)
    assert any("Device 0: NVIDIA H200, compute capability 9.0" in line for line in lines)
    assert facts.backends == ["CUDA", "Vulkan", "CPU"]  # every module the build loads …


# -- defect 5 and issue 30: the device a run used, per-device placement -------------------------------------
def test_the_device_a_run_used_is_the_one_holding_the_weights_not_every_loaded_module():
    for name, device in (("cuda-g16.log", "CUDA0"), ("vulkan-g16.log", "Vulkan0")):
        _, facts = _facts(name)
        assert facts.backends == ["CUDA", "Vulkan", "CPU"]
        offload = facts.to_json()
        assert offload["on_gpu"] == [device] and offload["devices"] == [f"{device} (NVIDIA H200)"]


def test_per_device_placement_from_the_buffer_lines():
    _, facts = _facts("cuda-g16.log")
    offload = facts.to_json()
    assert (offload["layers"], offload["of"]) == (16, 29)
    rows = {row["buffer"]: row for row in offload["placement"]}
    assert rows["CUDA0"] == {
        "buffer": "CUDA0",
        "host": False,
        "model_mib": 389.77,
        "kv_mib": 60.0,
        "compute_mib": 286.25,
        "layers": 16,
    }
    assert rows["CPU_Mapped"]["layers"] == 13 and rows["CPU_Mapped"]["model_mib"] == 342.48
    assert rows["CUDA_Host"]["host"] and rows["CUDA_Host"]["layers"] is None
    assert offload["vram_mib"] == round(389.77 + 60.0 + 286.25, 2)


def test_num_gpu_0_on_the_gpu_build_puts_every_weight_in_system_memory():
    _, facts = _facts("cuda-g0.log")
    offload = facts.to_json()
    assert offload["on_gpu"] == [] and (offload["layers"], offload["of"]) == (0, 29)
    assert "log_layers" not in offload  # llama.cpp printed 0/29: nothing to correct


def test_two_devices_are_counted_from_the_debug_assignment_lines():
    """Two GPUs: verbosity 4 prints the buffers, not the split; llama.cpp's debug lines (-lv 5, format string of
    src/llama-model.cpp 'load_tensors: layer %3d assigned to device %s, is_swa = %d') give the layers per device."""
    lines = [
        "0.00.426.576 I load_tensors: offloaded 4/5 layers to GPU",
        *(
            f"0.00.426.57{i} D load_tensors: layer {i:3d} assigned to device {dev}, is_swa = 0"
            for i, dev in enumerate(("CPU", "CUDA0", "CUDA0", "CUDA1", "CUDA1"))
        ),
        "0.00.426.579 I load_tensors:   CPU_Mapped model buffer size =    35.20 MiB",
        "0.00.426.580 I load_tensors:        CUDA0 model buffer size =    70.40 MiB",
        "0.00.426.581 I load_tensors:        CUDA1 model buffer size =    70.40 MiB",
    ]
    offload = parse_log(lines).to_json()
    assert offload["on_gpu"] == ["CUDA0", "CUDA1"]
    assert {r["buffer"]: r["layers"] for r in offload["placement"]} == {"CPU_Mapped": 1, "CUDA0": 2, "CUDA1": 2}
    without = parse_log([line for line in lines if "assigned" not in line]).to_json()
    assert {r["buffer"]: r["layers"] for r in without["placement"]} == {
        "CPU_Mapped": None,
        "CUDA0": None,
        "CUDA1": None,
    }


def test_list_devices_and_sampled_vram():
    listed = parse_listed_devices((H200 / "list-devices.txt").read_text())
    assert listed == [
        {"device": "CUDA0", "description": "NVIDIA H200", "total_mib": 143155, "free_mib": 142612},
        {"device": "Vulkan0", "description": "NVIDIA H200", "total_mib": 143771, "free_mib": 142612},
    ]
    lines = [
        "26693, /x/llama-server, 21 MiB",
        "26693, /x/llama-server, 577 MiB",
        "26700, /x/llama-server, 900 MiB",
        "garbage",
    ]
    assert sampled_vram(lines, 26693) == {"samples": 2, "max_mib": 577}
    assert sampled_vram(lines, 1) == {"samples": 0, "max_mib": None}


# -- defect 4: NVIDIA targets ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["sm_90", "sm90", "9.0", "compute capability 9.0", "H200", "NVIDIA H200"])
def test_nvidia_targets_parse(text):
    from gfxgate.targets import catalog

    assert catalog().parse_gpu(text) == "sm_90"
    assert catalog().from_compute_capability("9.0").name == "sm_90"


def test_targets_command_explains_sm_90_and_refuses_an_unknown_one():
    done = gfxgate("targets", "sm_90", "--format", "json")
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert (info["target"], info["compute_capability"], info["family"]) == (
        "sm_90",
        "9.0",
        "Hopper",
    ) and "H200" in info["products"]
    listed = gfxgate("targets")
    assert any(line.startswith("sm_90 ") for line in listed.stdout.splitlines())
    bad = gfxgate("targets", "sm_91")
    assert bad.returncode == 2 and "unknown NVIDIA target 'sm_91'" in bad.stderr and "Traceback" not in bad.stderr


# -- defect 6: where the version came from --------------------------------------------------------------------
def test_version_source_says_what_a_build_number_0_and_an_unknown_commit_mean(tmp_path):
    from gfxgate.sweep.llamaserver import LlamaServerDriver, LlamaServerEndpoint

    class Plan:
        timeout = 10.0
        gpu_memory_log = None

    class Runner:
        plan = Plan()

    driver = LlamaServerDriver(Runner())
    for name, version, words in (
        ("h200", (H200 / "version.txt").read_text().splitlines()[0].removeprefix("version: "), "build number 0"),
        ("tarball", "0.5.0-dev (build 0, commit unknown)", "commit is unknown"),
        ("old", "0 (unknown)", "commit is unknown"),
    ):
        endpoint = LlamaServerEndpoint(name, ("llama-server",))
        driver._versions[name] = f"llama.cpp {version}"
        assert words in driver.version_source(endpoint)["note"], version
    assert driver._versions["h200"] == "llama.cpp 0.5.0-dev (build 0, commit 0c1e57098)"


def test_device_lines_give_the_gpu_target_of_a_cuda_or_hip_device():
    """ggml_cuda_init's 'Device N:' line (ggml-cuda.cu: '  Device %d: %s, compute capability %d.%d, …' for CUDA,
    '  Device %d: %s, %s (0x%x), …' built with HIP): sm_90 on the H200, gfx900:xnack- on a Vega."""
    from gfxgate.sweep import facts
    from gfxgate.sweep.worklog import Run

    _, parsed = _facts("cuda-g16.log")
    gpus = parsed.to_json()["gpus"]
    assert gpus == [{"index": 0, "name": "NVIDIA H200", "line": 2, "compute_capability": "9.0", "target": "sm_90"}]
    hip = parse_log(
        ["0.00.156.170 I   Device 0: AMD Radeon RX Vega, gfx900:xnack- (0x900), VMM: no, Wave Size: 64, VRAM: 8176 MiB"]
    )
    assert hip.gpus[0]["target"] == "gfx900:xnack-"
    run = Run({"offload": parsed.to_json()}, 1)
    assert facts.device_description(run, "CUDA0") == "CUDA0 (NVIDIA H200) sm_90"
    _, vulkan = _facts("vulkan-g16.log")  # the CUDA module's Device 0 line is there too: it names CUDA0, not Vulkan0
    assert facts.device_description(Run({"offload": vulkan.to_json()}, 1), "Vulkan0") == "Vulkan0 (NVIDIA H200)"


def test_the_report_says_when_its_runs_ran_and_the_longest_pause(tmp_path):
    """A sweep split over several processes (a soak over two device calls, a worklog resumed hours later) says so: the
    span of its runs and the longest pause between one run's end and the next one's start."""
    from gfxgate.sweep.model import build_report, run_span
    from gfxgate.sweep.worklog import read_worklog

    packed = Path(__file__).parents[2] / "samples" / "h200" / "soak.jsonl.zst"
    soak = read_worklog(packed)
    span = run_span(soak.runs)
    assert span is not None and span.first_started_at.startswith("2026-12-04T15:17:12")
    assert 600 <= span.seconds < 700 and 5 < span.longest_pause_s < 15  # the pause between the two device calls
    import zstandard

    lines = zstandard.ZstdDecompressor().decompressobj().decompress(packed.read_bytes()).decode("utf-8").splitlines()
    first, second = json.loads(lines[0]), json.loads(lines[1])
    second["started_at"] = "2026-12-04T16:17:12"  # naive beside an aware time: no span rather than a wrong one
    worklog = tmp_path / "w.jsonl"
    worklog.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    assert build_report(read_worklog(worklog)).span is None
    from datetime import datetime, timedelta

    for key in ("started_at", "ended_at"):  # the second run an hour later, as a resumed worklog has it
        second[key] = (datetime.fromisoformat(json.loads(lines[1])[key]) + timedelta(hours=1)).isoformat()
    worklog.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n", encoding="utf-8")
    report = gfxgate("sweep", "report", str(worklog), "--format", "md")
    assert "(1 h 0 min 7 s; longest pause between two runs 1 h 0 min 2 s)" in report.stdout, report.stdout[:600]
