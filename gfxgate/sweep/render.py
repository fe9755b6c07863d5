"""Formatters of a sweep result: ``format(report, lang) -> str`` each (Markdown in English or Japanese, JSON);
none of them does I/O.

The headings and the Japanese hypothesis questions are presentation strings of this one formatter, kept here rather
than under ``rules/``: they decide nothing (no verdict, gate or match depends on them), and the English questions are
the hypotheses' own (``sweep/hypotheses.py``), which the JSON carries.
"""

from __future__ import annotations


from typing import Literal, overload

from gfxgate.jsontext import dumps
from gfxgate.report.formats import Format, Formatter, choose
from gfxgate.report.markdown import code, fence, md_escape
from gfxgate.sweep.model import SweepReport
from gfxgate.sweep.contexts import ctx_label
from gfxgate.report.terminal import markdown_text
from gfxgate.sweep import figure


LABELS = {
    "en": {
        "title": "gfxgate sweep report",
        "worklog": "Worklog",
        "targets": "GPU target",
        "hosts": "Host",
        "span": "When",
        "span_text": "{first} to {last} ({duration}; longest pause between two runs {pause})",
        "endpoints": "Endpoints",
        "devices": "Device each endpoint used",
        "details": "Per cell",
        "speed": "Generation speed (tokens/s, median of the successful runs)",
        "detail_head": "| num_gpu | endpoint | runs | eval_count | tokens/s median (min–max) | time to first token | layers on GPU | VRAM (log buffers) | VRAM (nvidia-smi max) | placement (model buffers) |",
        "table": "Results",
        "model": "model",
        "passrates": "Pass rates",
        "hypotheses": "Hypotheses",
        "question": "Question",
        "verdict": "Verdict",
        "reason": "Why",
        "runs": "Deciding runs",
        "crashes": "Crash localisation",
        "phase": "phase",
        "frames": "key frames",
        "log": "log",
        "allruns": "Runs",
        "warnings": "Warnings",
        "none": "none",
        "runcount": "runs",
        "superseded": "superseded by a later run of the same cell",
        "supported": "supported",
        "rejected": "rejected",
        "inconclusive": "inconclusive",
    },
    "ja": {
        "title": "gfxgate スイープレポート",
        "worklog": "ワークログ",
        "targets": "GPU ターゲット",
        "hosts": "ホスト",
        "span": "期間",
        "span_text": "{first} から {last} まで ({duration}、run 間の最長の休止 {pause})",
        "endpoints": "エンドポイント",
        "devices": "各エンドポイントが使ったデバイス",
        "details": "セルごとの計測",
        "speed": "生成速度 (tokens/s、成功した run の中央値)",
        "detail_head": "| num_gpu | エンドポイント | run 数 | eval_count | tokens/s 中央値 (最小–最大) | 最初のトークンまで | GPU 上の層 | VRAM (ログのバッファ) | VRAM (nvidia-smi 最大) | 配置 (モデルバッファ) |",
        "table": "結果",
        "model": "モデル",
        "passrates": "成功率",
        "hypotheses": "仮説",
        "question": "問い",
        "verdict": "判定",
        "reason": "根拠",
        "runs": "判定に使った run",
        "crashes": "クラッシュ箇所",
        "phase": "フェーズ",
        "frames": "主要フレーム",
        "log": "ログ",
        "allruns": "全 run",
        "warnings": "警告",
        "none": "なし",
        "runcount": "件の run",
        "superseded": "同じセルの後の run で置き換え済み",
        "supported": "支持",
        "rejected": "棄却",
        "inconclusive": "判定不能",
        "gpu-unusable": "GPU はそもそも使えないのか（num_gpu ≠ 0 で動くバックエンドが無い）？",
        "num-gpu-is-gpu-count": "num_gpu は GPU の枚数を意味するのか？",
        "backend-compute-failure": "失敗はバックエンド固有で、計算経路（モデルのロード後）で起きているのか？",
    },
}
LANGUAGES = tuple(LABELS)


