"""The context sweep's answer: per context, which backend is faster for prefill and for decode and by how much, which
fails and in what phase, and the largest context each backend fits — one sentence, a table, a plot.

Pure functions of the worklog's runs (``facts``) and of ``stats``: a warm-up run is counted and left out; a cell's
median carries its order-statistic interval; two backends are called different only where their intervals separate
and each has at least ``MIN_RUNS`` successful runs (below that, separate ranges happen by chance more than 5 % of the
time: 2·1/C(6,3) = 10 % at 3 runs each, 2·1/C(8,4) = 2.9 % at 4); otherwise "no measurable difference".
"""

from __future__ import annotations

from typing import Any, Sequence

from gfxgate.serial import JsonRecord, json_dataclass, json_field
from gfxgate.sweep import facts
from gfxgate.sweep.facts import crash_label, ordered, phase_of
from gfxgate.sweep.stats import LEVEL, METHOD, Interval, compare, median_interval
from gfxgate.sweep.worklog import Run

MIN_RUNS = 4
STAGES = ("decode", "prefill")


@json_dataclass(frozen=True)
class ContextRow(JsonRecord):
    """One backend at one context: its counted runs' medians with intervals, its memory, whether it fit."""

    config: str
    ctx: int
    endpoint: str
    counted: int  # runs that count (warm-ups left out)
    ok: int
    warmups: int  # warm-up runs recorded for this cell, left out of every figure
    prefill: Interval | None  # prompt tokens/s
    decode: Interval | None  # generated tokens/s
    first_token_ms: Interval | None
    prompt_tokens: tuple[int, ...]  # the server's own prompt-token counts (distinct)
    kv_mib: float | None  # KV cache, the server's buffer lines
    device_mib: float | None  # model + KV + compute buffers on GPU devices, the server's buffer lines
    tool_mib: int | None  # the most nvidia-smi / rocm-smi / sysfs saw one GPU hold
    fits: bool  # every counted run answered
    failure: str  # "" or what the failing runs show: phase, signal or exit status, out of memory
    failure_line: str  # the log line or error that says it (an allocation failure), cut short
    run_ids: tuple[str, ...] = json_field(name="runs")


@json_dataclass(frozen=True)
class Comparison(JsonRecord):
    config: str
    ctx: int
    stage: str  # prefill | decode
    faster: str | None  # None: no measurable difference, or not compared
    slower: str | None
    ratio: float | None  # the faster median over the slower
    text: str


@json_dataclass(frozen=True)
class Fit(JsonRecord):
    config: str
    endpoint: str
    largest: int | None  # the largest context every counted run answered at; None: none did
    fails_at: int | None  # the smallest context above it where a run failed
    failure: str


@json_dataclass(frozen=True)
class ContextSweep(JsonRecord):
    sentence: str
    method: str
    level: float
    min_runs: int
    warmups: int  # warm-up runs recorded, left out of every statistic
    configs: tuple[str, ...]
    contexts: tuple[int, ...]
    endpoints: tuple[str, ...]
    rows: tuple[ContextRow, ...]
    comparisons: tuple[Comparison, ...]
    fits: tuple[Fit, ...]

    def row(self, config: str, ctx: int, endpoint: str) -> ContextRow | None:
        return next((r for r in self.rows if (r.config, r.ctx, r.endpoint) == (config, ctx, endpoint)), None)

    def comparison(self, config: str, ctx: int, stage: str) -> Comparison | None:
        return next((c for c in self.comparisons if (c.config, c.ctx, c.stage) == (config, ctx, stage)), None)


def ctx_label(ctx: int) -> str:
    """``2K`` for 2048, ``32K`` for 32768, ``1000`` for 1000."""
    return f"{ctx // 1024}K" if ctx >= 1024 and ctx % 1024 == 0 else str(ctx)


def config_of(run: Run) -> str:
    """What a context row holds fixed besides the backend: the model, num_gpu and the optional axes that are set."""
    parts = [run.model, f"num_gpu={run.num_gpu}"]
    spec = run.get("prompt_length")
    if spec is not None:
        parts.append(f"prompt={spec}")
    if run.flash_attn is not None:
        parts.append(f"fa={run.flash_attn}")
    if run.kv_type is not None:
        parts.append(f"kv={run.kv_type}")
    return " ".join(parts)


