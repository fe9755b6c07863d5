"""Issue 39: `diagnose`, `scan --log` and `doctor --log` read the same diagnosis of a log — each shows the log's
conclusions in the words of diagnose/summary.py, through the installed script."""

from __future__ import annotations

import json

from tests.diagnose.test_vendors import listen, slog
from tests.doctor.machines import machine


def _run(exe: str, *args: str) -> dict:
    done = exe(*args, "--format", "json", timeout=300)
    assert done.returncode in (0, 1), done.stderr  # scan exits 1 when a cell is blocked: its JSON is still the answer
    return json.loads(done.stdout)


def test_scan_log_and_doctor_log_show_the_diagnosis_conclusions(gfxgate_cli, tmp_path):
    log = tmp_path / "ollama.log"
    log.write_text(
        "\n".join(
            [
                listen("0.17.5"),
                slog(
                    "INFO",
                    "types.go:42",
                    "inference compute",
                    "id=0 filter_id=0 library=ROCm compute=gfx900 name=ROCm0 "
                    'description="Radeon RX Vega" libdirs=ollama,rocm driver=60342.13 pci_id=0000:03:00.0 type=discrete '
                    'total="8.0 GiB" available="7.9 GiB"',
                ),
                slog(
                    "INFO",
                    "server.go:430",
                    "starting runner",
                    'cmd="/usr/bin/ollama runner --ollama-engine --model /m --port 40123"',
                ),
                slog("INFO", "ggml.go:494", "offloaded 29/29 layers to GPU"),
                "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9216.00 MiB on device 0: cudaMalloc failed: out of memory",
                "alloc_tensor_range: failed to allocate ROCm0 buffer of size 9663676416",
            ]
        )
        + "\n"
    )
    [diagnosed] = _run(gfxgate_cli, "diagnose", "--no-upstream", str(log))["logs"]
    expected = [
        f"log {log}: {c['text']}" + (f" — remedy: {c['remedy']}" if c["remedy"] else "")
        for c in diagnosed["conclusions"]
    ]
    assert diagnosed["conclusions"][0]["kind"] == "out-of-memory" and "the device has 7.9 GiB free" in expected[0]

    scan = _run(gfxgate_cli, "scan", "--target", "gfx900", "--offline", "--log", str(log))
    assert [n for n in scan["notes"] if n.startswith("log ")] == expected

    root = machine(tmp_path / "vega56", "vega56", version="0.17.5")
    doctor = _run(gfxgate_cli, "doctor", "--root", str(root), "--log", str(log))
    assert [n for n in doctor["notes"] if n.startswith("log ")] == expected
