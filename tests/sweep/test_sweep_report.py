"""Done means: against a healthy "rocm" and a "vulkan" that crashes for num_gpu ≥ 1, the report reproduces
the seed's table, hypothesis verdicts, crash excerpt and compute-phase classification.

Expected cell texts are computed from the worklog the sweep wrote (the server's reported durations),
never typed in; the Markdown and Japanese renderings are compared structurally with the JSON.
"""

from __future__ import annotations

import json
import re

import pytest

from gfxgate.sweep.model import build_report
from gfxgate.sweep.render import FORMATS, FORMATTERS, render
from gfxgate.sweep.worklog import read_worklog
from tests.sweep.ollama_server import MODEL
from tests.sweep.sweephelp import gfxgate, run_inprocess

SEED_NUM_GPU = "0,1,2,-1"


@pytest.fixture(scope="module")
def seed_sweep(tmp_path_factory):
    """The seed's experiment, run through the real CLI once for the tests that read it (none writes to it): returns
    (worklog path, vulkan log path)."""
    from tests.sweep.ollama_server import Behaviour, FakeOllama

    folder = tmp_path_factory.mktemp("seed")
    vulkan_log = folder / "ollama-vulkan.log"
    rocm = FakeOllama(Behaviour()).start()
    vulkan = FakeOllama(Behaviour(mode="crash-gpu", log_path=vulkan_log)).start()
    worklog = folder / "sweep.jsonl"
    try:
        done = gfxgate(
            "sweep",
            "--endpoint", f"rocm={rocm.url}",
            "--endpoint", f"vulkan={vulkan.url}",
            "--model", MODEL,
            "--num-gpu", SEED_NUM_GPU,
            "--num-predict", "6",
            "--timeout", "5",
            "--gpu-target", "gfx900",
            "--server-log", f"vulkan={vulkan_log}",
            "--no-probe-gpu",
            "--worklog", str(worklog),
        )  # fmt: skip
    finally:
        rocm.stop()
        vulkan.stop()
    assert done.returncode == 0, done.stderr
    return worklog, vulkan_log


def expected_ok_text(record: dict) -> str:
    return f"OK ({record['durations_ns']['total'] / 1e9:.1f} s, eval_count={record['eval_count']})"


