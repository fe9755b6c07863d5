"""`gfxgate scan --runtime WORKLOG`: the gate matrix's runtime row from a real sweep against real HTTP servers."""

from __future__ import annotations

import json

import pytest

from gfxgate.cli import main
from tests.sweep.sweephelp import run_inprocess


def test_runtime_row_in_the_gate_matrix(tmp_path, ollama_server, capsys):
    log = tmp_path / "vulkan.log"
    rocm, vulkan = ollama_server(), ollama_server(mode="crash-gpu", log_path=log)
    worklog = tmp_path / "w.jsonl"
    run_inprocess(worklog, {"rocm": rocm.url, "vulkan": vulkan.url}, gpu_target="gfx900", server_logs={"vulkan": log})
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "-t", "gfx1030", "--runtime", str(worklog), "--format", "json"])
    out, err = capsys.readouterr()
    assert info.value.code == 0, err
    data = json.loads(out)
    row = next(layer for layer in data["layers"] if layer["id"] == "runtime")["cells"]
    gfx900, gfx1030 = row
    assert gfx900["status"] == "partial" and "vulkan" in gfx900["summary"]
    assert all(e["location"]["repo"] == "worklog" for e in gfx900["evidence"])
    assert gfx1030["status"] == "not-measured"
    assert "ggml-vk-visible-devices" in gfx900["workarounds"] or "ollama-vulkan" in gfx900["workarounds"]
    routes = {r["target"]: r for r in data["routes"]}
    # the answer's best route is Vulkan (OLLAMA_VULKAN=1): only the Vulkan endpoint's runs judge it, and they crashed
    # (ROCm answering confirms no Vulkan route; the row as a whole is partial)
    assert routes["gfx900"]["best"]["backend"] == "vulkan"
    assert routes["gfx900"]["runtime"]["outcome"] == "refuted", routes["gfx900"]["runtime"]
    assert routes["gfx900"]["runtime"]["summary"].startswith("Vulkan runtime blocked")
    assert routes["gfx900"]["runtime"]["evidence"][0]["location"]["repo"] == "worklog"
    assert routes["gfx1030"]["runtime"] is None  # not measured: the answer stands unconfirmed


def test_garbage_worklog_is_input_error(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n{}\n")
    with pytest.raises(SystemExit) as info:
        main(["scan", "-t", "gfx900", "--runtime", str(bad)])
    assert info.value.code == 6
