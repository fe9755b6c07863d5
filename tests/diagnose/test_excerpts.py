"""Issue 31: the logs people post — excerpts, several messages on one line, cut lines, CRLF, journal and `docker logs`
prefixes, Windows paths, self-built versions — and the families diagnose did not know, each through the installed
script (``gfxgate diagnose --format json``), with its layer, conclusion and remedy.

The lines are the printing code's own texts at the tags that print them (the catalogue's examples are checked
against those sources by `gfxgate messages` and tests/diagnose/test_upstream_messages.py): Ollama v0.1.29 … v0.12.3
for the discovery lines (discover/amd_linux.go, amd_windows.go, amd_hip_windows.go, gpu.go), v0.9.6 … v0.25.0-rc0 for
ggml.go's own "offloaded N/M layers to GPU", ggml-cuda.cu for the device and error lines, llama-model.cpp for the
model buffers; rocBLAS's lines (not among the pinned sources) as users' logs show them.
"""

from __future__ import annotations

import json

import pytest

from tests.diagnose.advice import assert_vendor_correct

T = "2025-10-05T10:00:00.000+02:00"


def slog(level: str, source: str, msg: str, tail: str = "") -> str:
    return f'time={T} level={level} source={source} msg="{msg}"' + (f" {tail}" if tail else "")


LISTEN = slog("INFO", "routes.go:1528", "Listening on 127.0.0.1:11434 (version 0.12.3)")


def diagnose(gfxgate_cli, tmp_path, lines: list[str] | str, *, newline: str = "\n", fmt: str = "json"):
    log = tmp_path / "excerpt.log"
    text = lines if isinstance(lines, str) else newline.join(lines) + newline
    log.write_bytes(text.encode("utf-8"))
    proc = gfxgate_cli("diagnose", "--no-upstream", "--format", fmt, str(log), timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return assert_vendor_correct(json.loads(proc.stdout)["logs"][0]) if fmt == "json" else proc.stdout


def llama_run(*lines: str) -> list[str]:
    """llama-server's output around ``lines``: its build line first, its listening line (ready) last."""
    return [
        "build: 6981 (0c1e5709) with cc (Debian 15.2.0-7) 15.2.0 for x86_64-linux-gnu",
        *lines,
        "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    ]


def buffers(*sizes: tuple[str, float]) -> list[str]:
    """llama-model.cpp's lines: LLAMA_LOG_INFO("%s: %12s model buffer size = %8.2f MiB\\n", __func__, …)."""
    return [f"load_tensors: {name:>12} model buffer size = {mib:8.2f} MiB" for name, mib in sizes]


def finding(d: dict, message: str) -> dict:
    found = [f for f in d["findings"] if f["message"] == message]
    assert found, (message, [f["message"] for f in d["findings"]])
    return found[0]


def conclusion(d: dict) -> list[tuple[str, str]]:
    return [(c["kind"], c["text"]) for c in d["conclusions"]]


# -- the families -------------------------------------------------------------------------------------------
def test_old_cuda_error_wording_with_a_windows_path_is_the_missing_kernel(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            "ggml_cuda_compute_forward: MUL_MAT failed",
            r"CUDA error 98 at C:\a\ollama\ollama\llm\llama.cpp\ggml-cuda.cu:7977: invalid device function",
            r'GGML_ASSERT: C:\a\ollama\ollama\llm\llama.cpp\ggml-cuda.cu:193: !"CUDA error"',
        ],
    )
    f = finding(d, "ggml-cuda-error-invalid-device-function")
    assert f["layer"] == "installed-gpu-code" and "no kernel" in f["remedy"]
    assert finding(d, "ggml-cuda-op-failed")["layer"] == "runtime"
    assert finding(d, "native-crash")["evidence"][0]["location"]["line"] == 3
    assert conclusion(d)[0][0] == "crashed-computing"  # the op failed while computing


def test_old_cuda_error_wording_without_its_number_is_the_missing_kernel(gfxgate_cli, tmp_path):
    """ggml-cuda.cu's later wording: "CUDA error: invalid device function" after the failed op, then GGML_ASSERT."""
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            "ggml_cuda_compute_forward: MUL_MAT failed",
            "CUDA error: invalid device function",
            "  current device: 0, in function ggml_cuda_compute_forward at /build/ggml/src/ggml-cuda/ggml-cuda.cu:2313",
            'GGML_ASSERT: /build/ggml/src/ggml-cuda/ggml-cuda.cu:100: !"CUDA error"',
        ],
    )
    f = finding(d, "ggml-cuda-error-invalid-device-function")
    assert (
        f["layer"] == "installed-gpu-code" and "no kernel" in f["remedy"] and "build-amdgpu-targets" in f["workarounds"]
    )
    assert [k for k, _ in conclusion(d)] == ["crashed-computing"]