def md_table(markdown: str, heading_re: str) -> list[list[str]]:
    """Rows of the first pipe table after a heading matching ``heading_re``."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(heading_re, line))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif rows:
            break
    return rows


def test_report_reproduces_the_seed(seed_sweep):
    worklog, vulkan_log = seed_sweep
    runs = {(r.endpoint, r.num_gpu): r for r in read_worklog(worklog).runs}
    assert len(runs) == 8
    done = gfxgate("sweep", "report", str(worklog), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)

    # -- the table: rows num_gpu, columns endpoints ---------------------------------------------------
    assert data["num_gpu"] == [0, 1, 2, -1]
    assert [e["name"] for e in data["endpoints"]] == ["rocm", "vulkan"]
    cells = {(c["endpoint"], c["num_gpu"]): c for c in data["cells"]}
    for num_gpu in (0, 1, 2, -1):
        rocm = runs[("rocm", num_gpu)].record
        assert cells[("rocm", num_gpu)]["text"] == expected_ok_text(rocm)
        assert re.fullmatch(r"OK \(\d+\.\d s, eval_count=6\)", cells[("rocm", num_gpu)]["text"])
        assert cells[("rocm", num_gpu)]["runs"] == [rocm["run_id"]]
    assert cells[("vulkan", 0)]["text"] == expected_ok_text(runs[("vulkan", 0)].record)
    for num_gpu in (1, 2, -1):
        assert cells[("vulkan", num_gpu)]["text"] == "FAIL (HTTP 500, SIGSEGV)"
        assert (cells[("vulkan", num_gpu)]["passes"], cells[("vulkan", num_gpu)]["total"]) == (0, 1)

    # -- hypotheses, each with the runs that decide it ---------------------------------------------------
    hyp = {h["id"]: h for h in data["hypotheses"]}
    by_id = {r.run_id: r for r in runs.values()}
    assert hyp["gpu-unusable"]["verdict"] == "rejected"
    assert hyp["gpu-unusable"]["runs"] and all(
        by_id[i].endpoint == "rocm" and by_id[i].ok and by_id[i].num_gpu != 0 for i in hyp["gpu-unusable"]["runs"]
    )
    assert hyp["num-gpu-is-gpu-count"]["verdict"] == "rejected"
    assert runs[("rocm", 2)].run_id in hyp["num-gpu-is-gpu-count"]["runs"]
    assert "layers" in hyp["num-gpu-is-gpu-count"]["reason"]
    assert hyp["backend-compute-failure"]["verdict"] == "supported"
    deciding = [by_id[i] for i in hyp["backend-compute-failure"]["runs"]]
    assert {r.num_gpu for r in deciding if r.endpoint == "vulkan" and not r.ok} == {1, 2, -1}
    assert all(r.record["phase"]["phase"] == "compute" for r in deciding if not r.ok)
    assert any(r.endpoint == "rocm" and r.ok and r.num_gpu != 0 for r in deciding)

    # -- crash localisation: the excerpt is the server's own log, classified compute-phase ------------------
    (crash,) = data["crashes"]
    assert crash["endpoint"] == "vulkan" and crash["label"] == "SIGSEGV" and crash["phase"] == "compute"
    assert crash["key_frames"][0] == "ggml_backend_sched_graph_compute_async" and "computeBatch" in crash["key_frames"]
    log_lines = set(vulkan_log.read_text().splitlines())
    assert "llama runner started" in crash["excerpt"][0]
    assert all(line in log_lines for line in crash["excerpt"] if line != "…")

    # -- the Markdown and Japanese renderings carry the same table and verdicts -----------------------------
    for lang, verdict_words in (("en", ("rejected", "rejected", "supported")), ("ja", ("棄却", "棄却", "支持"))):
        md = gfxgate("sweep", "report", str(worklog), "--lang", lang)
        assert md.returncode == 0, md.stderr
        table = md_table(md.stdout, r"^## .*`qwen3.5:2b`")
        assert table[0] == ["num_gpu", "rocm", "vulkan"]
        body = {int(row[0]): row[1:] for row in table[2:]}
        assert body == {n: [cells[("rocm", n)]["text"], cells[("vulkan", n)]["text"]] for n in (0, 1, 2, -1)}
        hyp_rows = md_table(md.stdout, r"^## (Hypotheses|仮説)")[2:]
        assert [row[1].strip("*") for row in hyp_rows] == list(verdict_words)
        assert "ggml_backend_sched_graph_compute_async" in md.stdout


def test_every_format_has_a_formatter_and_rendering_is_pure(seed_sweep):
    worklog, _ = seed_sweep
    report = build_report(read_worklog(worklog))
    assert set(FORMATTERS) == set(FORMATS)
    for fmt in FORMATS:
        assert render(report, fmt) == render(report, fmt.value)
    assert json.loads(render(report, "json")) == report.to_json()


def hyp(worklog) -> dict[str, tuple[str, str]]:
    report = build_report(read_worklog(worklog))
    return {h.id: (h.verdict, h.reason) for h in report.hypotheses}


def test_every_backend_crashing_supports_gpu_unusable_and_rejects_backend_specific(tmp_path, ollama_server):
    logs = {n: tmp_path / f"{n}.log" for n in ("a", "b")}
    servers = {n: ollama_server(mode="crash-gpu", log_path=p) for n, p in logs.items()}
    _, log = run_inprocess(tmp_path / "w.jsonl", {n: s.url for n, s in servers.items()}, server_logs=logs)
    verdicts = hyp(log.path)
    assert verdicts["gpu-unusable"][0] == "supported"
    assert (
        verdicts["backend-compute-failure"][0] == "rejected"
        and "every endpoint fails" in verdicts["backend-compute-failure"][1]
    )


def test_load_phase_crash_rejects_compute_path(tmp_path, ollama_server):
    log_file = tmp_path / "v.log"
    healthy, broken = ollama_server(), ollama_server(mode="crash-load", log_path=log_file)
    _, log = run_inprocess(
        tmp_path / "w.jsonl", {"rocm": healthy.url, "vulkan": broken.url}, server_logs={"vulkan": log_file}
    )
    assert {r.record["phase"]["phase"] for r in log.runs if not r.ok} == {"load"}
    verdicts = hyp(log.path)
    assert verdicts["backend-compute-failure"][0] == "rejected" and "loading" in verdicts["backend-compute-failure"][1]
    assert verdicts["gpu-unusable"][0] == "rejected"


def test_crash_without_server_log_is_inconclusive_about_the_phase(tmp_path, ollama_server):
    healthy, broken = ollama_server(), ollama_server(mode="crash-gpu")
    _, log = run_inprocess(tmp_path / "w.jsonl", {"rocm": healthy.url, "vulkan": broken.url})
    verdict, reason = hyp(log.path)["backend-compute-failure"]
    assert verdict == "inconclusive" and "--server-log" in reason
    cells = {(c.endpoint, c.num_gpu): c.text for c in build_report(log).cells}
    assert cells[("vulkan", 1)] == "FAIL (HTTP 500, exit status 2)"


def test_repeats_show_counts_and_only_full_offload_leaves_num_gpu_question_open(tmp_path, ollama_server):
    server = ollama_server()
    _, log = run_inprocess(tmp_path / "w.jsonl", {"rocm": server.url}, num_gpus=(-1,), repeats=2)
    report = build_report(log)
    (cell,) = report.cells
    assert cell.text.startswith("OK 2/2 (") and (cell.passes, cell.total) == (2, 2)
    assert report.hypothesis("num-gpu-is-gpu-count").verdict == "inconclusive"
    assert report.hypothesis("backend-compute-failure").verdict == "rejected"
    assert report.hypothesis("gpu-unusable").verdict == "rejected"


def test_real_worklog_lines_and_report_validate_against_the_schemas(seed_sweep):
    import jsonschema

    from gfxgate.datafiles import load_schema
    from gfxgate.sweep import worklog as wl
    from gfxgate.sweep.model import REPORT_SCHEMA_VERSION

    REPORT_SCHEMA, WORKLOG_LINE_SCHEMA = load_schema("sweep-report"), load_schema("sweep-worklog")
    # the constants the writers use are the schema files' own
    assert WORKLOG_LINE_SCHEMA["properties"]["schema_version"] == {"const": wl.SCHEMA_VERSION}
    assert WORKLOG_LINE_SCHEMA["properties"]["kind"] == {"const": wl.KIND}
    assert WORKLOG_LINE_SCHEMA["properties"]["outcome"] == {"enum": list(wl.OUTCOMES)}
    assert REPORT_SCHEMA["properties"]["schema_version"] == {"const": REPORT_SCHEMA_VERSION}

    worklog, _ = seed_sweep
    validator = jsonschema.Draft202012Validator(WORKLOG_LINE_SCHEMA, format_checker=jsonschema.FormatChecker())
    lines = worklog.read_text().splitlines()
    assert len(lines) == 8
    for line in lines:
        validator.validate(json.loads(line))
    report = json.loads(render(build_report(read_worklog(worklog)), "json"))
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(report)
    broken = dict(report, cells=[dict(report["cells"][0], text="maybe")])
    assert not jsonschema.Draft202012Validator(REPORT_SCHEMA).is_valid(broken)