def build_contexts(runs: Sequence[Run]) -> ContextSweep | None:
    """The context sweep of the runs that name a context; None when none does."""
    runs = [r for r in runs if r.ctx is not None]
    if not runs:
        return None
    configs = ordered(config_of(r) for r in runs)
    contexts = tuple(sorted({r.ctx for r in runs if r.ctx is not None}))
    endpoints = ordered(r.endpoint for r in runs)
    rows: list[ContextRow] = []
    for config in configs:
        for ctx in contexts:
            for endpoint in endpoints:
                group = [r for r in runs if (config_of(r), r.ctx, r.endpoint) == (config, ctx, endpoint)]
                if group:
                    rows.append(_row(config, ctx, endpoint, group))
    comparisons = [
        c
        for config in configs
        for ctx in contexts
        for stage in STAGES
        for c in [_compare(config, ctx, stage, [r for r in rows if (r.config, r.ctx) == (config, ctx)])]
    ]
    fits = [
        _fit(config, endpoint, [r for r in rows if (r.config, r.endpoint) == (config, endpoint)])
        for config in configs
        for endpoint in endpoints
        if any(r.endpoint == endpoint and r.config == config for r in rows)
    ]
    sentence = (
        "; ".join(_sentence(config, len(configs) > 1, contexts, endpoints, comparisons, fits) for config in configs)
        + "."
    )
    return ContextSweep(
        sentence=sentence if len(configs) > 1 else sentence[0].upper() + sentence[1:],  # a model's name keeps its case
        method=METHOD,
        level=LEVEL,
        min_runs=MIN_RUNS,
        warmups=sum(r.warmup for r in runs),
        configs=configs,
        contexts=contexts,
        endpoints=endpoints,
        rows=tuple(rows),
        comparisons=tuple(comparisons),
        fits=tuple(fits),
    )


def _row(config: str, ctx: int, endpoint: str, group: Sequence[Run]) -> ContextRow:
    counted = [r for r in group if not r.warmup]
    good = [r for r in counted if r.ok]
    bad = [r for r in counted if not r.ok]

    def interval(values: Sequence[float | None]) -> Interval | None:
        return median_interval([v for v in values if v is not None])

    ttft = [facts.first_token_s(r) for r in good]
    kv = [v for v in map(facts.kv_mib, good or counted) if v is not None]
    device = [v for v in map(facts.vram_log_mib, good) if v is not None]
    tool = [v for v in map(facts.tool_used_mib, good) if v is not None]
    return ContextRow(
        config=config,
        ctx=ctx,
        endpoint=endpoint,
        counted=len(counted),
        ok=len(good),
        warmups=len(group) - len(counted),
        prefill=interval([facts.prefill_tokens_per_s(r) for r in good]),
        decode=interval([facts.tokens_per_s(r) for r in good]),
        first_token_ms=interval([None if v is None else v * 1000 for v in ttft]),
        prompt_tokens=tuple(sorted({c for r in good if isinstance(c := r.get("prompt_eval_count"), int)})),
        kv_mib=max(kv) if kv else None,
        device_mib=max(device) if device else None,
        tool_mib=max(tool) if tool else None,
        fits=bool(counted) and not bad,
        failure=_failure(bad),
        failure_line=_short(facts.failure_line(bad[0]) or "") if bad else "",
        run_ids=tuple(r.run_id for r in group),
    )


def _failure(bad: Sequence[Run]) -> str:
    """``load phase, exit status 1, out of memory`` (the first failing run's)."""
    if not bad:
        return ""
    run = bad[0]
    phase = phase_of(run)[0]
    parts = [f"{phase} phase" if phase not in ("none", "unknown") else run.outcome]
    label = crash_label(run) or (facts.failure_text(run) if run.outcome != "crash" else None)
    if label and label not in parts:
        parts.append(label)
    if facts.out_of_memory(run):
        parts.append("out of memory")
    return ", ".join(parts)


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    for marker in (" E ", " W "):  # llama.cpp's "0.00.195.502 E llama_init_from_model: …" prefix
        if marker in text[:20]:
            text = text.split(marker, 1)[1]
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _compare(config: str, ctx: int, stage: str, rows: Sequence[ContextRow]) -> Comparison:
    measured = [r for r in rows if getattr(r, stage) is not None]
    if len(rows) < 2:
        return Comparison(
            config, ctx, stage, None, None, None, f"only {rows[0].endpoint} measured" if rows else "no runs"
        )
    if len(measured) < 2:
        return Comparison(config, ctx, stage, None, None, None, "not compared (fewer than two backends answered)")
    few = [r.endpoint for r in measured if (getattr(r, stage).n if getattr(r, stage) else 0) < MIN_RUNS]
    if few:
        return Comparison(
            config,
            ctx,
            stage,
            None,
            None,
            None,
            f"not compared ({', '.join(few)}: fewer than {MIN_RUNS} successful runs)",
        )
    # several backends: the fastest median against the next; a difference only where the intervals separate
    ranked = sorted(measured, key=lambda r: getattr(r, stage).median, reverse=True)
    first, second = ranked[0], ranked[1]
    decided = compare(getattr(first, stage), getattr(second, stage))
    if decided is None:
        return Comparison(config, ctx, stage, None, None, None, "no measurable difference")
    ratio = decided[1]
    shown = f"{ratio:.2f}×" if ratio is not None else "faster"
    return Comparison(
        config,
        ctx,
        stage,
        first.endpoint,
        second.endpoint,
        ratio,
        f"{first.endpoint} {shown} faster than {second.endpoint}",
    )