def test_tensile_host_without_devices_is_a_discovery_failure(gfxgate_cli, tmp_path):
    d = diagnose(gfxgate_cli, tmp_path, ["rocBLAS error: Could not initialize Tensile host: No devices found"])
    f = finding(d, "rocblas-tensile-host-no-devices")
    assert f["layer"] == "discovery" and "/dev/kfd" in f["remedy"] and f["verdict"] is None  # no target: no verdict
    [(kind, text)] = conclusion(d)
    assert kind == "dropped-by-discovery" and "Tensile host" in text


def test_no_rocm_library_is_the_install(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            LISTEN,
            slog(
                "WARN",
                "amd_linux.go:447",
                "amdgpu detected, but no compatible rocm library found.  Either install rocm v6, or follow manual install instructions at https://github.com/ollama/ollama/blob/main/docs/linux.md#manual-install",
            ),
        ],
    )
    f = finding(d, "ollama-no-rocm-library")
    assert f["layer"] == "installed-gpu-code" and f["stale"] is None and "ollama-linux-amd64-rocm" in f["remedy"]
    # printed by discovery, which then skips the GPU: the conclusion says so (the layer says why)
    [(kind, text)] = conclusion(d)
    assert kind == "dropped-by-discovery" and "no ROCm library" in text


def test_windows_discovery_drops_the_gpu_and_the_model_runs_on_the_cpu(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            LISTEN,
            slog(
                "WARN",
                "amd_windows.go:99",
                "get mem info",
                'id=0 error="failed call to hipMemGetInfo: 1 hipErrorInvalidValue"',
            ),
            slog("INFO", "gpu.go:396", "no compatible GPUs were discovered"),
            slog(
                "INFO",
                "types.go:131",
                "inference compute",
                'id=0 library=cpu variant="" compute="" driver=0.0 name="" total="31.3 GiB" available="28.1 GiB"',
            ),
        ],
        newline="\r\n",
    )  # a Windows server's log
    assert finding(d, "ollama-hip-meminfo-failed")["layer"] == "discovery"
    assert "HIP runtime" in finding(d, "ollama-hip-meminfo-failed")["remedy"]
    assert "Discovery dropped every GPU" in finding(d, "ollama-no-compatible-gpus")["remedy"]
    kinds = dict(conclusion(d))
    assert "dropped-by-discovery" in kinds and "hipMemGetInfo" not in kinds["dropped-by-discovery"]
    assert "through HIP" in kinds["dropped-by-discovery"]
    assert kinds["ran-on-cpu"].startswith("models run on the CPU")


def test_an_override_in_effect_is_a_fact_and_never_suggested_again(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            LISTEN,
            slog(
                "INFO", "amd_linux.go:393", "skipping rocm gfx compatibility check", "HSA_OVERRIDE_GFX_VERSION=10.3.0"
            ),
            "rocBLAS error: Cannot read /usr/lib/ollama/rocm/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
            " List of available TensileLibrary Files : ",
            '"/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1030.dat"',
            '"/usr/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1100.dat"',
        ],
    )
    facts = {f["name"]: f["value"] for f in d["facts"]}
    assert facts["env:HSA_OVERRIDE_GFX_VERSION"] == "10.3.0" and facts["rocblas-tensile-targets"] == "gfx1030 gfx1100"
    assert not [
        u
        for u in d["unknowns"]
        if u["what"] == "overrides" and "HSA_OVERRIDE_GFX_VERSION, OLLAMA_VULKAN" in u["reason"]
    ]
    f = finding(d, "rocblas-tensile-missing")
    assert "hsa-override-10.3.0" not in f["workarounds"]  # in effect, and it failed with it
    assert any("already in effect" in c for c in f["context"])
    assert f["layer"] == "rocblas-artifacts" and "no kernels for gfx1031" in f["remedy"]
    [(kind, text)] = conclusion(d)  # an excerpt without its run: the verdict, and that when is not known
    assert (
        kind == "failed"
        and text.startswith("the GPU failed at the rocblas-artifacts layer")
        and "gfx1031, log line 3" in text
    )


