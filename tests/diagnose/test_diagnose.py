"""`gfxgate diagnose` on logs in the formats of Ollama v0.12.3, v0.17.5, v0.30+ and of llama.cpp."""

from __future__ import annotations

import io
import json

import jsonschema
import pytest

from gfxgate.cli import main
from gfxgate.sources.versions import in_range
from gfxgate.diagnose.analyse import attrs, diagnose_log, parse_go_map
from gfxgate.diagnose.catalogue import default_catalogue
from gfxgate.diagnose.reader import read_stream
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.resources import schemas_dir
from gfxgate.serial import to_json
from tests.diagnose import logs
from tests.diagnose.advice import assert_vendor_correct

# The message families of issue 12, each with the layer it belongs to.
ISSUE_FAMILIES = {
    "amdgpu-not-supported": "discovery",
    "rocblas-tensile": "rocblas-artifacts",
    "hip-no-binary": "installed-gpu-code",
    "no-rocm-device": "discovery",
    "dropping-rocm": "discovery",
    "dropping-igpu": "discovery",
    "vulkan-disabled": "vulkan",
    "compute-crash": "runtime",
    "vulkan-device-lost": "runtime",
    "runner-terminated": "runtime",
    "offload-zero": "runtime",
}


def diagnose_lines(lines: list[str], name: str = "test.log"):
    data = ("\n".join(lines) + "\n").encode()
    diagnosis = diagnose_log(
        read_stream(name, io.BytesIO(data)), default_catalogue(), workarounds=default_workarounds()
    )
    assert_vendor_correct(
        to_json(diagnosis)
    )  # tests/diagnose/test_fixture_advice.py: every fixture's advice is its vendor's
    return diagnosis


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def by_message(diagnosis, message_id: str):
    found = [f for f in diagnosis.findings if f.message == message_id]
    assert found, f"{message_id} not found in {[f.message for f in diagnosis.findings]}"
    return found[0]


def test_every_issue_family_is_in_the_catalogue_with_its_layer():
    catalogue = default_catalogue()
    for family, layer in ISSUE_FAMILIES.items():
        entries = [m for m in catalogue.messages if m.family == family]
        assert entries, family
        assert {m.layer for m in entries} == {layer}, family
        assert all(m.remedy for m in entries)


@pytest.mark.parametrize("message", default_catalogue().messages, ids=lambda m: m.id)
def test_every_example_is_recognised_as_its_own_message(message):
    for example in message.examples:
        kind = "ollama" if "ollama" in message.logs else "llama.cpp"
        # a version that prints it, so no example is judged stale here
        version_line = {
            "ollama": 'time=T level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:11434 (version {v})"',
            "llama.cpp": "build: 6981 (0c1e5709) with cc for x86_64-linux-gnu",
        }[kind]
        spec = message.version_range(kind)
        v = next(
            v
            for v in ("0.17.5", "0.32.15", "0.12.3", "0.5.7", "0.3.13", "0.1.34", "0.1.30")
            if not spec or in_range(v, spec)
        )
        diagnosis = diagnose_lines([version_line.format(v=v), example])
        assert diagnosis.log_kind == kind
        if message.is_failure:
            finding = by_message(diagnosis, message.id)
            assert finding.stale is None
            assert finding.layer == message.layer
            assert str(finding.evidence[0].location) == "test.log:2"
        else:
            assert diagnosis.recognised == 2


def test_ollama_0_12_3_gfx900_rejected_by_discovery_then_cpu_only():
    d = diagnose_lines(logs.journal(logs.ollama_0_12_3()), "ollama.log")
    assert d.log_kind == "ollama" and d.version == "0.12.3"
    rejected = by_message(d, "ollama-amdgpu-not-supported")
    assert rejected.verdict.layer == "discovery" and rejected.verdict.status.value == "blocked"
    assert rejected.target == "gfx900" and rejected.target_reason == "named in the line"
    assert str(rejected.evidence[0].location) == "ollama.log:5"
    assert (
        "hsa-override-9.0.6" in rejected.workarounds and "hsa-override-9.0.0" not in rejected.workarounds
    )  # 9.0.0 is for gfx90x siblings
    assert d.fact("env:HSA_OVERRIDE_GFX_VERSION").value == "(unset)"
    [run] = d.runs
    assert run.outcome == "cpu-only" and run.offload == "0/29"
    assert by_message(d, "offloaded-zero").verdict.layer == "runtime"