def _fit(config: str, endpoint: str, rows: Sequence[ContextRow]) -> Fit:
    ordered_rows = sorted(rows, key=lambda r: r.ctx)
    fitting = [r.ctx for r in ordered_rows if r.fits]
    largest = max(fitting) if fitting else None
    above = [r for r in ordered_rows if not r.fits and r.counted and (largest is None or r.ctx > largest)]
    return Fit(config, endpoint, largest, above[0].ctx if above else None, above[0].failure if above else "")


def _span(ctxs: Sequence[int], contexts: Sequence[int]) -> str:
    first, last = ctxs[0], ctxs[-1]
    if len(ctxs) == 1:
        return f"at {ctx_label(first)}"
    if first == contexts[0] and last != contexts[-1]:
        return f"up to {ctx_label(last)}"
    if last == contexts[-1] and first != contexts[0]:
        return f"from {ctx_label(first)}"
    return f"at {ctx_label(first)}–{ctx_label(last)}"


def _stage_text(stage: str, config: str, contexts: Sequence[int], comparisons: Sequence[Comparison]) -> str | None:
    groups: list[tuple[Any, list[int], list[float]]] = []
    for ctx in contexts:
        c = next((c for c in comparisons if (c.config, c.ctx, c.stage) == (config, ctx, stage)), None)
        if c is None:
            continue
        if c.faster:
            key: Any = ("faster", c.faster)
        elif c.text == "no measurable difference":
            key = ("same",)
        else:
            key = ("n/a", c.text)
        if groups and groups[-1][0] == key:
            groups[-1][1].append(ctx)
            if c.ratio is not None:
                groups[-1][2].append(c.ratio)
        else:
            groups.append((key, [ctx], [c.ratio] if c.ratio is not None else []))
    measured = [g for g in groups if g[0][0] != "n/a"]
    if not measured:
        return None
    parts = []
    for key, ctxs, ratios in measured:
        span = _span(ctxs, [c for g in measured for c in g[1]])
        if key[0] == "faster":
            by = ""
            if ratios:
                low, high = min(ratios), max(ratios)
                by = f" ({low:.2f}×)" if f"{low:.2f}" == f"{high:.2f}" else f" ({low:.2f}–{high:.2f}×)"
            parts.append(f"{key[1]} faster {span}{by}")
        else:
            parts.append(f"no measurable difference {span}")
    return f"{stage} " + ", ".join(parts)


def _sentence(
    config: str,
    named: bool,
    contexts: Sequence[int],
    endpoints: Sequence[str],
    comparisons: Sequence[Comparison],
    fits: Sequence[Fit],
) -> str:
    mine = [f for f in fits if f.config == config]
    parts = [t for t in (_stage_text(s, config, contexts, comparisons) for s in STAGES) if t]
    if not parts:
        answered = [f.endpoint for f in mine if f.largest is not None]
        if len(mine) < 2:
            parts.append(f"only {mine[0].endpoint} measured" if mine else "nothing measured")
        elif len(answered) < 2:
            parts.append("no context where two backends answered")
        else:
            parts.append(f"not compared (fewer than {MIN_RUNS} successful runs per backend and context)")
    fit_texts = []
    for f in mine:
        if f.largest is None:
            text = f"{f.endpoint} fits none" + (
                f" (fails at {ctx_label(f.fails_at)}: {f.failure})" if f.fails_at else ""
            )
        else:
            text = f"{f.endpoint} fits {ctx_label(f.largest)}"
            if f.fails_at is not None:
                text += f" (fails at {ctx_label(f.fails_at)}: {f.failure})"
            elif f.largest == contexts[-1]:
                text += " (the largest measured)"
        fit_texts.append(text)
    head = f"{config}: " if named else ""
    return head + "; ".join(parts + [", ".join(fit_texts)])