def test_an_override_is_suggested_only_toward_a_target_the_log_lists(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            LISTEN,
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
            " List of available TensileLibrary Files : ",
            '"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat"',
        ],
    )
    f = finding(d, "rocblas-tensile-missing")
    assert f["target"] == "gfx1031" and "hsa-override-10.3.0" in f["workarounds"]
    assert any(
        "exact value: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes the runtime report gfx1031 as gfx1030" in c
        for c in f["context"]
    )
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [  # the installed rocBLAS has gfx1100 only: 10.3.0 (gfx1030) would not find kernels
            LISTEN,
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx1031",
            '"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat"',
        ],
    )
    f = finding(d, "rocblas-tensile-missing")
    assert "hsa-override-10.3.0" not in f["workarounds"]
    assert any("lists TensileLibrary files only for gfx1100" in c for c in f["context"])


def test_a_self_built_ollama_is_read_by_the_messages_form(gfxgate_cli, tmp_path):
    self_built = slog("INFO", "routes.go:1528", "Listening on 127.0.0.1:11434 (version 0.0.0)")
    rejected = slog(
        "WARN",
        "amd_linux.go:380",
        "amdgpu is not supported (supported types:[gfx1030 gfx1100])",
        "gpu_type=gfx1031 gpu=0 library=/usr/lib/ollama/rocm",
    )
    d = diagnose(gfxgate_cli, tmp_path, [self_built, rejected])
    f = finding(d, "ollama-amdgpu-not-supported")
    assert f["stale"] is None and f["status"] == "blocked" and f["target"] == "gfx1031"
    assert any(u["what"] == "Ollama version" and "0.0.0" in u["reason"] for u in d["unknowns"])
    # the message's remedy offers the override or rocBLAS kernels for the target: both workarounds (issue 36: copying
    # rocBLAS files is no longer limited to gfx900/gfx906, whose files a release deletes)
    assert f["layer"] == "discovery" and "HSA_OVERRIDE_GFX_VERSION" in f["remedy"]
    assert f["workarounds"] == ["hsa-override-10.3.0", "copy-rocblas-tensile"]
    assert "exact value: HSA_OVERRIDE_GFX_VERSION=10.3.0 makes the runtime report gfx1031 as gfx1030" in f["context"]
    assert [k for k, _ in conclusion(d)] == ["dropped-by-discovery"]
    md = diagnose(gfxgate_cli, tmp_path, [self_built, rejected], fmt="md")
    assert "0.0.0 (self-built: version unknown)" in md


def test_ollamas_own_offload_line_is_shown_in_md_and_text(gfxgate_cli, tmp_path):
    lines = [
        slog("INFO", "routes.go:1528", "Listening on 127.0.0.1:11434 (version 0.17.5)"),
        slog("INFO", "server.go:430", "starting runner", 'cmd="/usr/bin/ollama runner --ollama-engine --port 40125"'),
        slog("INFO", "ggml.go:494", "offloaded 1/29 layers to GPU"),
        "SIGSEGV: segmentation violation",
        slog(
            "ERROR",
            "sched.go:489",
            "error loading llama server",
            'error="llama runner process has terminated: exit status 2"',
        ),
    ]
    d = diagnose(gfxgate_cli, tmp_path, lines)
    assert d["runs"][0]["offload"] == "1/29" and d["runs"][0]["outcome"] == "failed"
    assert conclusion(d)[0][0] == "crashed-loading"
    crash = finding(d, "go-signal-crash")
    assert crash["layer"] == "runtime" and "crashed while loading" in crash["remedy"]
    for fmt in ("md", "text"):
        assert "offloaded 1/29 layers" in diagnose(gfxgate_cli, tmp_path, lines, fmt=fmt)


def test_nvidia_device_lines_are_read_with_their_compute_capability(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        llama_run(
            "ggml_cuda_init: found 1 CUDA devices:",
            "  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143155 MiB",
            "load_tensors: offloaded 5/5 layers to GPU",
            *buffers(("CUDA0", 312.5), ("CPU_Mapped", 6.05)),
        ),
    )
    gpu = d["gpus"][0]
    assert (gpu["name"], gpu["target"], gpu["backend"]) == (
        "NVIDIA H200",
        "sm_90",
        "CUDA",
    ) and "compute capability 9.0" in gpu["detail"]
    assert not [u for u in d["unknowns"] if u["what"] in ("GPUs", "gfx target")]
    run = d["runs"][0]
    assert run["placement"] == [{"buffer": "CUDA0", "mib": 312.5}, {"buffer": "CPU_Mapped", "mib": 6.05}]
    assert conclusion(d) == [("ran-on-gpu", "this model ran with 5/5 layers on the GPU (CUDA0) (run 1)")]
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        llama_run(  # issue 27 defect 2: no "no ggml Device line" beside the Device line
            "  Device 0: NVIDIA H200, compute capability 9.0, VMM: yes, VRAM: 143155 MiB",
            "ROCm error: invalid device function",
        ),
    )
    assert (
        finding(d, "hip-invalid-device-function")["target_reason"]
        == "the log's GPUs have no gfx target: NVIDIA H200 (sm_90)"
    )