def _grid(report: SweepReport, model: str, text) -> list[str]:
    """One Markdown table of ``model``: a row per num_gpu that has runs, a column per endpoint, ``text(cell)`` in each."""
    names = [n for n, _, _ in report.endpoints]
    out = ["| num_gpu | " + " | ".join(map(md_escape, names)) + " |", "|---:|" + "---|" * len(names)]
    for num_gpu in report.num_gpus:
        row = [report.cell(model, num_gpu, n) for n in names]
        if any(row):
            out.append(f"| {num_gpu} | " + " | ".join(text(c) if c else "—" for c in row) + " |")
    return out + [""]


def _duration(seconds: float) -> str:
    """``11 min 1 s``, ``10 s``, ``0.4 s``."""
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours} h " if hours else "") + f"{minutes} min {rest} s"


def render_markdown(report: SweepReport, lang: str = "en", *, plot: str | None = None) -> str:
    t = LABELS[lang]
    out: list[str] = [f"# {t['title']}", ""]
    if report.contexts is not None:  # the answer first: the sentence, the table, the plot
        out += context_markdown(report.contexts, plot)
    out.append(f"- {t['worklog']}: {code(report.worklog)} ({len(report.runs)} {t['runcount']})")
    out.append(f"- {t['targets']}: {md_escape(', '.join(report.gpu_targets)) or '—'}")
    out.append(f"- {t['hosts']}: {md_escape(', '.join(report.hosts)) or '—'}")
    if report.span is not None:
        span = report.span
        out.append(
            f"- {t['span']}: "
            + md_escape(
                t["span_text"].format(
                    first=span.first_started_at,
                    last=span.last_ended_at,
                    duration=_duration(span.seconds),
                    pause=_duration(span.longest_pause_s),
                )
            )
        )
    out.append(
        f"- {t['endpoints']}: "
        + ", ".join(
            f"{md_escape(n)} = {code(u)}"
            + (f" ({md_escape(v)})" if v.startswith("llama.cpp") else f" (ollama {md_escape(v)})" if v else "")
            for n, u, v in report.endpoints
        )
    )
    if any(d != "—" for _, d in report.devices):
        out.append(f"- {t['devices']}: " + "; ".join(f"{md_escape(n)} = {md_escape(d)}" for n, d in report.devices))
    out.append("")
    for model in report.models:
        out += [f"## {t['table']} — {t['model']} {code(model)}", ""]
        out += _grid(report, model, lambda c: md_escape(c.text))
        out += [f"### {t['passrates']}", ""]
        out += _grid(report, model, lambda c: f"{c.passes}/{c.total} ({100 * c.passes / c.total:.0f}%)")
        details = [d for d in report.details if d.model == model]
        if any(d.tokens_per_s for d in details):
            out += [f"### {t['speed']}", ""]
            out += _grid(report, model, lambda c: _speed(report, c))
        if any(d.tokens_per_s or d.vram_log_mib is not None or d.placement for d in details):
            out += [f"### {t['details']}", "", t["detail_head"], "|---:|---|---:|---|---:|---:|---|---:|---:|---|"]
            out += [_detail_row(d) for d in details] + [""]
    out += [
        f"## {t['hypotheses']}",
        "",
        f"| {t['question']} | {t['verdict']} | {t['reason']} | {t['runs']} |",
        "|---|---|---|---|",
    ]
    for h in report.hypotheses:
        runs = ", ".join(code(r, cell=True) for r in h.run_ids) or "—"
        # the hypothesis's own question is English; another language translates it
        out.append(f"| {md_escape(t.get(h.id, h.question))} | **{t[h.verdict]}** | {md_escape(h.reason)} | {runs} |")
    out.append("")
    out += [f"## {t['crashes']}", ""]
    if not report.crashes:
        out += [f"_{t['none']}_", ""]
    for c in report.crashes:
        out.append(
            f"### {code(c.run_id)} — {md_escape(c.endpoint)}, num_gpu={c.num_gpu}: {md_escape(c.label)}, {t['phase']} **{md_escape(c.phase)}**"
        )
        out.append("")
        out.append(f"- {t['phase']}: {md_escape(c.phase)} — {md_escape(c.reason)}")
        if c.frames:
            out.append(f"- {t['frames']}: " + " → ".join(code(f) for f in c.frames))
        if c.source:
            out.append(f"- {t['log']}: {code(c.source)}")
        out += ["", *fence(c.lines), ""]
    nodes = any(r.node for r in report.runs)  # a job array's runs (gfxgate fleet sweep): the Slurm node of each
    out += [
        f"## {t['allruns']}",
        "",
        "| run | line | endpoint | model | num_gpu | outcome | phase | offload (ps / log) |"
        + (" node |" if nodes else ""),
        "|---|---:|---|---|---:|---|---|---|" + ("---|" if nodes else ""),
    ]
    for r in report.runs:
        run = f"~~{code(r.run_id, cell=True)}~~ ({t['superseded']})" if r.superseded else code(r.run_id, cell=True)
        out.append(
            f"| {run} | {r.line} | {md_escape(r.endpoint)} | {md_escape(r.model)} | {r.num_gpu} | {md_escape(r.text)} | "
            f"{md_escape(r.phase)} | {md_escape(r.vram)} |"
            + (f" {md_escape(r.node or '—', cell=True)} |" if nodes else "")
        )
    out.append("")
    if report.warnings:
        out += [f"## {t['warnings']}", "", *(f"- {md_escape(w)}" for w in report.warnings), ""]
    return "\n".join(out)