def test_ollama_0_5_7_runs_start_at_the_older_wording():
    """Before v0.11.5 Ollama printed "starting llama server": the log still splits into runs there, and the
    config, GPU, start, ready and termination lines of that version are live (none stale)."""
    d = diagnose_lines(logs.ollama_0_5_7())
    assert d.version == "0.5.7" and d.recognised == 8
    assert [(r.outcome, r.offload) for r in d.runs] == [("ok", "33/33"), ("failed", "")]
    assert all(r.evidence[0].source == "ollama-starting-runner-v0132" for r in d.runs)
    assert (
        by_message(d, "ollama-runner-terminated").stale is None and by_message(d, "ollama-runner-terminated").run == 1
    )
    assert d.fact("env:HSA_OVERRIDE_GFX_VERSION").value == "(unset)"
    assert [g.target for g in d.gpus] == ["gfx1030"]
    assert not [u for u in d.unknowns if u.what == "runs"]


def test_ollama_0_17_5_vulkan_compute_crash_is_localised():
    d = diagnose_lines(logs.ollama_0_17_5_crash())
    assert d.version == "0.17.5"
    assert d.fact("env:OLLAMA_VULKAN").value == "true"
    assert {(g.backend, g.target) for g in d.gpus} == {
        ("ROCm", "gfx900"),
        ("Vulkan", "gfx900"),
    }  # RADV VEGA10 (issue 31)
    [run] = d.runs
    assert run.outcome == "failed" and run.phase == "compute"
    assert run.frames[0] == "ggml_backend_sched_graph_compute_async"
    crash = by_message(d, "go-signal-crash")
    assert crash.verdict.layer == "runtime" and crash.target == "gfx900"
    assert any("ggml_backend_sched_graph_compute_async" in c for c in crash.context)
    assert any("Vulkan" in c for c in crash.context)
    assert "ggml-vk-visible-devices" in crash.workarounds
    assert by_message(d, "ollama-runner-terminated").layer == "runtime"


def test_ollama_0_12_3_override_rocblas_abort():
    d = diagnose_lines(logs.ollama_0_12_3_rocblas())
    tensile = by_message(d, "rocblas-tensile-missing")
    assert tensile.verdict.layer == "rocblas-artifacts" and tensile.target == "gfx900"
    assert any("HSA_OVERRIDE_GFX_VERSION=9.0.0" in c for c in tensile.context)
    assert d.runs[0].outcome == "failed" and d.runs[0].phase == "load"
    assert [u.what for u in d.unknowns] == ["layers offloaded"]


def test_ollama_0_32_drops_devices_and_igpu_keeps_its_own_identity():
    d = diagnose_lines(logs.ollama_0_32())
    assert d.version == "0.32.15"
    dropped = by_message(d, "ollama-dropping-rocm")
    assert dropped.verdict.status.value == "blocked" and dropped.target == "gfx900"
    igpu = by_message(d, "ollama-dropping-igpu")
    assert igpu.target is None and igpu.verdict is None  # the line names a Vulkan device, not the dGPU's gfx900
    assert "compute=0.0" in igpu.target_reason
    assert igpu.workarounds == ("ollama-igpu-enable",)


def test_llama_server_crash_after_load():
    d = diagnose_lines(logs.llama_server_hip(crash=True))
    assert d.log_kind == "llama.cpp" and d.version == "6981"
    assert [g.target for g in d.gpus] == ["gfx900:xnack-"]
    kernel = by_message(d, "hip-invalid-device-function")
    assert kernel.verdict.layer == "installed-gpu-code"
    assert d.runs[0].outcome == "failed" and d.runs[0].phase == "compute"


def test_llama_server_healthy_run():
    d = diagnose_lines(logs.llama_server_hip())
    assert d.findings == ()
    assert d.runs[0].outcome == "ok" and d.runs[0].offload == "29/29"