def test_offloaded_layers_with_every_buffer_on_the_cpu_is_not_on_the_gpu(gfxgate_cli, tmp_path):
    """Issue 27 defect 3: `--device none -ngl 1` still prints "offloaded 1/5 layers to GPU"; the buffers decide."""
    d = diagnose(
        gfxgate_cli, tmp_path, llama_run("load_tensors: offloaded 1/5 layers to GPU", *buffers(("CPU_Mapped", 6.05)))
    )
    run = d["runs"][0]
    assert (
        run["outcome"] == "cpu-only"
        and "on the GPU" not in run["summary"]
        and "every model buffer is on the CPU" in run["summary"]
    )
    assert conclusion(d)[0][0] == "ran-on-cpu"


def test_two_devices_hold_the_layers_between_them(gfxgate_cli, tmp_path):
    """Issue 30: per-device placement from the model buffer lines (a two-GPU log, before one is seen)."""
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        llama_run(
            "Available devices:",
            "  CUDA0: NVIDIA H200 (143155 MiB, 142617 MiB free)",
            "  CUDA1: NVIDIA H200 (143155 MiB, 142617 MiB free)",
            "load_tensors: offloaded 29/29 layers to GPU",
            *buffers(("CUDA0", 812.5), ("CUDA1", 790.25), ("CPU_Mapped", 85.05)),
        ),
    )
    assert [g["name"] for g in d["gpus"]] == ["NVIDIA H200", "NVIDIA H200"]
    assert [b["buffer"] for b in d["runs"][0]["placement"]] == ["CUDA0", "CUDA1", "CPU_Mapped"]
    assert "(CUDA0, CUDA1)" in conclusion(d)[0][1]


@pytest.mark.parametrize(
    "name, target",
    [
        ("AMD Radeon RX Vega (RADV VEGA10)", "gfx900"),
        ("AMD Radeon RX 5700 XT (RADV NAVI10)", "gfx1010"),
        ("AMD Radeon Graphics (RADV GFX1151)", "gfx1151"),
        ("AMD Radeon RX 580 Series (RADV POLARIS10)", "gfx803"),
    ],
)
def test_radv_names_map_to_their_gfx_target(gfxgate_cli, tmp_path, name, target):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            f"ggml_vulkan: 0 = {name} (radv) | uma: 0 | fp16: 1 | warp size: 64 | shared memory: 65536 | int dot: 0 | matrix cores: none"
        ],
    )
    assert d["gpus"][0]["target"] == target and "RADV" in d["gpus"][0]["detail"]


# -- excerpt forms ------------------------------------------------------------------------------------------
def test_several_messages_on_one_line_are_each_found(gfxgate_cli, tmp_path):
    """A log pasted as one paragraph: the version, the rejection and the CPU fallback are all read."""
    paragraph = " ".join(
        [
            LISTEN,
            slog(
                "WARN",
                "amd_linux.go:380",
                "amdgpu is not supported (supported types:[gfx1030 gfx1100])",
                "gpu_type=gfx1031 gpu=0",
            ),
            slog("INFO", "gpu.go:396", "no compatible GPUs were discovered"),
        ]
    )
    d = diagnose(gfxgate_cli, tmp_path, [paragraph])
    assert d["version"] == "0.12.3"
    assert {f["message"] for f in d["findings"]} >= {"ollama-amdgpu-not-supported", "ollama-no-compatible-gpus"}
    assert finding(d, "ollama-amdgpu-not-supported")["target"] == "gfx1031"
    kinds = dict(conclusion(d))
    assert "rejects the gfx target" in kinds["dropped-by-discovery"]


def test_a_line_cut_mid_message_is_still_found(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            slog("INFO", "routes.go:1", "Listening on 127.0.0.1:11434 (version 0.1.32)"),
            'time=2024-05-01T10:00:00.000Z level=WARN source=amd_linux.go:296 msg="amdgpu [0] gfx1031 is not supported by /tmp/ollama123/rocm [',
        ],
    )
    f = finding(d, "ollama-amdgpu-not-supported-v0129")
    assert f["target"] == "gfx1031" and f["layer"] == "discovery" and f["status"] == "blocked" and f["remedy"]
    assert [k for k, _ in conclusion(d)] == ["dropped-by-discovery"]


