"""Real llama-server logs (Debian sid's llama.cpp, tests/reallama.py) diagnosed end to end.

Four real runs: the CPU backend set asked for GPU layers (llama.cpp warns that no GPU is usable), the Vulkan
set on lavapipe (layers offloaded, a healthy run), a run on a truncated model file (the load fails and
llama-server exits) and a crash: a model whose KV-head count does not divide its head count loads, then ggml
aborts on a GGML_ASSERT while the context is built (the runtime teammate's fixture). Each log is what llama-server itself wrote to stderr with ``-lv 4``.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from gfxgate.cli import main
from tests.diagnose.advice import assert_vendor_correct
from tests.reallama import reallama, reallama_vulkan, tiny_llama  # noqa: F401  (session fixtures)

pytestmark = pytest.mark.slow


def run_server(llama, backends: str, model: Path, log: Path, *extra: str, timeout: float = 300) -> int | None:
    """Start llama-server, wait until it serves (or exits), ask for 4 tokens, stop it; its exit code if it died.
    One compute thread (``-t 1``): ggml's default, a thread per core, spins them at every barrier, seconds of CPU
    on shared cores; nothing diagnosed here reads the thread count."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [
        *llama.command(backends),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "256",
        "-lv",
        "4",
        "-t",
        "1",
        *extra,
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    return proc.returncode
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as response:
                        if response.status == 200:
                            break
                except OSError:
                    time.sleep(0.3)
            else:
                pytest.fail(f"llama-server did not become ready in {timeout} s; see {log}")
            body = json.dumps({"prompt": "hi", "n_predict": 4}).encode()
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/completion", data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=timeout) as response:
                assert response.status == 200
        finally:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(60)
    return None


def diagnose(capsys, log: Path) -> dict:
    with pytest.raises(SystemExit) as info:
        main(["diagnose", "--no-upstream", "--format", "json", str(log)])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    [result] = json.loads(out)["logs"]
    return assert_vendor_correct(result)


@pytest.fixture(scope="module")
def cpu_log(reallama, tmp_path_factory) -> Path:
    """The log of one healthy run of the CPU backend set asked for every layer on a GPU (two tests read it)."""
    log = tmp_path_factory.mktemp("cpu") / "cpu.log"
    assert run_server(reallama, "cpu", reallama.model, log, "-ngl", "99") is None
    return log


@pytest.fixture(scope="module")
def vulkan_log(reallama_vulkan, tmp_path_factory) -> Path:
    """The log of one healthy run of the Vulkan set on lavapipe, every layer offloaded (two tests read it)."""
    log = tmp_path_factory.mktemp("vulkan") / "vulkan.log"
    assert run_server(reallama_vulkan, "vulkan", reallama_vulkan.model, log, "-ngl", "99") is None
    return log


def test_real_cpu_only_llama_server_says_no_usable_gpu(cpu_log, capsys):
    d = diagnose(capsys, cpu_log)
    assert d["log_kind"] == "llama.cpp"
    assert d["version"] and d["version"].isdigit()
    finding = next(f for f in d["findings"] if f["message"] == "llama-no-usable-gpu")
    assert finding["layer"] == "runtime" and finding["family"] == "offload-zero"
    assert finding["verdict"] is None and "no line names a gfx target" in finding["target_reason"]
    [run] = d["runs"]
    assert run["outcome"] == "cpu-only"  # every model buffer is CPU_Mapped (was "ok" before issue 31)


def test_real_vulkan_llama_server_offloads_every_layer(vulkan_log, capsys):
    d = diagnose(capsys, vulkan_log)
    assert d["findings"] == []
    assert [(g["backend"], g["target"]) for g in d["gpus"]] == [("Vulkan", None)]
    assert "llvmpipe" in d["gpus"][0]["name"]
    [run] = d["runs"]
    assert run["outcome"] == "ok" and run["offload"] == "5/5"
    assert any(u["what"] == "gfx target" for u in d["unknowns"])


