"""The gate matrix's runtime row from a sweep worklog (the integration contract with `scan --runtime`)."""

from __future__ import annotations

import json

import pytest

from gfxgate.errors import InputError
from gfxgate.model import Status, Verdict
from gfxgate.sweep.verdicts import runtime_verdicts
from gfxgate.targets import catalog
from tests.sweep.sweephelp import run_inprocess


def targets(*names):
    return [catalog().parse(n) for n in names]


def test_seed_like_sweep_is_partial_for_its_target_and_not_measured_for_others(tmp_path, ollama_server):
    vulkan_log = tmp_path / "v.log"
    rocm, vulkan = ollama_server(), ollama_server(mode="crash-gpu", log_path=vulkan_log)
    worklog = tmp_path / "w.jsonl"
    run_inprocess(
        worklog, {"rocm": rocm.url, "vulkan": vulkan.url}, gpu_target="gfx900", server_logs={"vulkan": vulkan_log}
    )
    out = runtime_verdicts(worklog, targets("gfx900", "gfx906"))
    assert set(out) == {"gfx900", "gfx906"}
    v = out["gfx900"]
    assert isinstance(v, Verdict) and v.layer == "runtime" and v.status == Status.PARTIAL
    assert "rocm" in v.summary and "vulkan" in v.summary and "compute" in v.summary
    lines = worklog.read_text().splitlines()
    for ev in v.evidence:
        assert ev.location.repo == "worklog" and ev.location.path == str(worklog)
        record = json.loads(lines[ev.location.line - 1])
        assert record["run_id"] == ev.source  # the evidence points at the very line of that run
    texts = {ev.source.split("-")[0]: ev.text for ev in v.evidence}
    assert texts["vulkan"] == "FAIL (HTTP 500, SIGSEGV)" and texts["rocm"].startswith("OK (")
    assert out["gfx906"].status == Status.NOT_MEASURED and "gfx900" in out["gfx906"].reason


def test_allowed_blocked_and_unrecorded_target(tmp_path, ollama_server):
    good = ollama_server()
    allowed_log = tmp_path / "allowed.jsonl"
    run_inprocess(allowed_log, {"rocm": good.url}, gpu_target="gfx906", num_gpus=(0, 1))
    v = runtime_verdicts(allowed_log, targets("gfx906:xnack-"))["gfx906:xnack-"]
    assert v.status == Status.ALLOWED and "rocm" in v.summary
    assert all(e.text.startswith("OK") for e in v.evidence)

    bad = ollama_server(mode="crash-gpu")
    blocked_log = tmp_path / "blocked.jsonl"
    run_inprocess(blocked_log, {"vulkan": bad.url}, gpu_target="gfx900", num_gpus=(0, 1, 2))
    v = runtime_verdicts(blocked_log, targets("gfx900"))["gfx900"]
    assert v.status == Status.BLOCKED and v.workarounds == ("num_gpu=0 (CPU only) answers",)
    assert [e.text for e in v.evidence] == ["FAIL (HTTP 500, exit status 2)"]

    unknown_log = tmp_path / "unknown.jsonl"
    run_inprocess(unknown_log, {"rocm": good.url}, num_gpus=(1,))  # no --gpu-target
    v = runtime_verdicts(unknown_log, targets("gfx900"))["gfx900"]
    assert v.status == Status.NOT_MEASURED and "unknown" in v.reason


def test_cpu_only_runs_do_not_measure_the_gpu(tmp_path, ollama_server):
    server = ollama_server()
    worklog = tmp_path / "w.jsonl"
    run_inprocess(worklog, {"rocm": server.url}, gpu_target="gfx900", num_gpus=(0,))
    v = runtime_verdicts(worklog, targets("gfx900"))["gfx900"]
    assert v.status == Status.NOT_MEASURED and "num_gpu=0" in v.reason


def test_garbage_worklog_raises_input_error(tmp_path):
    worklog = tmp_path / "w.jsonl"
    worklog.write_text("{not json}\n")
    with pytest.raises(InputError):
        runtime_verdicts(worklog, targets("gfx900"))