def test_message_from_another_version_is_stale_never_a_verdict():
    lines = logs.ollama_0_32()[:2] + [logs.ollama_0_12_3()[4]]  # v0.12.3's discovery line in a v0.32.15 log
    d = diagnose_lines(lines)
    finding = by_message(d, "ollama-amdgpu-not-supported")
    assert finding.verdict is None
    assert "0.32.15 does not print it" in finding.stale


def test_two_gpus_and_a_line_without_target_gives_no_verdict():
    lines = logs.llama_server_hip() + [
        "  Device 1: Radeon RX 6800, gfx1030 (0x1030), VMM: no, Wave Size: 32",
        "Segmentation fault",
    ]
    d = diagnose_lines(lines)
    crash = by_message(d, "native-crash")
    assert crash.verdict is None and crash.target is None
    assert "gfx1030, gfx900" in crash.target_reason


def test_unknowns_name_what_is_missing():
    d = diagnose_lines([logs.ollama_0_12_3()[8]])  # a GIN request line only
    assert d.log_kind is None
    assert [u.what for u in d.unknowns] == ["log format"]
    d = diagnose_lines([logs.ollama_0_12_3()[1]])  # one slog line, nothing else
    assert {u.what for u in d.unknowns} >= {"Ollama version", "GPUs", "overrides", "runs"}
    assert any("OLLAMA_DEBUG=1" in u.reason for u in d.unknowns)


def test_nothing_the_log_establishes_exists_without_evidence():
    from gfxgate.diagnose.model import Fact, Run

    with pytest.raises(ValueError, match="^fact 'OLLAMA_VULKAN' without evidence$"):
        Fact("OLLAMA_VULKAN", "1", ())
    with pytest.raises(ValueError, match="^run '0' without evidence$"):
        Run(0, "failed", "SIGSEGV", ())


def test_slog_attrs_and_go_maps():
    assert attrs('msg="a \\"b\\"" gpu_type=gfx900 x=')["msg"] == 'a "b"'
    env = parse_go_map(
        "HSA_OVERRIDE_GFX_VERSION:9.0.0 OLLAMA_ORIGINS:[http://a https://b] ROCR_VISIBLE_DEVICES: http_proxy:"
    )
    assert env == {
        "HSA_OVERRIDE_GFX_VERSION": "9.0.0",
        "OLLAMA_ORIGINS": "[http://a https://b]",
        "ROCR_VISIBLE_DEVICES": "",
        "http_proxy": "",
    }


# ------------------------------------------------------------------------------------------------ CLI


def write(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_json_validates_against_the_shipped_schema(tmp_path, capsys):
    paths = [
        write(tmp_path, f"{n}.log", getattr(logs, n)()) for n in ("ollama_0_12_3", "ollama_0_17_5_crash", "ollama_0_32")
    ]
    code, out, _ = run_cli(capsys, "diagnose", "--no-upstream", "--format", "json", *map(str, paths))
    assert code == 0
    data = json.loads(out)
    jsonschema.validate(data, json.loads((schemas_dir() / "diagnose.schema.json").read_text()))
    assert [log["version"] for log in data["logs"]] == ["0.12.3", "0.17.5", "0.32.15"]
    code, schema_text, _ = run_cli(capsys, "schema", "diagnose")
    assert json.loads(schema_text)["title"].startswith("gfxgate diagnose")


def test_cli_fail_on_and_exit_codes(tmp_path, capsys):
    log = write(tmp_path, "s.log", logs.ollama_0_12_3())
    assert run_cli(capsys, "diagnose", "--no-upstream", "--fail-on", "discovery", str(log))[0] == 1
    assert run_cli(capsys, "diagnose", "--no-upstream", "--fail-on", "installed-gpu-code", str(log))[0] == 0
    assert run_cli(capsys, "diagnose", "--no-upstream", "--fail-on", "any", str(log))[0] == 1
    code, _, err = run_cli(capsys, "diagnose", "--fail-on", "discovry", str(log))
    assert code == 2 and "did you mean discovery" in err
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path / "missing.log"))
    assert code == 6 and "missing.log: cannot read" in err
    code, _, err = run_cli(capsys, "diagnose", str(tmp_path))
    assert code == 6 and "is a folder, not a regular file" in err
    assert run_cli(capsys, "diagnose")[0] == 2