@pytest.mark.parametrize(
    "prefix",
    [
        "Oct 05 10:00:01 host ollama[812]: ",  # journalctl -o short
        "2025-10-05T10:00:01+0200 host ollama[812]: ",  # journalctl -o short-iso
        "2025-10-05T08:00:01.123456789Z ",  # docker logs -t
    ],
)
def test_prefixed_lines_are_read(gfxgate_cli, tmp_path, prefix):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            prefix + "ggml_cuda_init: found 1 ROCm devices:",
            prefix + "  Device 0: AMD Radeon RX 6700 XT, gfx1031 (0x1031), VMM: no, Wave Size: 32",
            prefix + "rocBLAS error: Could not initialize Tensile host: No devices found",
        ],
    )
    assert [g["target"] for g in d["gpus"]] == ["gfx1031"]
    assert finding(d, "rocblas-tensile-host-no-devices")["target"] == "gfx1031"


def test_an_excerpts_unknown_lines_never_produce_a_verdict(gfxgate_cli, tmp_path):
    """Lines that are no catalogue message — forum prose around the log, near-misses — give no finding."""
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            "Hi, my GPU does not work with ollama, here is the log:",
            "```",
            "amdgpu seems fine? supported types unknown",
            "CUDA error handling was changed in this version",
            "Device 0 is my RX 6700",
            "```",
            "thanks!",
        ],
    )
    assert d["findings"] == [] and d["conclusions"] == [] and d["log_kind"] is None


# -- "AMD Radeon Graphics" with a PCI id ----------------------------------------------------------------------
def _compute_line(**attrs: str) -> str:
    """Ollama's ``inference compute`` line (ml/device.go, v0.12+: one per device, name / description / pci_id)."""
    return slog("INFO", "types.go:60", "inference compute", " ".join(f"{k}={v}" for k, v in attrs.items()))


def _diagnose_with_ids(gfxgate_cli, tmp_path, lines: list[str], ids: str) -> dict:
    """A diagnosis where libdrm's amdgpu.ids is ``ids`` (the file's own format: version line, DEVICE, REVISION, NAME)."""
    table = tmp_path / "amdgpu.ids"
    table.write_text("# List of AMDGPU IDs\n#\n1.0.0\n" + ids, encoding="utf-8")
    log = tmp_path / "excerpt.log"
    log.write_text("\n".join([LISTEN, *lines]) + "\n", encoding="utf-8")
    import os

    proc = gfxgate_cli(
        "diagnose",
        "--no-upstream",
        "--format",
        "json",
        str(log),
        timeout=60,
        env={**os.environ, "GFXGATE_AMDGPU_IDS": str(table)},
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)["logs"][0]


def test_a_pci_device_id_names_the_target_through_amdgpu_ids(gfxgate_cli, tmp_path):
    """``name=1002:15bf`` (a Vulkan device without a gfx compute string): amdgpu.ids says Radeon 780M, gfx1103."""
    line = _compute_line(id="0", library="Vulkan", compute="0.0", name="1002:15bf", driver="0.0", total='"16.0 GiB"')
    d = _diagnose_with_ids(gfxgate_cli, tmp_path, [line], "15BF,\tC1,\tAMD Radeon 780M Graphics\n")
    [gpu] = d["gpus"]
    assert gpu["target"] == "gfx1103" and "PCI id 1002:15bf" in gpu["detail"] and "780M" in gpu["detail"]
    # the same line where this libdrm has no entry: no target, and the report says why
    d = _diagnose_with_ids(gfxgate_cli, tmp_path, [line], "687F,\tC1,\tAMD Radeon RX Vega\n")
    [gpu] = d["gpus"]
    assert gpu["target"] is None and "no entry in libdrm's amdgpu.ids" in gpu["detail"]


def test_radeon_graphics_with_a_bus_address_says_it_names_no_chip(gfxgate_cli, tmp_path):
    """Ollama's ``pci_id`` is where the card sits (0000:c5:00.0), not the device id: no target, said in those words
    (it was "PCI id 0000:c5:00.0 is not in the target catalogue", as if an id could be)."""
    line = _compute_line(
        id="0",
        library="Vulkan",
        compute="0.0",
        name="Vulkan0",
        description='"AMD Radeon Graphics"',
        pci_id="0000:c5:00.0",
        type="iGPU",
        total='"16.0 GiB"',
    )
    d = _diagnose_with_ids(gfxgate_cli, tmp_path, [line], "15BF,\tC1,\tAMD Radeon 780M Graphics\n")
    [gpu] = d["gpus"]
    assert gpu["name"] == "AMD Radeon Graphics" and gpu["target"] is None
    assert "bus address" in gpu["detail"] and "0000:c5:00.0" in gpu["detail"]