def test_real_failed_load_is_a_failed_run(reallama, tmp_path, capsys):
    broken = tmp_path / "truncated.gguf"
    data = reallama.model.read_bytes()
    broken.write_bytes(data[: len(data) // 2])
    log = tmp_path / "broken.log"
    code = run_server(reallama, "cpu", broken, log)
    assert code not in (None, 0)
    d = diagnose(capsys, log)
    finding = next(f for f in d["findings"] if f["message"] == "llama-model-load-failed")
    assert finding["layer"] == "runtime"
    [run] = d["runs"]
    assert run["outcome"] == "failed" and run["phase"] == "load"


def test_real_ggml_assert_crash_is_localised(reallama, tmp_path, capsys):
    model = tiny_llama(tmp_path / "gqa-3-of-4.gguf", n_layer=2, n_head_kv=3)
    log = tmp_path / "crash.log"
    code = run_server(reallama, "cpu", model, log)
    assert code not in (None, 0)
    d = diagnose(capsys, log)
    crash = next(f for f in d["findings"] if f["message"] == "native-crash")
    assert crash["layer"] == "runtime" and "GGML_ASSERT" in crash["evidence"][0]["text"]
    assert crash["verdict"] is None  # a CPU-only run names no gfx target
    [run] = d["runs"]
    assert run["outcome"] == "failed" and run["phase"] == "load"
    assert "llama_init_from_model" in run["frames"]


def test_real_cpu_run_concludes_the_model_ran_on_the_cpu(cpu_log, capsys):
    """Issue 31 item 2: the warning before the build line belongs to the run; every buffer CPU_Mapped: on the CPU."""
    d = diagnose(capsys, cpu_log)
    [run] = d["runs"]
    assert run["outcome"] == "cpu-only" and [b["buffer"] for b in run["placement"]] == ["CPU_Mapped"]
    assert [c["kind"] for c in d["conclusions"]] == ["ran-on-cpu"]


def test_real_vulkan_run_names_the_device_that_holds_the_layers(vulkan_log, capsys):
    d = diagnose(capsys, vulkan_log)
    [run] = d["runs"]
    assert "Vulkan0" in [b["buffer"] for b in run["placement"]]
    [conclusion] = d["conclusions"]
    assert conclusion["kind"] == "ran-on-gpu" and "5/5 layers on the GPU (Vulkan0)" in conclusion["text"]


def test_real_device_none_offload_is_not_on_the_gpu(reallama_vulkan, tmp_path, capsys):
    """Issue 27 defect 3, reproduced with the real build: `--device none -ngl 2` prints 'offloaded 2/5 layers to GPU'
    while every model buffer is CPU_Mapped; diagnose said '2/5 layers on the GPU'."""
    log = tmp_path / "none.log"
    assert run_server(reallama_vulkan, "vulkan", reallama_vulkan.model, log, "--device", "none", "-ngl", "2") is None
    assert "offloaded 2/5 layers to GPU" in log.read_text()
    d = diagnose(capsys, log)
    [run] = d["runs"]
    assert run["outcome"] == "cpu-only" and "on the GPU" not in run["summary"]
    assert all(b["buffer"].startswith("CPU") for b in run["placement"])
    assert [c["kind"] for c in d["conclusions"]] == ["ran-on-cpu"]


def test_real_vulkan_run_out_of_device_memory_concludes_out_of_memory(reallama_vulkan, tmp_path, capsys):
    """Issue 39: a run that really runs out of device memory. lavapipe's device memory is the process's own, so an
    address-space cap of 4 GiB (RLIMIT_AS, set in the child only) and a context whose KV cache needs 8 GiB make
    ggml-vulkan's allocation fail for real: "Device memory allocation of size … failed", the buffer and the KV cache
    errors, and llama-server exits."""
    import resource

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    log = tmp_path / "oom.log"
    argv = [
        *reallama_vulkan.command("vulkan"),
        "-m",
        str(reallama_vulkan.model),
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "-c",
        "8388608",
        "-ngl",
        "99",
        "-lv",
        "4",
        "--fit",
        "off",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, preexec_fn=cap)
        try:
            code = proc.wait(240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert code != 0, log.read_text(errors="replace")[-2000:]
    d = diagnose(capsys, log)
    families = {f["message"]: f for f in d["findings"]}
    assert {"ggml-vulkan-alloc-failed", "llama-kv-cache-alloc-failed"} <= families.keys(), list(families)
    assert all(
        f["verdict"] is None for f in d["findings"] if f["family"] == "gpu-oom"
    )  # memory is no gate of the target
    kind, text = d["conclusions"][0]["kind"], d["conclusions"][0]["text"]
    assert kind == "out-of-memory" and "while loading" in text and "shorten the context" in text
    assert re.search(r"needed [0-9,]+ MiB", text)  # the allocation the log names, never an invented figure
    assert not any(re.search(r"HSA_|ROCm", f["remedy"]) for f in d["findings"])