def _interval_text(iv, digits: int = 1) -> str:
    """``41.2 [39.8–43.0] n=5`` (median [interval] and how many runs)."""
    if iv is None:
        return "—"
    return f"{iv.median:.{digits}f} [{iv.low:.{digits}f}–{iv.high:.{digits}f}] n={iv.n}"


def _mib(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def context_markdown(sweep, plot: str | None = None) -> list[str]:
    """The context sweep: its one-sentence verdict, the table per context and backend, the comparisons, the plot."""
    coverages = sorted({iv.coverage for r in sweep.rows for iv in (r.prefill, r.decode) if iv is not None})
    cover = f"; the intervals' exact coverage here: {', '.join(f'{c:.1%}' for c in coverages)}" if coverages else ""
    out = [
        "## Context sweep",
        "",
        f"**{md_escape(sweep.sentence)}**",
        "",
        f"Medians with a {sweep.level:.0%} interval: {md_escape(sweep.method)} (below 6 runs the whole range, "
        f"whose coverage is less than {sweep.level:.0%}){md_escape(cover)}. Warm-up runs: {sweep.warmups}, recorded "
        f"and left out. Two backends differ only where their intervals separate with at least {sweep.min_runs} "
        "successful runs each; otherwise: no measurable difference.",
        "",
    ]
    for config in sweep.configs:
        if len(sweep.configs) > 1:
            out += [f"### {md_escape(config)}", ""]
        out += [
            "| context | backend | runs ok (warm-up) | prefill tok/s | decode tok/s | first token ms | prompt tokens "
            "(server) | KV MiB | GPU buffers MiB | GPU used MiB (tool) | fits |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        ]
        for row in (r for r in sweep.rows if r.config == config):
            fits = "yes" if row.fits else f"no: {row.failure}" if row.failure else "no"
            if row.failure_line:
                fits += f" ({row.failure_line})"
            out.append(
                f"| {ctx_label(row.ctx)} | {md_escape(row.endpoint)} | {row.ok}/{row.counted} ({row.warmups}) | "
                f"{_interval_text(row.prefill)} | {_interval_text(row.decode)} | {_interval_text(row.first_token_ms, 0)} | "
                f"{', '.join(map(str, row.prompt_tokens)) or '—'} | {_mib(row.kv_mib)} | {_mib(row.device_mib)} | "
                f"{'—' if row.tool_mib is None else row.tool_mib} | {md_escape(fits)} |"
            )
        out += ["", "| context | prefill | decode |", "|---:|---|---|"]
        for ctx in sweep.contexts:
            cells = [sweep.comparison(config, ctx, stage) for stage in ("prefill", "decode")]
            if any(cells):
                out.append(f"| {ctx_label(ctx)} | " + " | ".join(md_escape(c.text) if c else "—" for c in cells) + " |")
        out.append("")
        fits_text = "; ".join(
            f"{md_escape(f.endpoint)}: {ctx_label(f.largest) if f.largest else 'none'}"
            + (f" (fails at {ctx_label(f.fails_at)}: {md_escape(f.failure)})" if f.fails_at else "")
            for f in sweep.fits
            if f.config == config
        )
        out += [f"Largest context that fits: {fits_text}.", ""]
    if plot:
        target = "".join(c if c.isalnum() or c in "-_./" else f"%{ord(c):02X}" for c in plot)  # no ')' or space ends it
        out += [f"![tokens/s against context size, with intervals]({target})", ""]
    return out


def _spread_text(spread, unit: str = "", scale: float = 1.0, digits: int = 1) -> str:
    if spread is None:
        return "—"
    med, lo, hi = (v * scale for v in spread)
    return f"{med:.{digits}f}{unit} ({lo:.{digits}f}–{hi:.{digits}f})" if lo != hi else f"{med:.{digits}f}{unit}"


def _speed(report: SweepReport, cell) -> str:
    """The cell's generation speed: median tokens/s of its successful runs, and how many runs that is."""
    detail = next(
        (d for d in report.details if (d.model, d.num_gpu, d.endpoint) == (cell.model, cell.num_gpu, cell.endpoint)),
        None,
    )
    if detail is None or detail.tokens_per_s is None:
        return "—"
    return f"{detail.tokens_per_s[0]:.1f} ({detail.ok} run{'s' if detail.ok != 1 else ''})"


def _detail_row(d) -> str:
    cells = [
        str(d.num_gpu),
        md_escape(d.endpoint),
        f"{d.ok}/{d.runs}",
        ", ".join(map(str, d.eval_count)) or "—",
        _spread_text(d.tokens_per_s),
        _spread_text(d.first_token_s, " ms", 1000.0, 0),
        md_escape(d.layers),
        "—" if d.vram_log_mib is None else f"{d.vram_log_mib:.1f} MiB",
        "—" if d.vram_sampled_mib is None else f"{d.vram_sampled_mib} MiB",
        md_escape(d.placement) or "—",
    ]
    return "| " + " | ".join(cells) + " |"


def render_json(report: SweepReport, lang: str = "en") -> str:
    del lang  # the JSON keys and values are language-neutral
    return dumps(report.to_json()) + "\n"


def render_text(report: SweepReport, lang: str = "en", *, width: int = 100, color: bool = False) -> str:
    return markdown_text(render_markdown(report, lang), width=width, color=color)


def render_svg(report: SweepReport, lang: str = "en") -> str:
    """The context sweep's plot (tokens/s against context, with intervals); without one, a figure saying so."""
    return figure.render_svg(report.contexts)


def render_png(report: SweepReport, lang: str = "en") -> bytes:
    return figure.render_png(report.contexts)


FORMATS = (Format.MD, Format.JSON, Format.TEXT, Format.SVG, Format.PNG)
FORMATTERS: dict[Format, Formatter[SweepReport]] = {  # the English report; render() gives the language and layout
    Format.MD: render_markdown,
    Format.JSON: render_json,
    Format.TEXT: render_text,
    Format.SVG: render_svg,
    Format.PNG: render_png,  # type: ignore[dict-item]  # bytes: the CLI writes it with -o
}


@overload
def render(
    report: SweepReport,
    fmt: Literal["md", "json", "text", "svg"],
    lang: str = "en",
    *,
    width: int = 100,
    color: bool = False,
    plot: str | None = None,
) -> str: ...


@overload
def render(
    report: SweepReport,
    fmt: Format | str,
    lang: str = "en",
    *,
    width: int = 100,
    color: bool = False,
    plot: str | None = None,
) -> str | bytes: ...


def render(
    report: SweepReport,
    fmt: Format | str,
    lang: str = "en",
    *,
    width: int = 100,
    color: bool = False,
    plot: str | None = None,
) -> str | bytes:
    """``plot``: where the plot is written beside a Markdown report (linked under the context table)."""
    fmt = choose(fmt, FORMATS)
    if fmt is Format.TEXT:
        return render_text(report, lang, width=width, color=color)
    if fmt is Format.SVG:
        return render_svg(report, lang)
    if fmt is Format.PNG:
        return render_png(report, lang)
    return render_markdown(report, lang, plot=plot) if fmt is Format.MD else render_json(report, lang)
