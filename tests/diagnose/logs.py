"""Log fixtures in the formats of Ollama v0.12.3, v0.17.5 and v0.30+ and of llama.cpp.

The Ollama lines follow the printing code of those tags (slog's text handler: ``time= level= source=FILE:LINE
msg= key=value``, the attributes each call passes, Go's %q quoting); the opt-in upstream test renders the
same messages from the real printing code and checks the catalogue matches them. The Go crash report comes
from the sweep fixtures (``tests/sweep/ollama_server.py``).
"""

from __future__ import annotations

from tests.sweep.ollama_server import Behaviour, State, segv_lines


def slog(time: str, level: str, source: str, msg: str, **attrs: str) -> str:
    def q(value: str) -> str:
        return (
            value
            if value and all(c not in value for c in ' ="')
            else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        )

    tail = "".join(f" {k}={q(v)}" for k, v in attrs.items())
    return f"time={time} level={level} source={source} msg={q(msg)}{tail}"


def journal(lines: list[str], unit: str = "ollama", host: str = "vega") -> list[str]:
    """`journalctl -o short` prefixes, as `journalctl -u ollama > log` saves them."""
    return [f"Oct 05 10:00:{i % 60:02d} {host} {unit}[812]: {line}" for i, line in enumerate(lines)]


T = "2025-10-05T10:00:00.000+02:00"


def ollama_0_12_3(*, override: str = "") -> list[str]:
    """gfx900 rejected by the v0.12.3 ROCm discovery; the model then runs on the CPU."""
    return [
        slog(
            T,
            "INFO",
            "routes.go:1475",
            "server config",
            env=f"map[CUDA_VISIBLE_DEVICES: GPU_DEVICE_ORDINAL: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION:{override} OLLAMA_DEBUG:INFO OLLAMA_LLM_LIBRARY: OLLAMA_ORIGINS:[http://localhost https://localhost] ROCR_VISIBLE_DEVICES: http_proxy:]",
        ),
        slog(T, "INFO", "images.go:518", "total blobs: 5"),
        slog(T, "INFO", "routes.go:1528", "Listening on 127.0.0.1:11434 (version 0.12.3)"),
        slog(T, "INFO", "gpu.go:217", "looking for compatible GPUs"),
        slog(
            T,
            "WARN",
            "amd_linux.go:380",
            "amdgpu is not supported (supported types:[gfx1010 gfx1012 gfx1030 gfx1100 gfx1101 gfx1102 gfx1151 gfx1200 gfx1201 gfx906 gfx908 gfx90a gfx942])",
            gpu_type="gfx900",
            gpu="0",
            library="/usr/lib/ollama/rocm",
        ),
        slog(
            T,
            "WARN",
            "amd_linux.go:387",
            "See https://github.com/ollama/ollama/blob/main/docs/gpu.md#overrides for HSA_OVERRIDE_GFX_VERSION usage",
        ),
        slog(T, "INFO", "gpu.go:396", "no compatible GPUs were discovered"),
        slog(
            T,
            "INFO",
            "types.go:131",
            "inference compute",
            id="0",
            library="cpu",
            variant="",
            compute="",
            driver="0.0",
            name="",
            total="31.3 GiB",
            available="28.1 GiB",
        ),
        '[GIN] 2025/10/05 - 10:01:00 | 200 |      51.2µs |       127.0.0.1 | HEAD     "/"',
        slog(
            T,
            "INFO",
            "server.go:399",
            "starting runner",
            cmd="/usr/bin/ollama runner --ollama-engine --model /var/lib/ollama/blobs/sha256-aa --port 40123",
        ),
        slog(T, "INFO", "ggml.go:487", "offloading output layer to CPU"),
        slog(T, "INFO", "ggml.go:498", "offloaded 0/29 layers to GPU"),
        slog(T, "INFO", "server.go:1289", "llama runner started in 2.91 seconds"),
    ]