def test_cli_stdin_text_and_md(tmp_path, capsys, monkeypatch):
    data = ("\n".join(logs.journal(logs.ollama_0_12_3())) + "\n").encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run_cli(capsys, "diagnose", "--no-upstream", "--format", "text", "-")
    assert code == 0 and "-: Ollama server log 0.12.3" in out and "discovery: blocked gfx900" in out
    log = write(tmp_path, "s.log", logs.ollama_0_12_3())
    code, out, _ = run_cli(capsys, "diagnose", "--no-upstream", str(log))
    assert "- **discovery** — **blocked** for gfx900" in out
    assert "### Could not establish" not in out or "layers offloaded" not in out


def test_cli_journal_unit_runs_real_journalctl(capsys):
    from tests.conftest import require_tool

    require_tool("journalctl")
    code, out, err = run_cli(
        capsys, "diagnose", "--no-upstream", "--format", "json", "--journal-unit", "gfxgate-test-none.service"
    )
    assert code in (0, 6), (
        err
    )  # an empty journal is a diagnosis with nothing in it; a journal that cannot be read exits 6
    if code == 0:
        [log] = json.loads(out)["logs"]
        assert log["log"] == "journal:gfxgate-test-none.service" and log["findings"] == []
    code, _, err = run_cli(capsys, "diagnose", "--journal-unit", "ollama; rm -rf /")
    assert code == 6 and "bad --journal-unit" in err


def test_scan_log_fills_runtime_row_and_auto_target(tmp_path, capsys):
    log = write(tmp_path, "s.log", logs.ollama_0_17_5_crash())
    code, out, err = run_cli(capsys, "scan", "--target", "auto", "--log", str(log), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["targets"] == ["gfx900"]
    runtime = next(layer for layer in data["layers"] if layer["id"] == "runtime")["cells"][0]
    assert runtime["status"] == "blocked"
    assert runtime["evidence"][0]["where"].startswith(f"{log}:")
    healthy = write(tmp_path, "ok.log", logs.llama_server_hip())
    code, out, _ = run_cli(capsys, "scan", "--target", "gfx900,gfx1030", "--log", str(healthy), "--format", "json")
    cells = next(layer for layer in json.loads(out)["layers"] if layer["id"] == "runtime")["cells"]
    assert [c["status"] for c in cells] == ["allowed", "not-measured"]
    empty = write(tmp_path, "e.log", ["nothing here"])
    code, _, err = run_cli(capsys, "scan", "--target", "auto", "--log", str(empty))
    assert code == 2 and "names no gfx target" in err


def test_without_a_clone_the_upstream_note_names_diagnose_s_own_switch(tmp_path, capsys, monkeypatch):
    """diagnose is offline unless --online: a source it cannot read must not tell the user that an --offline they never
    passed forbids cloning (the message of the shared clone code used to), and the note points at --online."""
    for name in ("OLLAMA", "OLLAMA_PYTHON", "LLAMA_CPP", "CLR", "ROCM_DOCS"):
        monkeypatch.delenv(f"GFXGATE_SOURCE_{name}", raising=False)
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(tmp_path / "empty-cache"))
    log = write(tmp_path, "o.log", logs.ollama_0_32())
    code, out, err = run_cli(capsys, "diagnose", str(log))
    assert code == 0, err
    assert "upstream: source not available: ollama: no cached clone of " in out
    assert "this run is offline (it clones nothing)" in out and "--offline" not in out
    assert "or --online" in out


def test_the_text_format_carries_what_the_markdown_says(gfxgate_cli):
    """issue 29: `diagnose --format text` left out every remedy (and the context and notes) the Markdown shows."""
    import json

    from tests.conftest import CHECKOUT

    log = str(CHECKOUT / "samples" / "logs" / "ollama-0.12.3-override-rocblas.log")
    run = lambda fmt: gfxgate_cli("diagnose", log, "--format", fmt, timeout=60).stdout
    text, data = run("text"), json.loads(run("json"))
    findings = [f for d in data["logs"] for f in d["findings"]]
    remedies = [f["remedy"] for f in findings if f.get("remedy")]
    assert remedies
    for remedy in remedies:
        assert f"remedy: {remedy}" in text
    for note in (n for d in data["logs"] for n in d.get("notes", [])):
        assert f"note: {note}" in text
