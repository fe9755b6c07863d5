"""Issue 39: `diagnose` for every vendor — out of GPU memory, NVIDIA's own failures, Ollama's discovery failures, the
wrong device, what the runner really was — each through the installed script, with its vendor, layer, conclusion
and a vendor-correct remedy; negative controls that conclude nothing; and no NVIDIA or Intel log advised like AMD's.

The lines are the printing code's texts at the tags that print them (cited next to each message in
rules/messages.yaml): ggml and llama.cpp as llama-cpp-python 0.3.36 vendors them (ggml-cuda.cu's cudaMalloc and
"<backend> error" lines, common.cuh's "no device code compatible with CUDA arch", ggml-alloc.c's alloc_tensor_range,
llama-kv-cache.cpp's kv cache, ggml-vulkan's "Device memory allocation", llama.cpp's system_info "CUDA : ARCHS"),
Ollama's discover/cuda_compat.go, discover/llama_server.go and server/sched.go at v0.30 … v0.33, discover/amd_linux.go
and amd_hip_windows.go at v0.12.3, discover/runner.go's "failure during GPU discovery" at v0.12.4 … v0.25, and
llm/memory.go's "offload to" at v0.5.7; pasted as users paste them (journal prefixes, Windows paths, WSL).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gfxgate.diagnose.vendor import AMD_ONLY, AMD_WORDS
from tests.diagnose import logs
from tests.diagnose.test_excerpts import conclusion, diagnose, finding, llama_run

T = "2026-11-20T09:00:00.000Z"
H200 = Path(__file__).resolve().parents[2] / "samples" / "h200" / "logs"


def slog(level: str, source: str, msg: str, tail: str = "", version_time: str = T) -> str:
    return f'time={version_time} level={level} source={source} msg="{msg}"' + (f" {tail}" if tail else "")


def listen(version: str) -> str:
    return slog("INFO", "routes.go:1528", f"Listening on 127.0.0.1:11434 (version {version})")


def cuda_device(index: int, name: str, cc: str, vram: int) -> str:
    """ggml-cuda.cu:339 "  Device %d: %s, compute capability %d.%d, VMM: %s, VRAM: %zu MiB"."""
    return f"  Device {index}: {name}, compute capability {cc}, VMM: yes, VRAM: {vram} MiB"


def nvidia_cuda_compute(cc: str, name: str, libdirs: str = "ollama,cuda_v12") -> str:
    """discover/types.go:32 at v0.30+: one line per kept device."""
    return slog(
        "INFO",
        "types.go:42",
        "inference compute",
        f'id=GPU-8f6e filter_id="" library=CUDA compute={cc} name=CUDA0 description="{name}" libdirs={libdirs} '
        f'driver=12.8 pci_id=0000:01:00.0 type=discrete total="12.0 GiB" available="11.1 GiB"',
    )


ADVICE_SEEN: list[dict] = []  # every diagnosis of an NVIDIA or Intel log in this file (the no-AMD-advice check)


def non_amd(d: dict) -> dict:
    ADVICE_SEEN.append(d)
    assert_no_amd_advice(d)
    return d


def assert_no_amd_advice(d: dict) -> None:
    """No finding of a vendor-neutral or NVIDIA/Intel message, and no conclusion, advises an AMD-only step."""
    for f in d["findings"]:
        if f["vendor"] == "amd":  # an AMD device's own line (a second GPU): its advice is AMD's by right
            continue
        assert not AMD_WORDS.search(f["remedy"]), (f["message"], f["remedy"])
        assert not set(f["workarounds"]) & AMD_ONLY, (f["message"], f["workarounds"])
        assert not any("HSA_OVERRIDE" in line for line in f["context"]), f["context"]
    for c in d["conclusions"]:
        if c["kind"] == "hidden-by-environment":  # its remedy is to unset ROCR_VISIBLE_DEVICES: no AMD step
            continue
        assert not AMD_WORDS.search(c["remedy"] or "") and "ROCm" not in c["text"], c


# -- out of GPU memory, any vendor -------------------------------------------------------------------------------
def test_cuda_malloc_out_of_memory_says_needed_free_and_layers(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_cuda_init: found 1 CUDA devices:",
                cuda_device(0, "NVIDIA GeForce RTX 3060", "8.6", 12044),
                "  CUDA0: NVIDIA GeForce RTX 3060 (12044 MiB, 11200 MiB free)",
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 13312.00 MiB on device 0: cudaMalloc failed: out of memory",
                "alloc_tensor_range: failed to allocate CUDA0 buffer of size 13958643712",
                "llama_model_load: error loading model: unable to allocate CUDA0 buffer",
            )[:-1],
        )
    )
    f = finding(d, "ggml-cuda-malloc-failed")
    assert (
        f["layer"] == "runtime" and f["vendor"] == "nvidia" and f["verdict"] is None
    )  # memory is no gate of the target
    assert "offload fewer layers" in f["remedy"] and "hsa-enable-sdma-0" not in f["workarounds"]
    kind, text = conclusion(d)[0]
    assert kind == "out-of-memory"
    assert (
        "needed 13,312 MiB on device 0" in text and "the device has 11,200 MiB free" in text and "while loading" in text
    )


def test_rocm_out_of_memory_in_an_ollama_log_is_memory_not_a_kernel_failure(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            listen("0.12.3"),
            slog(
                "INFO",
                "types.go:131",
                "inference compute",
                'id=GPU-6d2c library=rocm variant="" compute=gfx1030 driver=6.3 '
                'name=1002:73bf total="16.0 GiB" available="15.2 GiB"',
            ),
            slog(
                "INFO",
                "server.go:430",
                "starting runner",
                'cmd="/usr/bin/ollama runner --ollama-engine --model /m --port 40123"',
            ),
            slog("INFO", "ggml.go:494", "offloaded 33/33 layers to GPU"),
            "ROCm error: out of memory",
            "  current device: 0, in function alloc at /go/src/github.com/ollama/ollama/ml/backend/ggml/ggml/src/ggml-cuda/ggml-cuda.cu:469",
            "SIGABRT: abort",
            slog(
                "ERROR",
                "sched.go:489",
                "error loading llama server",
                'error="llama runner process has terminated: exit status 2"',
            ),
        ],
    )
    f = finding(d, "ggml-gpu-error-oom")
    assert (
        f["family"] == "gpu-oom"
        and "HSA_ENABLE_SDMA" not in f["remedy"]
        and f["workarounds"] == ["ollama-gpu-overhead"]
    )
    kinds = [k for k, _ in conclusion(d)]
    assert kinds[0] == "out-of-memory" and "crashed-loading" in kinds  # the cause first, the crash after it
    text = dict(conclusion(d))["out-of-memory"]
    assert "num_gpu below 33: this run offloaded 33/33" in text and "15.2 GiB free" in text


def test_cublas_alloc_failed_with_a_windows_path(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                listen("0.12.3"),
                slog(
                    "INFO",
                    "types.go:130",
                    "inference compute",
                    "id=GPU-1 library=cuda variant=v12 compute=8.9 driver=12.6 "
                    'name="NVIDIA GeForce RTX 4060 Laptop GPU" total="8.0 GiB" available="6.9 GiB"',
                ),
                "CUDA error: CUBLAS_STATUS_ALLOC_FAILED",
                r"  current device: 0, in function cublas_handle at C:\a\ollama\ollama\ml\backend\ggml\ggml\src\ggml-cuda\common.cuh:1070",
            ],
            newline="\r\n",
        )
    )
    f = finding(d, "ggml-gpu-error-oom")
    assert f["vendor"] == "nvidia" and f["target"] == "sm_89"
    assert conclusion(d)[0][0] == "out-of-memory" and "6.9 GiB free" in conclusion(d)[0][1]


def test_kv_cache_and_vulkan_device_memory_on_an_intel_gpu(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_vulkan: 0 = Intel(R) Arc(tm) A380 Graphics (DG2) (Intel open-source Mesa driver) | uma: 0 | fp16: 1 | bf16: 0 | "
                "warp size: 32 | shared memory: 65536 | int dot: 1 | matrix cores: none",
                "ggml_vulkan: Device memory allocation of size 6442450944 failed.",
                "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache",
            )[:-1],
        )
    )
    assert finding(d, "ggml-vulkan-alloc-failed")["vendor"] == "intel"
    assert "context" in finding(d, "llama-kv-cache-alloc-failed")["remedy"]
    assert conclusion(d)[0][0] == "out-of-memory" and "needed 6,144 MiB" in conclusion(d)[0][1]


# -- NVIDIA's failures ------------------------------------------------------------------------------------------
def test_no_kernel_image_on_a_cuda_device_gets_nvidia_advice(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            logs.journal(
                [
                    listen("0.12.3"),
                    slog(
                        "INFO",
                        "types.go:130",
                        "inference compute",
                        "id=GPU-1 library=cuda variant=v12 compute=5.2 driver=12.4 "
                        'name="NVIDIA GeForce GTX 970" total="4.0 GiB" available="3.9 GiB"',
                    ),
                    slog(
                        "INFO",
                        "server.go:430",
                        "starting runner",
                        'cmd="/usr/bin/ollama runner --model /m --port 40123"',
                    ),
                    "ggml_cuda_compute_forward: MUL_MAT failed",
                    "CUDA error: no kernel image is available for execution on the device",
                ],
                host="desk",
            ),
        )
    )
    f = finding(d, "ggml-cuda-error-invalid-device-function")
    assert f["vendor"] == "nvidia" and f["target"] == "sm_52" and f["verdict"]["status"] == "blocked"
    assert "cuda_v12" in f["remedy"] and "OLLAMA_LLM_LIBRARY" in f["remedy"] and "HSA" not in f["remedy"]
    assert [g["target"] for g in d["gpus"]] == ["sm_52"]
    assert not any(
        u["what"] == "gfx target" for u in d["unknowns"]
    )  # compute=5.2 is a CUDA device, not "no gfx target"
    kind, text = conclusion(d)[0]
    assert kind == "no-kernel-for-gpu" and "NVIDIA GeForce GTX 970 (compute capability 5.2)" in text


def test_kernel_image_invalid_is_a_driver_older_than_the_runner(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_cuda_init: found 1 CUDA devices:",
                cuda_device(0, "NVIDIA GeForce RTX 2070", "7.5", 7982),
                "CUDA error: device kernel image is invalid",
                "  current device: 0, in function ggml_cuda_compute_forward at /build/ggml/src/ggml-cuda/ggml-cuda.cu:2400",
            ),
        )
    )
    f = finding(d, "cuda-kernel-image-invalid")
    assert f["family"] == "nvidia-driver-too-old" and "580" in f["remedy"] and "550" in f["remedy"]
    assert conclusion(d)[0][0] == "driver-too-old"


def test_wsl_cuda_error_100_is_no_cuda_device_not_no_rocm_device(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                "build: 6981 (0c1e5709) with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu",
                "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected",
                "warning: no usable GPU found, --gpu-layers option will be ignored",
            ],
        )
    )
    f = finding(d, "cuda-no-device")
    assert f["family"] == "no-cuda-device" and f["vendor"] == "nvidia" and "/usr/lib/wsl/lib" in f["remedy"]
    assert not [x for x in d["findings"] if x["family"] == "no-rocm-device"]
    assert "libggml-cuda" in finding(d, "llama-no-usable-gpu")["remedy"]


def test_no_device_code_for_cuda_arch_520(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "/build/ggml/src/ggml-cuda/template-instances/../mmq.cuh:3133: ERROR: CUDA kernel mul_mat_q has no device code "
                "compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 600,610,700,750",
            )[:-1],
        )
    )
    assert finding(d, "cuda-no-kernel-image")["layer"] == "installed-gpu-code"
    kind, text = conclusion(d)[0]
    assert kind == "no-kernel-for-gpu" and "compute capability 5.2" in text and "6.0, 6.1, 7.0, 7.5" in text


def test_compute_capability_below_the_archs_list(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_cuda_init: found 1 CUDA devices:",
                cuda_device(0, "NVIDIA GeForce GTX 970", "5.2", 4035),
                "system_info: n_threads = 4 (n_threads_batch = 4) / 8 | CUDA : ARCHS = 600,610,700,750,800,860,890 | USE_GRAPHS = 1 | "
                "PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | AVX2 = 1 |",
            )[:-1],
        )
    )
    f = finding(d, "ggml-cuda-archs")
    assert f["family"] == "cuda-no-kernel" and f["target"] == "sm_52" and f["verdict"]["status"] == "blocked"
    kind, text = conclusion(d)[0]
    assert kind == "no-kernel-for-gpu" and "ARCHS = 600,610,700,750,800,860,890 (the lowest 6.0)" in text


def test_ollama_nvidia_driver_too_old(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                listen("0.32.15"),
                slog(
                    "WARN",
                    "cuda_compat.go:70",
                    "NVIDIA driver too old",
                    'device="NVIDIA GeForce GTX 1080" compute=6.1 driver=560 required_driver="570 or newer"',
                ),
                slog(
                    "INFO",
                    "types.go:50",
                    "inference compute",
                    'id=cpu library=cpu compute="" name=cpu description=cpu '
                    'libdirs=ollama driver="" pci_id="" type="" total="31.3 GiB" available="28.1 GiB"',
                ),
            ],
        )
    )
    f = finding(d, "ollama-nvidia-driver-too-old")
    assert f["layer"] == "discovery" and f["vendor"] == "nvidia"
    kind, text = conclusion(d)[0]
    assert kind == "driver-too-old" and "the driver (560) is older than the cuda_v12 runner's floor" in text
    assert "570 or newer" in text and "compute capability 6.1" in text
    assert "dropped-by-discovery" not in dict(conclusion(d))
    assert any(g["name"] == "NVIDIA GeForce GTX 1080" and g["role"].startswith("left out") for g in d["gpus"])


def test_ollama_skips_a_cuda_device_outside_the_compiled_architectures(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                listen("0.32.15"),
                slog(
                    "INFO",
                    "llama_server.go:299",
                    "skipping CUDA device — compute capability not in compiled architectures",
                    'device="NVIDIA GeForce GTX 970" cc=520 archs="[750 800 860 890 900 1000 1030 1100 1200 1210]" '
                    'libDirs="[/usr/lib/ollama /usr/lib/ollama/cuda_v13]"',
                ),
            ],
        )
    )
    assert "cuda_v12" in finding(d, "ollama-cuda-cc-not-compiled")["remedy"]
    kind, text = conclusion(d)[0]
    assert kind == "no-kernel-for-gpu" and "(cuda_v13)" in text and "compute capability 5.2" in text


def test_cuda_inference_compute_is_a_cuda_device(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                listen("0.12.3"),
                slog(
                    "INFO",
                    "types.go:130",
                    "inference compute",
                    "id=GPU-1 library=cuda variant=v12 compute=7.5 driver=12.4 "
                    'name="NVIDIA GeForce RTX 2060" total="6.0 GiB" available="5.1 GiB"',
                ),
            ],
        )
    )
    [gpu] = d["gpus"]
    assert gpu["target"] == "sm_75" and gpu["vendor"] == "nvidia" and "kept by discovery" in gpu["role"]
    assert not d["findings"] and not any(u["what"] == "gfx target" for u in d["unknowns"])


# -- Ollama's discovery failures ----------------------------------------------------------------------------------
def test_kfd_permission_denied(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        logs.journal(
            [
                listen("0.12.3"),
                slog(
                    "ERROR",
                    "amd_linux.go:411",
                    "amdgpu devices detected but permission problems block access: open /dev/kfd: permission denied",
                ),
            ]
        ),
    )
    f = finding(d, "ollama-amdgpu-permission")
    assert f["vendor"] == "amd" and f["layer"] == "discovery" and "render" in f["remedy"]
    assert conclusion(d)[0][0] == "dropped-by-discovery"


@pytest.mark.parametrize(
    ("line", "message", "word"),
    [
        (
            slog(
                "INFO",
                "runner.go:464",
                "failure during GPU discovery",
                'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/cuda_v13]" extra_envs=map[] error="failed to finish discovery before timeout"',
            ),
            "ollama-discovery-timeout",
            "hung",
        ),
        (
            slog(
                "INFO",
                "runner.go:522",
                "failure during llama-server GPU discovery",
                r'OLLAMA_LIBRARY_PATH="[C:\\Users\\me\\AppData\\Local\\Programs\\Ollama\\lib\\ollama]" extra_envs=map[] '
                'error="llama-server --list-devices failed: exit status 0xc0000005" detail=""',
            ),
            "ollama-list-devices-failed",
            "access violation",
        ),
        (
            slog(
                "DEBUG",
                "amd_windows.go:34",
                "unable to load amdhip64_6.dll, please make sure to upgrade to the latest amd driver: "
                "The specified module could not be found.",
            ),
            "ollama-amdhip-dll-missing",
            "HIP 6 runtime",
        ),
    ],
)
def test_discovery_failures(gfxgate_cli, tmp_path, line, message, word):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [listen("0.12.3" if "amdhip" in message else "0.17.5" if "timeout" in message else "0.32.15"), line],
    )
    f = finding(d, message)
    assert f["layer"] == "discovery" and word in f["remedy"] and f["stale"] is None
    assert conclusion(d)[0][0] == "dropped-by-discovery"


# -- the wrong device ---------------------------------------------------------------------------------------------
def test_an_igpu_left_out_while_the_discrete_gpu_runs_is_not_the_gpu_dropped(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        [
            listen("0.32.15"),
            slog(
                "INFO",
                "runner.go:405",
                "dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1",
                'id=1 library=Vulkan compute=0.0 name=Vulkan1 description="AMD Radeon Graphics (RADV RAPHAEL_MENDOCINO)" pci_id=0000:12:00.0',
            ),
            slog(
                "INFO",
                "types.go:42",
                "inference compute",
                "id=0 filter_id=0 library=ROCm compute=gfx1030 name=ROCm0 "
                'description="AMD Radeon RX 6800 XT" libdirs=ollama,rocm_v7_2 driver=70226.0 pci_id=0000:03:00.0 type=discrete '
                'total="16.0 GiB" available="15.5 GiB"',
            ),
            slog(
                "INFO",
                "llama_server.go:433",
                "starting llama-server",
                'cmd="/usr/lib/ollama/llama-server --model /m.gguf --port 40129"',
            ),
            "load_tensors: offloaded 29/29 layers to GPU",
            *[
                f"load_tensors: {n:>12} model buffer size = {m:8.2f} MiB"
                for n, m in (("CPU_Mapped", 80.0), ("ROCm0", 1900.25))
            ],
            slog("INFO", "llama_server.go:1362", "llama-server started in 1.20 seconds"),
        ],
    )
    kinds = dict(conclusion(d))
    assert "dropped-by-discovery" not in kinds and "ran-on-gpu" in kinds
    assert "integrated GPU" in kinds["device-left-out"] and "AMD Radeon RX 6800 XT (ROCm)" in kinds["device-left-out"]
    roles = {g["name"]: g["role"] for g in d["gpus"]}
    assert roles["AMD Radeon RX 6800 XT"].startswith("used: holds the model buffer ROCm0")
    assert roles["AMD Radeon Graphics (RADV RAPHAEL_MENDOCINO)"].startswith("left out: Ollama drops an integrated GPU")


def test_ollama_picked_the_intel_igpu_vulkan_device_instead_of_the_rtx_4070(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                listen("0.32.15"),
                nvidia_cuda_compute("8.9", "NVIDIA GeForce RTX 4070", "ollama,cuda_v13"),
                slog(
                    "INFO",
                    "types.go:42",
                    "inference compute",
                    "id=0 filter_id=0 library=Vulkan compute=0.0 name=Vulkan0 "
                    'description="Intel(R) UHD Graphics 770 (ADL-S GT1)" libdirs=ollama,vulkan driver=0.0 pci_id=0000:00:02.0 '
                    'type=iGPU total="15.6 GiB" available="7.6 GiB"',
                ),
                slog(
                    "INFO",
                    "sched.go:1013",
                    "selecting single GPU for llama-server model",
                    'main_gpu=0 id=0 filter_id=0 library=Vulkan name=Vulkan0 description="Intel(R) UHD Graphics 770 (ADL-S GT1)" '
                    'integrated=true predicted="4.3 GiB" available="7.6 GiB"',
                ),
            ],
        )
    )
    [c] = [c for c in d["conclusions"] if c["kind"] == "wrong-device"]
    assert (
        "Ollama picked the Intel iGPU's Vulkan device (Intel(R) UHD Graphics 770 (ADL-S GT1)) instead of the NVIDIA GeForce RTX 4070"
        in c["text"]
    )
    assert "OLLAMA_LLM_LIBRARY=cuda_v13" in c["remedy"] and "OLLAMA_VULKAN=0" in c["remedy"]
    assert "OLLAMA_IGPU_ENABLE" not in str(d)
    roles = {g["name"]: g["role"] for g in d["gpus"]}
    assert roles["Intel(R) UHD Graphics 770 (ADL-S GT1)"].startswith("selected by the scheduler")


def test_rocr_visible_devices_from_slurm_on_an_nvidia_node(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                slog(
                    "INFO",
                    "routes.go:1475",
                    "server config",
                    'env="map[CUDA_VISIBLE_DEVICES: HIP_VISIBLE_DEVICES: '
                    'HSA_OVERRIDE_GFX_VERSION: OLLAMA_LLM_LIBRARY: ROCR_VISIBLE_DEVICES:0]"',
                ),
                listen("0.32.15"),
                "ggml_cuda_init: found 0 CUDA devices:",
                slog(
                    "INFO",
                    "types.go:50",
                    "inference compute",
                    'id=cpu library=cpu compute="" name=cpu description=cpu '
                    'libdirs=ollama driver="" pci_id="" type="" total="503.5 GiB" available="480.1 GiB"',
                ),
            ],
        )
    )
    c = next(c for c in d["conclusions"] if c["kind"] == "hidden-by-environment")
    assert "ROCR_VISIBLE_DEVICES=0" in c["text"] and "CUDA_VISIBLE_DEVICES" in c["remedy"]


# -- what the runner really was -----------------------------------------------------------------------------------
def test_offload_to_cuda_then_a_cpu_runner_is_no_gpu_runner(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            [
                slog("INFO", "routes.go:1259", "Listening on 127.0.0.1:11434 (version 0.5.7)"),
                slog(
                    "INFO",
                    "memory.go:356",
                    "offload to cuda",
                    'layers.requested=-1 layers.model=33 layers.offload=33 layers.split="" memory.available="[7.7 GiB]" '
                    'memory.gpu_overhead="0 B" memory.required.full="5.5 GiB" memory.required.partial="5.5 GiB" '
                    'memory.required.kv="256.0 MiB" memory.required.allocations="[5.5 GiB]"',
                ),
                slog(
                    "INFO",
                    "server.go:376",
                    "starting llama server",
                    'cmd="/tmp/ollama3412/runners/cpu_avx2/ollama_llama_server runner --model /m --ctx-size 2048 --batch-size 512 '
                    '--n-gpu-layers 33 --threads 8 --parallel 1 --port 40123"',
                ),
            ],
        )
    )
    c = next(c for c in d["conclusions"] if c["kind"] == "no-gpu-runner")
    assert "Ollama planned 33 layers for cuda (log line 2) but started the cpu_avx2 runner (log line 3)" in c["text"]
    assert "cuda_v12" in c["remedy"]
    assert finding(d, "ollama-offload-to")["layer"] == "installed-gpu-code"


def test_an_override_the_server_never_had_is_said_not_repeated(gfxgate_cli, tmp_path):
    d = diagnose(gfxgate_cli, tmp_path, logs.ollama_0_12_3())  # server config: HSA_OVERRIDE_GFX_VERSION empty
    f = next(f for f in d["findings"] if f["family"] == "amdgpu-not-supported")
    assert any("never reached the server" in line for line in f["context"])


def test_a_successful_start_before_a_crash_keeps_the_conclusion(gfxgate_cli, tmp_path):
    start = [
        listen("0.12.3"),
        slog("INFO", "server.go:430", "starting runner", 'cmd="/usr/bin/ollama runner --model /m --port 40123"'),
        slog("INFO", "server.go:1289", "llama runner started in 2.91 seconds"),
    ]
    crash = [
        "CUDA error: no kernel image is available for execution on the device",
        "  current device: 0, in function ggml_cuda_compute_forward at /go/src/ggml-cuda.cu:2400",
    ]
    alone = diagnose(gfxgate_cli, tmp_path, crash)
    after = diagnose(gfxgate_cli, tmp_path, start + crash)
    assert alone["conclusions"] and after["conclusions"]
    assert conclusion(after)[0][0] == "crashed-computing" and after["runs"][0]["outcome"] == "failed"


def test_an_old_vulkan_summary_names_the_gpu_buffer(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli,
        tmp_path,
        llama_run(
            "llm_load_tensors: offloaded 33/33 layers to GPU",
            "llm_load_tensors:        CPU buffer size =    70.31 MiB",
            "llm_load_tensors: Radeon RX 580 Series buffer size =  4095.05 MiB",
        ),
    )
    run = d["runs"][0]
    assert {"buffer": "Radeon RX 580 Series", "mib": 4095.05} in run["placement"] and run["outcome"] == "ok"
    assert conclusion(d)[0][0] == "ran-on-gpu" and "Radeon RX 580 Series" in conclusion(d)[0][1]


# -- negative controls ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(p.name for p in H200.glob("cuda-*.log")) if H200.is_dir() else [])
def test_the_real_h200_logs_have_no_failure_and_no_amd_advice(gfxgate_cli, tmp_path, name):
    d = non_amd(diagnose(gfxgate_cli, tmp_path, (H200 / name).read_text(encoding="utf-8", errors="replace")))
    failures = [f["message"] for f in d["findings"]]
    # g0 is the sweep's cell of 0 GPU layers (g<layers> in the name): its "offloaded 0/29" is the one finding it may have
    assert failures == (["offloaded-zero"] if "-g0-" in name else []), failures
    assert all(g["vendor"] == "nvidia" and g["target"] == "sm_90" for g in d["gpus"] if g["backend"] == "CUDA")
    assert not {c["kind"] for c in d["conclusions"]} & {
        "out-of-memory",
        "no-kernel-for-gpu",
        "driver-too-old",
        "wrong-device",
    }


def test_a_partial_offload_by_design_and_a_harmless_nvml_line_conclude_no_failure(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_nvml_init unable to load libnvidia-ml: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
                "ggml_cuda_init: found 1 CUDA devices:",
                cuda_device(0, "NVIDIA GeForce RTX 3060", "8.6", 12044),
                "load_tensors: offloaded 42/43 layers to GPU",
                *[
                    f"load_tensors: {n:>12} model buffer size = {m:8.2f} MiB"
                    for n, m in (("CPU_Mapped", 410.0), ("CUDA0", 11020.5))
                ],
            ),
        )
    )
    assert d["findings"] == []
    assert [k for k, _ in conclusion(d)] == ["ran-on-gpu"]
    assert any(g["role"].startswith("used: holds the model buffer CUDA0") for g in d["gpus"])


# -- no AMD advice anywhere -----------------------------------------------------------------------------------------
def test_every_amd_only_workaround_is_known_as_such():
    """A workaround whose setting acts on AMD's stack (HSA/ROCr/HIP variables, rocBLAS files, gfx builds, the rocm
    runner) is in vendor.AMD_ONLY, so no NVIDIA or Intel finding is offered it."""
    from gfxgate.gate.workarounds import default_workarounds

    amd = re.compile(r"HSA_|ROCR_|HIP_|AMDGPU|rocblas|=rocm\b|HIP_ARCH|RocmCompute|GGML_HIP", re.IGNORECASE)
    found = {w.id for w in default_workarounds() if amd.search(w.setting) or w.override}
    assert found <= AMD_ONLY, found - AMD_ONLY


def test_every_vendor_neutral_failure_with_amd_words_has_nvidia_and_intel_remedies_or_is_guarded():
    """A remedy with AMD words on a message any vendor prints either has the vendor's own remedy, or diagnose replaces
    it (tests above); the catalogue's NVIDIA/Intel remedies themselves carry no AMD words, its AMD remedies no NVIDIA's."""
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.vendor import NVIDIA_ONLY, NVIDIA_WORDS

    for message in default_catalogue().messages:
        for alt in message.vendor_remedies:
            if alt.vendor == "amd":
                assert not NVIDIA_WORDS.search(alt.remedy) and not set(alt.workarounds) & NVIDIA_ONLY, message.id
                continue
            assert not AMD_WORDS.search(alt.remedy), (message.id, alt.vendor)
            assert not set(alt.workarounds) & AMD_ONLY, (message.id, alt.vendor)
        if message.vendor in ("nvidia", "intel"):
            assert not AMD_WORDS.search(message.remedy or ""), message.id
            assert not set(message.workarounds) & AMD_ONLY, message.id


def test_an_intel_iris_xe_device_lost_gets_intel_advice_not_rocm(gfxgate_cli, tmp_path):
    d = non_amd(
        diagnose(
            gfxgate_cli,
            tmp_path,
            llama_run(
                "ggml_vulkan: 0 = Intel(R) Iris(R) Xe Graphics (Intel Corporation) | uma: 1 | fp16: 1 | bf16: 0 | warp size: 32 | "
                "shared memory: 32768 | int dot: 1 | matrix cores: none",
                "load_tensors: offloaded 29/29 layers to GPU",
            )
            + [
                "terminate called after throwing an instance of 'vk::DeviceLostError'",
                "  what():  vk::Queue::submit: ErrorDeviceLost",
            ],
        )
    )
    f = finding(d, "vulkan-device-lost")
    assert f["vendor"] == "intel" and "Intel" in f["remedy"] and "ROCm" not in f["remedy"]
    assert conclusion(d)[0][0] == "crashed-computing"


def test_a_cpu_buffer_that_does_not_fit_is_system_memory_not_gpu_memory(gfxgate_cli, tmp_path):
    d = diagnose(
        gfxgate_cli, tmp_path, llama_run("alloc_tensor_range: failed to allocate CPU buffer of size 34359738368")[:-1]
    )
    kind, text = conclusion(d)[0]
    assert (
        kind == "out-of-memory"
        and text.startswith("out of system memory (a CPU buffer)")
        and "needed 32,768 MiB" in text
    )
