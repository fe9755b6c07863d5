"""Captured-machine trees for doctor's tests: what /sys, /etc and /usr hold on a machine with one AMD GPU."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

HERE = Path(__file__).parent / "fixtures"

# kfd_topology.c node_show order (a captured MI100 node has exactly these keys)
_FIELDS = (
    "cpu_cores_count",
    "simd_count",
    "mem_banks_count",
    "caches_count",
    "io_links_count",
    "p2p_links_count",
    "cpu_core_id_base",
    "simd_id_base",
    "max_waves_per_simd",
    "lds_size_in_kb",
    "gds_size_in_kb",
    "num_gws",
    "wave_front_size",
    "array_count",
    "simd_arrays_per_engine",
    "cu_per_simd_array",
    "simd_per_cu",
    "max_slots_scratch_cu",
    "gfx_target_version",
    "vendor_id",
    "device_id",
    "location_id",
    "domain",
    "drm_render_minor",
    "hive_id",
    "num_sdma_engines",
    "num_sdma_xgmi_engines",
    "num_sdma_queues_per_engine",
    "num_cp_queues",
    "max_engine_clk_fcompute",
    "local_mem_size",
    "fw_version",
    "capability",
    "debug_prop",
    "sdma_fw_version",
    "unique_id",
    "num_xcc",
    "max_engine_clk_ccompute",
)

CARDS = {
    # name: gfx_target_version, PCI device, revision, CUs, wave size, VRAM, GTT
    "vega56": (90000, 0x687F, 0xC3, 56, 64, 8 << 30, 16 << 30),
    "rx6700xt": (100301, 0x73DF, 0xC1, 40, 32, 12 << 30, 16 << 30),
    "780m": (110003, 0x15BF, 0xC1, 12, 32, 512 << 20, 24 << 30),
}


# what a release builds for (the ROCm preset's list, without the targets these tests are about)
RELEASE_ARCHS = ("gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx90a", "gfx942")


def _props(values: dict[str, int]) -> str:
    return "".join(f"{k} {values.get(k, 0)}\n" for k in _FIELDS)


def machine(
    root: Path,
    card: str,
    *,
    version: str,
    runner: str = "rocm",
    rocblas_targets=("gfx1030", "gfx1100"),
    dropin: str | None = None,
    render_members: str = "",
    built=None,
) -> Path:
    """``built`` (tests.artifacts.artifact_builders.Built, clang-19): real GPU code in the runner folder — a
    libggml-hip.so for RELEASE_ARCHS and, per rocBLAS target, its Kernels.so hsaco and a Tensile bundle."""
    gtv, device, rev, cus, wave, vram, gtt = CARDS[card]
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    (nodes / "0").mkdir(parents=True)
    (nodes / "0/properties").write_text(
        _props({"cpu_cores_count": 16, "mem_banks_count": 1, "io_links_count": 1, "max_engine_clk_ccompute": 4200})
    )
    (nodes / "1").mkdir()
    (nodes / "1/gpu_id").write_text("53970\n")
    (nodes / "1/properties").write_text(
        _props(
            {
                "simd_count": cus * 4,
                "mem_banks_count": 1,
                "caches_count": 110,
                "io_links_count": 1,
                "simd_id_base": 2147487744,
                "max_waves_per_simd": 10 if wave == 64 else 16,
                "lds_size_in_kb": 64,
                "wave_front_size": wave,
                "array_count": 4,
                "simd_arrays_per_engine": 1,
                "cu_per_simd_array": cus // 4,
                "simd_per_cu": 4 if wave == 64 else 2,
                "max_slots_scratch_cu": 32,
                "gfx_target_version": gtv,
                "vendor_id": 4098,
                "device_id": device,
                "location_id": 768,
                "drm_render_minor": 128,
                "num_sdma_engines": 2,
                "num_sdma_queues_per_engine": 8,
                "num_cp_queues": 24,
                "max_engine_clk_fcompute": 1590,
                "fw_version": 469,
                "capability": 671588992,
                "num_xcc": 1,
                "max_engine_clk_ccompute": 4200,
            }
        ).replace("simd_per_cu 4", f"simd_per_cu {4 if wave == 64 else 2}")
    )
    dev = root / "sys/class/drm/renderD128/device"
    dev.mkdir(parents=True)
    for name, value in (
        ("vendor", "0x1002"),
        ("device", f"0x{device:04x}"),
        ("revision", f"0x{rev:02x}"),
        ("mem_info_vram_total", str(vram)),
        ("mem_info_gtt_total", str(gtt)),
    ):
        (dev / name).write_text(value + "\n")
    (dev / "uevent").write_text(f"DRIVER=amdgpu\nPCI_ID=1002:{device:04X}\nPCI_SLOT_NAME=0000:03:00.0\n")
    (root / "sys/module/amdgpu").mkdir(parents=True)
    (root / "sys/module/amdgpu/initstate").write_text("live\n")
    etc = root / "etc"
    (etc / "systemd/system").mkdir(parents=True)
    shutil.copy(HERE / "ollama.service", etc / "systemd/system/ollama.service")
    if dropin:
        (etc / "systemd/system/ollama.service.d").mkdir()
        (etc / "systemd/system/ollama.service.d/override.conf").write_text(dropin)
    (etc / "group").write_text(
        "root:x:0:\nvideo:x:44:\nrender:x:993:" + render_members + "\nollama:x:998:student\nstudent:x:1000:\n"
    )
    (etc / "passwd").write_text(
        "root:x:0:0:root:/root:/bin/bash\nstudent:x:1000:1000::/home/student:/bin/bash\n"
        "ollama:x:998:998::/usr/share/ollama:/bin/false\n"
    )
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/ollama").write_bytes(b"\x7fELF captured; never run\n")
    lib = root / "usr/local/lib/ollama" / runner
    blas = lib / "rocblas/library"
    blas.mkdir(parents=True)
    import msgpack

    for target in rocblas_targets:
        (blas / f"TensileLibrary_lazy_{target}.dat").write_bytes(msgpack.packb({"library": {"type": "Hardware"}}))
        if built is not None:
            shutil.copy(built.code_object(target), blas / f"Kernels.so-000-{target}.hsaco")
            shutil.copy(
                built.device_bundle(f"tensile-{target}.co", archs=(target,)),
                blas / f"TensileLibrary_Type_SS_Contraction_l_Alik_Bljk_Cijk_Dijk_{target}.co",
            )
    if built is not None:
        shutil.copy(built.hip_so("libggml-hip-release.so", archs=RELEASE_ARCHS), lib / "libggml-hip.so")
    (lib / "libggml-base.so").write_bytes(b"")
    (root / "usr/local/lib/ollama/vulkan").mkdir()
    (root / "usr/local/lib/ollama/vulkan/libggml-vulkan.so").write_bytes(b"")
    manifest = {
        "stat": {
            "/dev/kfd": {"mode": "0660", "uid": 0, "gid": 993, "kind": "char"},
            "/dev/dri/renderD128": {"mode": "0660", "uid": 0, "gid": 993, "kind": "char"},
        },
        "probes": {"ollama --version": f"ollama version is {version}\n"},
        "user": "student",
    }
    (root / ".gfxgate-doctor").mkdir()
    (root / ".gfxgate-doctor/stat.json").write_text(json.dumps(manifest))
    return root
