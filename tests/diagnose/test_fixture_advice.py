"""Issue 39: no NVIDIA or Intel log gets AMD advice anywhere in the suite's fixtures, and no AMD log gets CUDA advice.

Three walks, each through the command line (``gfxgate diagnose --format json``, one command per walk, in process:
tests/inprocess.py), each diagnosis held to ``tests/diagnose/advice.py`` (whose log it is, the way diagnose classifies it):

1. every log file in the repository: ``tests/**`` and ``samples/**`` files named ``*.log``, ``*.txt``,
   ``*.journal``, ``*.out``, ``*.err`` (the real H200 logs, the sample logs, the sweep's captured llama-server
   output, …); a file no line of which diagnose recognises is no log and is skipped, and the walk must find the
   logs it knows of;
2. every log the suite builds (``tests/diagnose/logs.py``'s builders, the sweep's fake Ollama server's lines);
3. every failure example of ``rules/messages.yaml``, alone and under each vendor's device lines (an NVIDIA GPU
   through ggml-cuda's ``Device 0`` line, an Intel GPU through ggml-vulkan's, an AMD GPU through ggml-hip's, and
   Ollama's ``inference compute`` of each): the catalogue's lines are the suite's smallest fixtures.

The helpers that diagnose inline excerpts (``test_excerpts.diagnose``, ``test_diagnose.diagnose_lines``,
``test_real_llama.diagnose``) run the same check on every diagnosis they return.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from gfxgate.diagnose.catalogue import default_catalogue
from tests.diagnose import logs
from tests.diagnose.advice import problems

ROOT = Path(__file__).resolve().parents[2]
SUFFIXES = {".log", ".txt", ".journal", ".out", ".err"}
MAX_BYTES = 4 << 20
# logs the walk must find (it walks by name, so a moved fixture folder still counts; these prove it looked)
KNOWN = {
    "samples/logs/ollama-0.12.3-override-rocblas.log",
    "samples/logs/llama-server-11669-vulkan-device-none.log",
    "tests/sweep/fixtures/h200/cuda-g0.log",
}
T = "2026-11-20T09:00:00.000Z"
VENDOR_LINES = {
    "nvidia": [
        "ggml_cuda_init: found 1 CUDA devices:",
        "  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6, VMM: yes, VRAM: 12044 MiB",
    ],
    "nvidia-ollama": [
        f'time={T} level=INFO source=types.go:42 msg="inference compute" id=GPU-8f6e filter_id="" library=CUDA '
        'compute=8.6 name=CUDA0 description="NVIDIA GeForce RTX 3060" libdirs=ollama,cuda_v12 driver=12.8 '
        'pci_id=0000:01:00.0 type=discrete total="12.0 GiB" available="11.1 GiB"'
    ],
    "intel": [
        "ggml_vulkan: Found 1 Vulkan devices:",
        "ggml_vulkan: 0 = Intel(R) Arc(tm) A380 Graphics (DG2) (Intel open-source Mesa driver) | uma: 0 | fp16: 1 | "
        "bf16: 0 | warp size: 32 | shared memory: 65536 | int dot: 1 | matrix cores: none",
    ],
    "amd": [
        "ggml_cuda_init: found 1 ROCm devices:",
        "  Device 0: AMD Radeon RX 6800 XT, gfx1030 (0x1030), VMM: no, Wave Size: 32, VRAM: 16368 MiB",
    ],
    "amd-ollama": [
        f'time={T} level=INFO source=types.go:42 msg="inference compute" id=0 filter_id=0 library=ROCm '
        'compute=gfx1030 name=ROCm0 description="AMD Radeon RX 6800 XT" libdirs=ollama,rocm driver=60342.13 '
        'pci_id=0000:03:00.0 type=discrete total="16.0 GiB" available="15.5 GiB"'
    ],
}


def diagnose_all(gfxgate_cli, paths: list[Path]) -> list[dict]:
    proc = gfxgate_cli("diagnose", "--no-upstream", "--format", "json", *map(str, paths))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    found = json.loads(proc.stdout)["logs"]
    assert len(found) == len(paths)
    return found


def log_files() -> list[Path]:
    out = []
    for top in ("tests", "samples"):
        for path in sorted((ROOT / top).rglob("*")):
            if (
                path.suffix in SUFFIXES
                and path.is_file()
                and "__pycache__" not in path.parts
                and path.stat().st_size <= MAX_BYTES
            ):
                out.append(path)
    return out


def test_every_log_file_in_the_repository_gets_its_own_vendors_advice(gfxgate_cli):
    files = log_files()
    diagnosed = diagnose_all(gfxgate_cli, files)
    logs_seen = {str(p.relative_to(ROOT)): d for p, d in zip(files, diagnosed) if d["log_kind"]}
    assert KNOWN <= set(logs_seen), sorted(logs_seen)
    assert {v for d in logs_seen.values() for v in d["vendors"]} >= {"amd", "nvidia"}  # both directions were checked
    bad = [p for d in logs_seen.values() for p in problems(d)]
    assert not bad, "\n".join(bad)


def built_logs() -> dict[str, list[str]]:
    """Every log the suite's builders write: logs.py's functions (each option of theirs), the fake server's lines."""
    from tests.sweep import ollama_server

    out: dict[str, list[str]] = {}
    for name, fn in inspect.getmembers(logs, inspect.isfunction):
        if fn.__module__ != logs.__name__ or name in ("slog", "journal"):
            continue
        params = inspect.signature(fn).parameters
        out[name] = fn()
        if "crash" in params:
            out[f"{name}-crash"] = fn(crash=True)
        if "override" in params:
            out[f"{name}-override"] = fn(override="9.0.0")
    state = ollama_server.State(ollama_server.Behaviour())
    out["fake-ollama-load"] = (
        ollama_server.load_lines(state, 99) + [ollama_server.started_line()] + ollama_server.segv_lines(state)
    )
    out["fake-ollama-load-crash"] = ollama_server.load_crash_lines()
    return out