def ollama_0_17_5_crash() -> list[str]:
    """v0.17.5 with Vulkan on: gfx900 found by ROCm and Vulkan, the model loads on Vulkan and crashes in compute."""
    state = State(Behaviour())
    return [
        slog(
            T,
            "INFO",
            "routes.go:1665",
            "server config",
            env="map[CUDA_VISIBLE_DEVICES: GGML_VK_VISIBLE_DEVICES: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: OLLAMA_DEBUG:INFO OLLAMA_VULKAN:true ROCR_VISIBLE_DEVICES:]",
        ),
        slog(T, "INFO", "routes.go:1720", "Listening on 127.0.0.1:11434 (version 0.17.5)"),
        slog(T, "INFO", "runner.go:67", "discovering available GPUs..."),
        slog(
            T,
            "INFO",
            "types.go:42",
            "inference compute",
            id="0",
            filter_id="0",
            library="ROCm",
            compute="gfx900",
            name="ROCm0",
            description="Radeon RX Vega",
            libdirs="ollama,rocm",
            driver="60342.13",
            pci_id="0000:03:00.0",
            type="discrete",
            total="8.0 GiB",
            available="7.9 GiB",
        ),
        slog(
            T,
            "INFO",
            "server.go:430",
            "starting runner",
            cmd="/usr/bin/ollama runner --ollama-engine --model /var/lib/ollama/blobs/sha256-bb --port 40125",
        ),
        "load_backend: loaded Vulkan backend from /usr/lib/ollama/vulkan/libggml-vulkan.so",
        "ggml_vulkan: Found 1 Vulkan devices:",
        "ggml_vulkan: 0 = AMD Radeon RX Vega (RADV VEGA10) (radv) | uma: 0 | fp16: 1 | bf16: 0 | warp size: 64 | shared memory: 65536 | int dot: 0 | matrix cores: none",
        slog(T, "INFO", "ggml.go:494", "offloaded 29/29 layers to GPU"),
        slog(T, "INFO", "server.go:1388", "llama runner started in 3.02 seconds"),
        *segv_lines(state),
    ]


def ollama_0_12_3_rocblas() -> list[str]:
    """v0.12.3 with HSA_OVERRIDE_GFX_VERSION=9.0.0 on a gfx90c APU: rocBLAS has no kernels, the runner dies."""
    return [
        slog(
            T,
            "INFO",
            "routes.go:1475",
            "server config",
            env="map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION:9.0.0 ROCR_VISIBLE_DEVICES:]",
        ),
        slog(T, "INFO", "routes.go:1528", "Listening on 127.0.0.1:11434 (version 0.12.3)"),
        slog(T, "INFO", "amd_linux.go:393", "skipping rocm gfx compatibility check", HSA_OVERRIDE_GFX_VERSION="9.0.0"),
        slog(
            T,
            "INFO",
            "types.go:131",
            "inference compute",
            id="0",
            library="rocm",
            variant="",
            compute="gfx900",
            driver="6.3",
            name="1002:1638",
            total="2.0 GiB",
            available="1.9 GiB",
        ),
        slog(T, "INFO", "server.go:399", "starting runner", cmd="/usr/bin/ollama runner --model /m --port 40127"),
        "ggml_cuda_init: found 1 ROCm devices:",
        "  Device 0: AMD Radeon Graphics, gfx900:xnack- (0x900), VMM: no, Wave Size: 64",
        "load_backend: loaded ROCm backend from /usr/lib/ollama/libggml-hip.so",
        "",
        "rocBLAS error: Cannot read /usr/lib/ollama/rocm/rocblas/library/TensileLibrary.dat: No such file or directory for GPU arch : gfx900",
        " List of available TensileLibrary Files : ",
        "SIGABRT: abort",
        "PC=0x7f3a1c0969fc m=0 sigcode=18446744073709551610",
        "signal arrived during cgo execution",
        slog(
            T,
            "ERROR",
            "sched.go:489",
            "error loading llama server",
            error="llama runner process has terminated: exit status 2",
        ),
    ]


