"""The context sweep on the real llama-server here (Debian sid's llama.cpp: the CPU set and lavapipe Vulkan), the
``gfxgate`` command line run in process (tests/inprocess.py; the servers are real processes it starts): a model whose
KV cache grows 8 KiB per token of context, the CPU server capped by a real memory limit (``prlimit --data``: 2K fits,
32K's 256 MiB KV cache cannot be allocated), the Vulkan one not. The servers run one compute thread (``-t 1``):
ggml's default, a thread per core, spins them at every barrier, which on shared cores costs seconds per run."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from gfxgate.sweep.stats import compare
from tests.reallama import reallama, reallama_vulkan, tiny_llama  # noqa: F401 - session fixtures
from tests.sweep.sweephelp import gfxgate_env

pytestmark = pytest.mark.slow
CPU_DATA_LIMIT = 300 << 20  # the CPU server holds ~190 MB of data at 8K here, ~410 MB at 32K
THREADS = ("-t", "1")
# A prompt shorter than a batch: lavapipe then runs no matrix-multiply pipelines (a Vulkan run's completion takes
# ~2.3 s instead of 4-8 s); the claim is that the server counts the tokens asked for, not how many they are
PROMPT_TOKENS = 4
# 3 tokens to generate: a decode rate of its own (2 tokens after the first); a token of this model costs lavapipe
# ~90 ms of CPU, and every Vulkan run is a new process that compiles its pipelines again
NUM_PREDICT = 3
# One layer (and its KV cache) on lavapipe: a Vulkan run with every layer there costs 1-1.5 s of CPU, with one
# 0.1-0.2 s; the claims are the sweep's (which context each endpoint fits, its rates, intervals and comparisons,
# the KV cache the server's buffer lines add up, device and host), not how many layers lavapipe holds. The CPU set
# has no GPU: llama.cpp ignores the layer count there, and its KV cache is all on the host, under the limit.
NUM_GPU = 1
REPEATS = 4  # the measured runs at 2K: gfxgate compares two backends' intervals from 4 runs each (MIN_RUNS)


def cli(*args: str) -> subprocess.CompletedProcess:
    """``gfxgate ARGS`` run in this process, answered as subprocess.run answers."""
    from tests.inprocess import gfxgate

    return gfxgate(*args, env=gfxgate_env())


@pytest.fixture(scope="module")
def context_sweep(reallama_vulkan, tmp_path_factory):
    if shutil.which("prlimit") is None:
        pytest.skip("prlimit (util-linux) is not installed")
    folder = tmp_path_factory.mktemp("ctx")
    # 4 blocks of width 512: KV = 2 (K, V) x 4 layers x 512 x 2 bytes = 8 KiB per token of context
    model = tiny_llama(folder / "wide.gguf", n_layer=4, n_embd=512, n_ff=128, n_head=8)
    cpu = ["prlimit", f"--data={CPU_DATA_LIMIT}", *reallama_vulkan.command("cpu"), *THREADS]
    worklog, plot = folder / "ctx.jsonl", folder / "ctx.svg"
    common = ["sweep", "--llama-server", f"cpu={shlex.join(cpu)}",
              "--llama-server", f"vulkan={shlex.join([*reallama_vulkan.command('vulkan'), *THREADS])}",
              "--model-file", str(model), "--num-gpu", str(NUM_GPU), "--prompt-tokens", str(PROMPT_TOKENS),
              "--num-predict", str(NUM_PREDICT), "--timeout", "300", "--gpu-target", "gfx900", "--no-probe-gpu",
              "--worklog", str(worklog), "--plot", str(plot), "--progress", "plain"]  # fmt: skip
    # 2K measured 4 times after a warm-up (its medians and intervals), 32K once without a warm-up (whether it fits:
    # each Vulkan run at 32K is seconds of lavapipe, and every Vulkan run is a new process that compiles its
    # pipelines again, 1-2 s of CPU): two sweeps into one worklog; the second's verdict and plot are the whole
    # worklog's
    sweeps = [
        [*common, "--ctx", "2048", "--repeat", str(REPEATS)],
        [*common, "--ctx", "32K", "--repeat", "1", "--warmup", "0"],
    ]
    done = []
    for args in sweeps:
        done.append(cli(*args))
        assert done[-1].returncode == 0, done[-1].stderr
    return worklog, plot, done, sweeps


def test_the_sweep_says_its_verdict_and_writes_the_plot(context_sweep):
    worklog, plot, (first, done), _ = context_sweep
    sentence = next(line for line in done.stderr.splitlines() if " fits " in line)
    assert "cpu fits 2K (fails at 32K: load phase, exit status 1, out of memory)" in sentence, done.stderr
    assert "vulkan fits 32K (the largest measured)" in sentence, done.stderr
    svg = ET.parse(plot).getroot()
    assert {"cpu", "vulkan", "2K", "32K"} <= {t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")}
    assert "warm-up #1" in first.stderr  # the plain progress names the warm-up runs
    assert "warm-up" not in done.stderr  # … and a sweep of --warmup 0 has none


def test_the_report_has_medians_intervals_and_the_largest_fit(context_sweep):
    worklog, _, _, _ = context_sweep
    done = cli("sweep", "report", str(worklog), "--format", "json")
    assert done.returncode == 0, done.stderr
    contexts = json.loads(done.stdout)["contexts"]
    assert contexts["contexts"] == [2048, 32768] and contexts["warmups"] == 2  # one per endpoint, at 2K
    rows = {(r["ctx"], r["endpoint"]): r for r in contexts["rows"]}
    for backend in ("cpu", "vulkan"):
        row = rows[(2048, backend)]
        assert (row["counted"], row["ok"], row["warmups"]) == (REPEATS, REPEATS, 1), row
        for stage in ("prefill", "decode"):
            iv = row[stage]
            assert iv["n"] == REPEATS and iv["low"] <= iv["median"] <= iv["high"], row
            assert iv["coverage"] == 1 - 2 * 0.5**REPEATS, row  # 0.875: the range of 4 values
        counts = row["prompt_tokens"]  # the server's count
        assert counts and all(PROMPT_TOKENS <= n <= PROMPT_TOKENS + 1 for n in counts), row
        assert row["kv_mib"] == 16.0, row  # 2048 x 8 KiB, the server's own buffer line
    assert rows[(32768, "vulkan")]["fits"] and rows[(32768, "vulkan")]["kv_mib"] == 256.0
    failed = rows[(32768, "cpu")]
    assert not failed["fits"] and failed["ok"] == 0 and "out of memory" in failed["failure"], failed
    assert "insufficient memory (attempted to allocate 256.00 MB)" in failed["failure_line"], failed
    assert {f["endpoint"]: (f["largest"], f["fails_at"]) for f in contexts["fits"]} == {
        "cpu": (2048, 32768),
        "vulkan": (32768, None),
    }
    # a claim only where the intervals separate, "no measurable difference" where they overlap
    from gfxgate.sweep.stats import Interval

    for c in contexts["comparisons"]:
        if c["ctx"] != 2048:
            continue
        cpu, vulkan = (Interval(**rows[(2048, b)][c["stage"]]) for b in ("cpu", "vulkan"))
        decided = compare(cpu, vulkan)
        if decided is None:
            assert c["text"] == "no measurable difference", c
        else:
            assert c["faster"] == ("cpu" if decided[0] > 0 else "vulkan") and c["ratio"] == decided[1], c
            assert f"{c['faster']} faster at 2K" in contexts["sentence"]


def test_the_sweep_resumes_and_feeds_the_runtime_row(context_sweep):
    worklog, _, _, sweeps = context_sweep
    for args in sweeps:
        again = cli(*args)
        assert again.returncode == 0 and "nothing to do" in again.stderr, again.stderr
    done = cli("scan", "-t", "gfx900", "--runtime", str(worklog), "--format", "json", "--offline")
    assert done.returncode == 0, done.stderr
    cell = next(layer for layer in json.loads(done.stdout)["layers"] if layer["id"] == "runtime")["cells"][0]
    assert cell["status"] == "allowed" and "vulkan" in cell["summary"], cell


def test_flash_attention_and_kv_type_axes_reach_the_real_server(reallama, tmp_path):
    """-fa on/off and -ctk/-ctv f16/q8_0 on the CPU server: f16 answers either way; q8_0 cannot hold the tiny model's
    16-wide heads (llama.cpp's own refusal, read back as the failure's line)."""
    worklog = tmp_path / "fa.jsonl"
    done = cli(
        "sweep",
        "--llama-server",
        f"cpu={shlex.join([*reallama.command('cpu'), *THREADS])}",
        "--model-file",
        str(reallama.model),
        "--num-gpu",
        "0",
        "--ctx",
        "2048",
        "--flash-attn",
        "on,off",
        "--kv-type",
        "f16,q8_0",
        "--prompt-tokens",
        "16",
        "--num-predict",
        "4",
        "--repeat",
        "1",
        "--warmup",
        "0",
        "--timeout",
        "120",
        "--no-probe-gpu",
        "--worklog",
        str(worklog),
        "--progress",
        "none",
    )
    assert done.returncode == 0, done.stderr
    runs = [json.loads(line) for line in worklog.read_text().splitlines()]
    seen = {(r["flash_attn"], r["kv_cache_type"]): r for r in runs}
    assert set(seen) == {("on", "f16"), ("on", "q8_0"), ("off", "f16"), ("off", "q8_0")}
    for (fa, kv), run in seen.items():
        args = run["server_args"]
        assert args[args.index("-fa") + 1] == fa and args[args.index("-ctk") + 1] == kv == args[args.index("-ctv") + 1]
        assert run["outcome"] == ("ok" if kv == "f16" else "crash"), run["error"]
    report = cli("sweep", "report", str(worklog), "--format", "json")
    rows = {r["config"]: r for r in json.loads(report.stdout)["contexts"]["rows"]}
    failed = rows[f"{reallama.model.name} num_gpu=0 prompt=16 fa=on kv=q8_0"]
    assert "K cache type q8_0 with block size 32 does not divide n_embd_head_k=16" in failed["failure_line"], failed