def test_every_log_the_suite_builds_gets_its_own_vendors_advice(gfxgate_cli, tmp_path):
    built = built_logs()
    paths = []
    for name, lines in built.items():
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    diagnosed = diagnose_all(gfxgate_cli, paths)
    assert len(diagnosed) >= 8
    bad = [p for d in diagnosed for p in problems(d)]
    assert not bad, "\n".join(bad)


def example_logs() -> dict[str, list[str]]:
    catalogue = default_catalogue()
    out: dict[str, list[str]] = {}
    for message in catalogue.messages:
        if not message.is_failure:
            continue
        for i, example in enumerate(message.examples):
            out[f"{message.id}-{i}"] = [example]
            for vendor, lines in VENDOR_LINES.items():
                out[f"{message.id}-{i}-{vendor}"] = [*lines, example]
    return out


def test_every_catalogue_failure_under_each_vendors_devices_gets_that_vendors_advice(gfxgate_cli, tmp_path):
    examples = example_logs()
    paths = []
    for name, lines in examples.items():
        path = tmp_path / f"{name}.log"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    diagnosed = diagnose_all(gfxgate_cli, paths)
    by_vendor = {v: [d for d in diagnosed if d["log"].endswith(f"-{v}.log")] for v in VENDOR_LINES}
    for vendor, found in by_vendor.items():  # the context lines did decide the log's vendor
        assert all(vendor.split("-")[0] in d["vendors"] for d in found), vendor
    bad = [p for d in diagnosed for p in problems(d)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("vendor", sorted(VENDOR_LINES))
def test_the_vendor_context_lines_name_one_vendor(gfxgate_cli, tmp_path, vendor):
    path = tmp_path / "context.log"
    path.write_text("\n".join(VENDOR_LINES[vendor]) + "\n", encoding="utf-8")
    [d] = diagnose_all(gfxgate_cli, [path])
    assert d["vendors"] == [vendor.split("-")[0]]
