"""Issue 39's "Done when", re-verified in one table through the installed script (one process for every case).

Every family the issue names, each with the message diagnose recognises, its vendor, its layer, the conclusion said
first and a word of its vendor-correct remedy (the whole diagnosis also through ``tests/diagnose/advice.py``); a
successful ``llama runner started`` before a crash keeps the conclusion; the negative controls (the real H200 logs,
a healthy llama-server run, a 42/43 partial offload by design, a harmless NVML warning) give no verdict and no failure
conclusion. The lines are those of tests/diagnose/test_vendors.py and test_windows.py (the printing code at the tags
that print them, in the forms users paste them); the speed and memory bounds are tests/diagnose/test_bounded.py's.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.diagnose import logs
from tests.diagnose.advice import problems
from tests.diagnose.test_excerpts import llama_run
from tests.diagnose.test_vendors import H200, cuda_device, listen, nvidia_cuda_compute, slog

RTX = ["ggml_cuda_init: found 1 CUDA devices:", cuda_device(0, "NVIDIA GeForce RTX 3060", "8.6", 12044)]
GTX970 = ["ggml_cuda_init: found 1 CUDA devices:", cuda_device(0, "NVIDIA GeForce GTX 970", "5.2", 4035)]
ARC = [
    "ggml_vulkan: 0 = Intel(R) Arc(tm) A380 Graphics (DG2) (Intel open-source Mesa driver) | uma: 0 | fp16: 1 | bf16: 0 | "
    "warp size: 32 | shared memory: 65536 | int dot: 1 | matrix cores: none"
]
RX = [
    "ggml_cuda_init: found 1 ROCm devices:",
    "  Device 0: AMD Radeon RX 6800 XT, gfx1030 (0x1030), VMM: no, Wave Size: 32, VRAM: 16368 MiB",
]
ROCM_COMPUTE = slog(
    "INFO",
    "types.go:131",
    "inference compute",
    'id=GPU-6d2c library=rocm variant="" compute=gfx1030 driver=6.3 '
    'name=1002:73bf total="16.0 GiB" available="15.2 GiB"',
)
RUNNER = slog("INFO", "server.go:430", "starting runner", 'cmd="/usr/bin/ollama runner --model /m --port 40123"')

# (case, log lines, message, vendor, layer, first conclusion, a word of the remedy)
FAMILIES = [
    # out of GPU memory, any vendor
    (
        "cudaMalloc",
        llama_run(
            *RTX,
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 13312.00 MiB on device 0: cudaMalloc "
            "failed: out of memory",
        )[:-1],
        "ggml-cuda-malloc-failed",
        "nvidia",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "CUDA error: out of memory",
        llama_run(
            *RTX,
            "CUDA error: out of memory",
            "  current device: 0, in function alloc at /build/ggml/src/ggml-cuda/ggml-cuda.cu:469",
        )[:-1],
        "ggml-gpu-error-oom",
        "nvidia",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "CUBLAS_STATUS_ALLOC_FAILED",
        llama_run(*RTX, "CUDA error: CUBLAS_STATUS_ALLOC_FAILED")[:-1],
        "ggml-gpu-error-oom",
        "nvidia",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "hipMalloc",
        llama_run(
            *RX,
            "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9216.00 MiB on device 0: hipMalloc "
            "failed: out of memory",
        )[:-1],
        "ggml-cuda-malloc-failed",
        "amd",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "ROCm error: out of memory",
        [
            listen("0.12.3"),
            ROCM_COMPUTE,
            RUNNER,
            "ROCm error: out of memory",
            "  current device: 0, in function alloc at /go/src/github.com/ollama/ollama/ml/backend/ggml/ggml/src/ggml-cuda/ggml-cuda.cu:469",
            "SIGABRT: abort",
        ],
        "ggml-gpu-error-oom",
        "amd",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "alloc_tensor_range",
        llama_run(*RTX, "alloc_tensor_range: failed to allocate CUDA0 buffer of size 13958643712")[:-1],
        "ggml-alloc-failed",
        "nvidia",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "kv cache",
        llama_run(
            *ARC, "llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache"
        )[:-1],
        "llama-kv-cache-alloc-failed",
        "intel",
        "runtime",
        "out-of-memory",
        "context",
    ),
    (
        "Vulkan device memory",
        llama_run(*ARC, "ggml_vulkan: Device memory allocation of size 6442450944 failed.")[:-1],
        "ggml-vulkan-alloc-failed",
        "intel",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    (
        "ErrorOutOfDeviceMemory",
        llama_run(*ARC, "  what():  vk::Device::allocateMemory: ErrorOutOfDeviceMemory")[:-1],
        "ggml-vulkan-alloc-failed",
        "intel",
        "runtime",
        "out-of-memory",
        "fewer layers",
    ),
    # NVIDIA's own failures
    (
        "no kernel image",
        [
            listen("0.12.3"),
            slog(
                "INFO",
                "types.go:130",
                "inference compute",
                "id=GPU-1 library=cuda variant=v12 "
                'compute=5.2 driver=12.4 name="NVIDIA GeForce GTX 970" total="4.0 GiB" available="3.9 GiB"',
            ),
            RUNNER,
            "CUDA error: no kernel image is available for execution on the device",
        ],
        "ggml-cuda-error-invalid-device-function",
        "nvidia",
        "installed-gpu-code",
        "no-kernel-for-gpu",
        "cuda_v12",
    ),
    (
        "device kernel image is invalid",
        llama_run(*RTX, "CUDA error: device kernel image is invalid"),
        "cuda-kernel-image-invalid",
        "nvidia",
        None,
        "driver-too-old",
        "driver",
    ),
    (
        "CUDA error 100 (WSL)",
        [
            "build: 6981 (0c1e5709) with cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu",
            "ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected",
        ],
        "cuda-no-device",
        "nvidia",
        None,
        None,
        "/usr/lib/wsl/lib",
    ),
    (
        "CUDA arch 520",
        llama_run(
            "/build/ggml/src/ggml-cuda/template-instances/../mmq.cuh:3133: ERROR: CUDA kernel mul_mat_q has "
            "no device code compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 600,610,700,750"
        )[:-1],
        "cuda-no-kernel-image",
        "nvidia",
        "installed-gpu-code",
        "no-kernel-for-gpu",
        None,
    ),
    (
        "compute 5.2 below ARCHS",
        llama_run(
            *GTX970,
            "system_info: n_threads = 4 (n_threads_batch = 4) / 8 | CUDA : ARCHS = "
            "600,610,700,750,800,860,890 | USE_GRAPHS = 1 |",
        )[:-1],
        "ggml-cuda-archs",
        "nvidia",
        "installed-gpu-code",
        "no-kernel-for-gpu",
        None,
    ),
    (
        "NVIDIA driver too old",
        [
            listen("0.32.15"),
            slog(
                "WARN",
                "cuda_compat.go:70",
                "NVIDIA driver too old",
                'device="NVIDIA GeForce GTX 1080" compute=6.1 driver=560 required_driver="570 or newer"',
            ),
        ],
        "ollama-nvidia-driver-too-old",
        "nvidia",
        "discovery",
        "driver-too-old",
        None,
    ),
    (
        "skipping CUDA device",
        [
            listen("0.32.15"),
            slog(
                "INFO",
                "llama_server.go:299",
                "skipping CUDA device — compute capability not in compiled architectures",
                'device="NVIDIA GeForce GTX 970" cc=520 archs="[750 800 860 890]" '
                'libDirs="[/usr/lib/ollama /usr/lib/ollama/cuda_v13]"',
            ),
        ],
        "ollama-cuda-cc-not-compiled",
        "nvidia",
        "discovery",
        "no-kernel-for-gpu",
        "cuda_v12",
    ),
    # Ollama's discovery failures
    (
        "/dev/kfd permission",
        [
            listen("0.12.3"),
            slog(
                "ERROR",
                "amd_linux.go:411",
                "amdgpu devices detected but permission problems block access: open /dev/kfd: permission denied",
            ),
        ],
        "ollama-amdgpu-permission",
        "amd",
        "discovery",
        "dropped-by-discovery",
        "render",
    ),
    (
        "discovery timeout",
        [
            listen("0.17.5"),
            slog(
                "INFO",
                "runner.go:464",
                "failure during GPU discovery",
                'OLLAMA_LIBRARY_PATH="[/usr/lib/ollama /usr/lib/ollama/cuda_v13]" extra_envs=map[] '
                'error="failed to finish discovery before timeout"',
            ),
        ],
        "ollama-discovery-timeout",
        None,
        "discovery",
        "dropped-by-discovery",
        "OLLAMA_DEBUG=1",
    ),
    (
        "0xc0000005",
        [
            listen("0.32.15"),
            slog(
                "INFO",
                "runner.go:522",
                "failure during llama-server GPU discovery",
                r'OLLAMA_LIBRARY_PATH="[C:\\Users\\me\\AppData\\Local\\Programs\\Ollama\\lib\\ollama]" '
                'extra_envs=map[] error="llama-server --list-devices failed: exit status 0xc0000005" detail=""',
            ),
        ],
        "ollama-list-devices-failed",
        None,
        "discovery",
        "dropped-by-discovery",
        "access violation",
    ),
    (
        "amdhip64_6.dll",
        [
            listen("0.12.3"),
            slog(
                "DEBUG",
                "amd_windows.go:34",
                "unable to load amdhip64_6.dll, please make sure to "
                "upgrade to the latest amd driver: The specified module could not be found.",
            ),
        ],
        "ollama-amdhip-dll-missing",
        "amd",
        "discovery",
        "dropped-by-discovery",
        "HIP 6 runtime",
    ),
    (
        "AMD driver is too old (Windows)",
        [
            listen("0.32.15"),
            slog("WARN", "amd.go:485", "AMD driver is too old. Update your AMD driver to enable GPU inference."),
        ],
        "ollama-amd-driver-too-old-windows",
        "amd",
        "discovery",
        "dropped-by-discovery",
        "amdhip64_7.dll",
    ),
    # what the runner really was
    (
        "offload to cuda, cpu_avx2 runner",
        [
            slog("INFO", "routes.go:1259", "Listening on 127.0.0.1:11434 (version 0.5.7)"),
            slog(
                "INFO",
                "memory.go:356",
                "offload to cuda",
                'layers.requested=-1 layers.model=33 layers.offload=33 layers.split="" memory.available="[7.7 GiB]"',
            ),
            slog(
                "INFO",
                "server.go:376",
                "starting llama server",
                'cmd="/tmp/ollama3412/runners/cpu_avx2/ollama_llama_server runner '
                '--model /m --n-gpu-layers 33 --port 40123"',
            ),
        ],
        "ollama-offload-to",
        "nvidia",
        "installed-gpu-code",
        "no-gpu-runner",
        "cuda_v12",
    ),
]


def run_all(gfxgate_exe: str, folder: Path, named: dict[str, list[str]]) -> dict[str, dict]:
    paths = []
    for i, (name, lines) in enumerate(named.items()):
        path = folder / f"case-{i:02d}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    proc = subprocess.run(
        [gfxgate_exe, "diagnose", "--no-upstream", "--format", "json", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    return dict(zip(named, json.loads(proc.stdout)["logs"]))


def test_every_family_with_its_vendor_layer_conclusion_and_remedy(gfxgate_exe, tmp_path):
    found = run_all(gfxgate_exe, tmp_path, {case[0]: case[1] for case in FAMILIES})
    wrong = []
    for name, _, message, vendor, layer, kind, word in FAMILIES:
        d = found[name]
        hits = [f for f in d["findings"] if f["message"] == message]
        if not hits:
            wrong.append(f"{name}: {message} not recognised ({[f['message'] for f in d['findings']]})")
            continue
        f = hits[0]
        remedies = " ".join(
            [
                f["remedy"],
                *(c.get("remedy") or "" for c in d["conclusions"]),
                *(c["text"] for c in d["conclusions"]),
                *f["context"],
            ]
        )
        got = (
            f["vendor"],
            f["layer"] if layer else None,
            d["conclusions"][0]["kind"] if kind and d["conclusions"] else None,
        )
        if got != (vendor, layer, kind):
            wrong.append(f"{name}: vendor, layer, first conclusion {got} != {(vendor, layer, kind)}")
        if word and word not in remedies:
            wrong.append(f"{name}: no {word!r} in {f['remedy']!r}")
        wrong += problems(d)
    assert not wrong, "\n".join(wrong)


def test_a_runner_started_before_the_crash_keeps_the_conclusion(gfxgate_exe, tmp_path):
    crash = [
        "CUDA error: no kernel image is available for execution on the device",
        "  current device: 0, in function ggml_cuda_compute_forward at /go/src/ggml-cuda.cu:2400",
    ]
    start = [listen("0.12.3"), RUNNER, slog("INFO", "server.go:1289", "llama runner started in 2.91 seconds")]
    found = run_all(gfxgate_exe, tmp_path, {"alone": crash, "after": start + crash})
    assert found["alone"]["conclusions"] and found["after"]["conclusions"]
    assert (
        found["after"]["conclusions"][0]["kind"] == "crashed-computing"
        and found["after"]["runs"][0]["outcome"] == "failed"
    )


FAILURE_CONCLUSIONS = {
    "out-of-memory",
    "driver-too-old",
    "no-kernel-for-gpu",
    "no-gpu-runner",
    "wrong-device",
    "hidden-by-environment",
    "dropped-by-discovery",
    "crashed-loading",
    "crashed-computing",
    "failed",
}


def test_the_negative_controls_give_no_verdict(gfxgate_exe, tmp_path):
    controls = {
        "partial offload 42/43 and NVML": llama_run(
            "ggml_nvml_init unable to load libnvidia-ml: libnvidia-ml.so.1: cannot open shared object file: No such file or directory",
            *RTX,
            "load_tensors: offloaded 42/43 layers to GPU",
            *[
                f"load_tensors: {n:>12} model buffer size = {m:8.2f} MiB"
                for n, m in (("CPU_Mapped", 410.0), ("CUDA0", 11020.5))
            ],
        ),
        "healthy llama-server (HIP)": logs.llama_server_hip(),
        "healthy Ollama on CUDA": [listen("0.32.15"), nvidia_cuda_compute("8.6", "NVIDIA GeForce RTX 3060")],
        **{
            f"H200 {p.name}": p.read_text(encoding="utf-8", errors="replace").splitlines()
            for p in sorted(H200.glob("*.log"))
            if "-g0-" not in p.name
        },  # g0: 0 layers by design, its one finding
    }
    found = run_all(gfxgate_exe, tmp_path, controls)
    assert len(found) >= 10
    for name, d in found.items():
        assert not [f for f in d["findings"] if f["verdict"]], name
        assert not {c["kind"] for c in d["conclusions"]} & FAILURE_CONCLUSIONS, (name, d["conclusions"])
        assert not problems(d), problems(d)
