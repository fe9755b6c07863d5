"""The context sweep's statistics and verdict on worklogs with known answers: the order-statistic interval's
coverage, warm-up runs left out, "no measurable difference" where intervals overlap, the largest context that fits,
the one sentence, the table and the plot; the plan's axes and its alternating order."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gfxgate.errors import UsageError
from gfxgate.sweep.model import build_report
from gfxgate.sweep.render import render
from gfxgate.sweep.stats import compare, coverage, median_interval
from gfxgate.sweep.worklog import KIND, SCHEMA_VERSION, WorklogWriter, cell_key, read_worklog

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "h200"


# -- the interval -------------------------------------------------------------------------------------------------
def test_order_statistic_coverage_is_the_binomial_one():
    assert coverage(5, 1) == pytest.approx(1 - 2 / 32)  # min–max of 5: 93.75 %
    assert coverage(6, 1) == pytest.approx(1 - 2 / 64)
    assert coverage(9, 2) == pytest.approx(1 - 2 * (1 + 9) / 512)  # 96.1 %
    assert coverage(1, 1) == 0.0


def test_median_interval_takes_the_widest_k_that_reaches_95_percent():
    five = median_interval([5, 1, 4, 2, 3])
    assert (five.median, five.low, five.high, five.n, five.coverage) == (3, 1, 5, 5, 0.9375)  # below 95 %: stated
    nine = median_interval(range(1, 10))
    assert (nine.median, nine.low, nine.high, nine.coverage) == (5, 2, 8, 0.9609)  # k = 2
    assert median_interval([2.0, 4.0]).median == 3.0
    assert median_interval([]) is None


def test_a_difference_only_where_the_intervals_separate():
    fast, slow = median_interval([50, 51, 52, 53, 54]), median_interval([40, 41, 42, 43, 44])
    assert compare(fast, slow) == (1, round(52 / 42, 3))
    assert compare(slow, fast) == (-1, round(52 / 42, 3))
    assert compare(median_interval([40, 45, 50, 55, 60]), median_interval([44, 46, 48, 50, 52])) is None


# -- a worklog with known answers ---------------------------------------------------------------------------------
def _record(
    endpoint: str,
    ctx: int,
    repeat: int,
    *,
    decode: float | None,
    prefill: float | None,
    warmup: bool = False,
    oom: bool = False,
    kv: float = 1.0,
) -> dict:
    ok = decode is not None
    key = cell_key(endpoint, "m.gguf", -1, repeat, ctx=ctx, warmup=warmup)
    record = {
        "schema_version": SCHEMA_VERSION, "kind": KIND, "cell": key, "repeat": repeat,
        "run_id": f"{endpoint}-c{ctx}-{'w' if warmup else 'r'}{repeat}",
        "endpoint": {"name": endpoint, "url": f"llama-server: {endpoint}", "kind": "llama-server"},
        "model": "m.gguf", "options": {"num_gpu": -1, "num_predict": 8, "seed": 42, "temperature": 0, "num_ctx": ctx},
        "outcome": "ok" if ok else "crash", "started_at": "2026-12-05T03:00:00.000+00:00",
        "ended_at": "2026-12-05T03:00:01.000+00:00", "warmup": warmup, "prompt_tokens": 64, "prompt_length": "64",
        "tokens_per_s": decode, "prefill_tokens_per_s": prefill, "prompt_eval_count": 64 if ok else None,
        "durations_ns": {"prompt_eval": 100_000_000 if ok else None},
        "offload": {"buffers_mib": {"KV": kv * ctx / 1024}, **({"out_of_memory": {"line": 40, "text":
                    "0.00.195.502 E llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache"}}
                    if oom else {})},
        "phase": {"phase": "none", "reason": "ok"} if ok else {"phase": "load", "reason": "exited before it served"},
        "crash": None if ok else {"signals": [], "exit_status": 1, "terminated": True, "frames": [], "key_frames": [],
                                  "excerpt": ["failed to allocate buffer for kv cache"]},
    }  # fmt: skip
    return record


@pytest.fixture
def known(tmp_path) -> Path:
    """a vs b at 2K/8K/32K, 5 runs and 1 warm-up each: a is faster at 2K (decode 52 vs 42, prefill 300 vs 200), the
    same at 8K (overlapping ranges), and b does not fit 32K (out of memory at load)."""
    records = []
    for ctx in (2048, 8192, 32768):
        for endpoint in ("a", "b"):
            records.append(
                _record(endpoint, ctx, 0, decode=1000.0, prefill=9999.0, warmup=True)
            )  # would win, if counted
    for repeat in range(5):
        for endpoint, decode, prefill in (("a", 50 + repeat, 300 + repeat), ("b", 40 + repeat, 200 + repeat)):
            records.append(_record(endpoint, 2048, repeat, decode=decode, prefill=prefill))
        for endpoint, decode, prefill in (("a", 40 + 5 * repeat, 100 + repeat), ("b", 44 + 2 * repeat, 101 + repeat)):
            records.append(_record(endpoint, 8192, repeat, decode=decode, prefill=prefill))
        records.append(_record("a", 32768, repeat, decode=30.0 + repeat, prefill=80.0 + repeat))
        records.append(_record("b", 32768, repeat, decode=None, prefill=None, oom=True))
    path = tmp_path / "known.jsonl"
    with WorklogWriter(path) as writer:
        for record in records:
            writer.append(record)
    return path


def test_the_known_worklogs_verdict(known):
    sweep = build_report(read_worklog(known)).contexts
    assert sweep is not None and sweep.contexts == (2048, 8192, 32768) and sweep.warmups == 6
    a2 = sweep.row("m.gguf num_gpu=-1 prompt=64", 2048, "a")
    assert (a2.counted, a2.ok, a2.warmups) == (5, 5, 1)
    assert (a2.decode.median, a2.decode.low, a2.decode.high) == (52, 50, 54)  # the warm-up's 1000 left out
    config = sweep.configs[0]
    decode2 = sweep.comparison(config, 2048, "decode")
    assert (decode2.faster, decode2.slower, decode2.ratio) == ("a", "b", round(52 / 42, 3))
    assert sweep.comparison(config, 8192, "decode").text == "no measurable difference"
    assert sweep.comparison(config, 8192, "prefill").text == "no measurable difference"
    assert sweep.comparison(config, 32768, "decode").text == "not compared (fewer than two backends answered)"
    fits = {f.endpoint: (f.largest, f.fails_at) for f in sweep.fits}
    assert fits == {"a": (32768, None), "b": (8192, 32768)}
    assert sweep.sentence == (
        "Decode a faster at 2K (1.24×), no measurable difference at 8K; prefill a faster at 2K (1.50×), no measurable "
        "difference at 8K; a fits 32K (the largest measured), b fits 8K (fails at 32K: load phase, exit status 1, out of memory)."
    )


def test_the_report_says_the_sentence_first_then_the_table_then_the_plot(known):
    report = build_report(read_worklog(known))
    markdown = render(report, "md", plot="sweep plot.svg")
    lines = markdown.splitlines()
    sentence = lines.index(f"**{report.contexts.sentence}**")
    table = next(i for i, line in enumerate(lines) if line.startswith("| context | backend |"))
    picture = next(i for i, line in enumerate(lines) if line.startswith("![tokens/s"))
    assert sentence < table < picture and "(sweep%20plot.svg)" in lines[picture]
    assert "| 2K | a | 5/5 (1) | 302.0 [300.0–304.0] n=5 | 52.0 [50.0–54.0] n=5 |" in markdown
    assert (
        "| 32K | b | 0/5 (1) | — | — | — | — | 32.0 | — | — | no: load phase, exit status 1, out of memory "
        "(llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache) |"
        in markdown
    )
    assert "93.8%" in markdown  # the real coverage of min–max at 5 runs is stated
    data = json.loads(render(report, "json"))
    import jsonschema

    from gfxgate.datafiles import load_schema

    jsonschema.validate(data, load_schema("sweep-report"))
    assert data["contexts"]["sentence"] == report.contexts.sentence
    assert data["contexts"]["rows"][0]["decode"] == {
        "median": 52.0,
        "low": 50.0,
        "high": 54.0,
        "n": 5,
        "coverage": 0.9375,
    }


def test_the_plot_draws_each_backends_medians_and_intervals(known):
    report = build_report(read_worklog(known))
    svg = ET.fromstring(render(report, "svg"))
    texts = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}text")]
    assert {"prefill (tokens/s)", "decode (tokens/s)", "a", "b", "2K", "8K", "32K"} <= set(texts)
    circles = list(svg.iter("{http://www.w3.org/2000/svg}circle"))
    assert len(circles) == 2 * (3 + 2) + 2  # medians: a at 3 contexts, b at 2, per panel; one per legend entry
    assert render(report, "png")[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_h200_worklog_still_reads_and_has_no_context_sweep():
    report = build_report(read_worklog(SAMPLES / "sweep.jsonl.zst"))
    assert report.contexts is None and report.runs
    assert "nothing to plot" in render(report, "svg")


# -- the plan -----------------------------------------------------------------------------------------------------
def _plan(**kw):
    from gfxgate.sweep.runner import Endpoint, SweepPlan

    defaults = dict(
        endpoints=(Endpoint("a", "http://127.0.0.1:1"), Endpoint("b", "http://127.0.0.1:2")),
        models=("m",),
        num_gpus=(-1,),
        repeats=2,
        num_predict=8,
    )
    defaults.update(kw)
    return SweepPlan(**defaults)


def test_runs_alternate_between_backends_abba_with_warmups_first():
    plan = _plan(contexts=(2048, 8192), warmup=1)
    order = [(c.ctx, c.endpoint.name, "w" if c.warmup else c.repeat) for c in plan.cells()]
    assert order[:6] == [
        (2048, "a", "w"),
        (2048, "b", "w"),
        (2048, "b", 0),
        (2048, "a", 0),
        (2048, "b", 1),
        (2048, "a", 1),
    ]  # pairs A B, B A, B A, A B …
    assert len(order) == 12 and len({c.key for c in plan.cells()}) == 12


def test_keys_without_the_new_axes_are_the_old_ones():
    plan = _plan()
    assert {c.key for c in plan.cells()} == {cell_key(e, "m", -1, r) for e in "ab" for r in range(2)}
    assert (
        "|ctx=2048|prompt=1016|warmup=yes" in _plan(contexts=(2048,), prompt_tokens=("50%",), warmup=1).cells()[0].key
    )


def test_a_prompt_that_does_not_fit_its_context_is_refused():
    with pytest.raises(UsageError, match="do not fit --ctx 2048"):
        _plan(contexts=(2048, 8192), prompt_tokens=("4096",))
    with pytest.raises(UsageError, match="OLLAMA_FLASH_ATTENTION"):
        _plan(contexts=(2048,), flash_attn=("on",))


def test_an_ollama_context_sweep_sends_num_ctx_and_a_prompt_of_that_length(tmp_path, ollama_server):
    """Against an Ollama-API server: num_ctx in every generate's options, the filler prompt's length, the warm-up
    run recorded first and marked, and the report's context rows from the server's own counts."""
    from tests.sweep.sweephelp import run_inprocess

    server = ollama_server()
    _, log = run_inprocess(
        tmp_path / "w.jsonl",
        {"rocm": server.url},
        num_gpus=(-1,),
        contexts=(2048, 4096),
        prompt_tokens=("100",),
        repeats=2,
        warmup=1,
    )
    generates = [r for r in server.state.requests if r.get("prompt")]
    assert [r["options"]["num_ctx"] for r in generates] == [2048] * 3 + [4096] * 3
    assert all(len(r["prompt"].split()) == 100 for r in generates)
    assert [(r.ctx, r.warmup, r.prompt_tokens) for r in log.runs][:3] == [
        (2048, True, 100),
        (2048, False, 100),
        (2048, False, 100),
    ]
    sweep = build_report(log).contexts
    row = sweep.row(sweep.configs[0], 2048, "rocm")
    assert (row.counted, row.warmups) == (2, 1) and row.prompt_tokens == (109,)  # the fake's count: words + 9
    assert row.prefill is not None and row.decode is not None


def test_a_context_in_the_llama_server_command_is_refused():
    from gfxgate.sweep.llamaserver import parse_llama_server

    with pytest.raises(UsageError, match="give the context with --ctx"):
        parse_llama_server("cpu=env -c 8192")