def ollama_0_5_7() -> list[str]:
    """v0.5.7 (the "starting llama server" wording, v0.1.32 … v0.11.4): gfx1030 loads 33/33 layers; a second load dies."""
    t = "2025-01-20T09:00:00.000Z"
    start = slog(
        t,
        "INFO",
        "server.go:376",
        "starting llama server",
        cmd="/usr/lib/ollama/runners/rocm_avx/ollama_llama_server runner --model /m.gguf --ctx-size 2048 --batch-size 512 --n-gpu-layers 33 --threads 8 --parallel 1 --port 40129",
    )
    return [
        slog(
            t,
            "INFO",
            "routes.go:1187",
            "server config",
            env="map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: OLLAMA_DEBUG:false OLLAMA_LLM_LIBRARY: ROCR_VISIBLE_DEVICES:]",
        ),
        slog(t, "INFO", "routes.go:1238", "Listening on 127.0.0.1:11434 (version 0.5.7)"),
        slog(
            t,
            "INFO",
            "types.go:131",
            "inference compute",
            id="0",
            library="rocm",
            variant="",
            compute="gfx1030",
            driver="6.3",
            name="1002:73bf",
            total="16.0 GiB",
            available="15.7 GiB",
        ),
        start,
        "llm_load_tensors: offloaded 33/33 layers to GPU",
        slog(t, "INFO", "server.go:594", "llama runner started in 3.02 seconds"),
        start,
        slog(
            t,
            "ERROR",
            "sched.go:455",
            "error loading llama server",
            error="llama runner process has terminated: signal: segmentation fault (core dumped)",
        ),
    ]


def ollama_0_32() -> list[str]:
    """v0.32.15 (llama-server runner): the dGPU is dropped for rocBLAS, the iGPU for being integrated."""
    t = "2026-11-20T09:00:00.000Z"
    return [
        slog(
            t,
            "INFO",
            "routes.go:1951",
            "server config",
            env="map[HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: OLLAMA_IGPU_ENABLE:false OLLAMA_VULKAN:true ROCR_VISIBLE_DEVICES:]",
        ),
        slog(t, "INFO", "routes.go:2008", "Listening on [::]:11434 (version 0.32.15)"),
        slog(t, "INFO", "runner.go:60", "discovering available GPUs..."),
        slog(
            t,
            "WARN",
            "amd.go:470",
            "dropping ROCm device — no rocblas support for gfx target",
            device="Radeon RX Vega",
            gfx_target="gfx900",
            supported="map[gfx1030:true gfx1100:true gfx906:true]",
            hint="set HSA_OVERRIDE_GFX_VERSION to map to a supported target",
        ),
        slog(
            t,
            "INFO",
            "runner.go:405",
            "dropping integrated GPU; to enable, set OLLAMA_IGPU_ENABLE=1",
            id="1",
            library="Vulkan",
            compute="0.0",
            name="Vulkan1",
            description="AMD Radeon Graphics (RADV RENOIR)",
            pci_id="0000:07:00.0",
        ),
        slog(
            t,
            "INFO",
            "types.go:50",
            "inference compute",
            id="cpu",
            library="cpu",
            compute="",
            name="cpu",
            description="cpu",
            libdirs="ollama",
            driver="",
            pci_id="",
            type="",
            total="31.3 GiB",
            available="28.0 GiB",
        ),
        slog(
            t,
            "INFO",
            "llama_server.go:433",
            "starting llama-server",
            cmd="/usr/lib/ollama/llama-server --model /m.gguf --port 40129",
        ),
        "load_tensors: offloaded 0/29 layers to GPU",
        slog(t, "INFO", "llama_server.go:1362", "llama-server started in 1.20 seconds"),
    ]


def llama_server_hip(*, crash: bool = False) -> list[str]:
    """llama-server stderr with the HIP backend on gfx900 (format strings of the llama.cpp tree at 0c1e57098)."""
    lines = [
        "ggml_cuda_init: found 1 ROCm devices (Total VRAM: 8176 MiB):",
        "  Device 0: Radeon RX Vega, gfx900:xnack- (0x900), VMM: no, Wave Size: 64, VRAM: 8176 MiB",
        "load_backend: loaded ROCm backend from /usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so",
        "build: 6981 (0c1e5709) with cc (Debian 15.2.0-7) 15.2.0 for x86_64-linux-gnu",
        "system_info: n_threads = 8 (n_threads_batch = 8) / 16 | ROCm : NO_VMM = 1 | PEER_MAX_BATCH_SIZE = 128 |",
        "main: loading model",
        "load_tensors: offloaded 29/29 layers to GPU",
        "main: model loaded",
        "srv    main: listening on http://127.0.0.1:8080",
    ]
    if crash:
        lines += [
            "ROCm error: invalid device function",
            "  current device: 0, in function ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2600",
            "  err",
            "/build/ggml/src/ggml-cuda/ggml-cuda.cu:101: ROCm error",
            "Aborted (core dumped)",
        ]
    return lines
