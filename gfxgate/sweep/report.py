"""The sweep report: the seed-style table, pass rates, crash excerpts and the hypothesis table.

``build_report`` turns a parsed worklog into a :class:`SweepReport` (pure data); the formatters render
that object to a string and never do I/O. Every table cell and every hypothesis verdict names the run
ids that decide it, so a reader can find the worklog line behind each claim.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Sequence

from gfxgate.jsontext import dumps
from gfxgate.report.markdown import md_escape
from gfxgate.serial import JsonRecord, document, json_field
from gfxgate.sweep.worklog import Run, Worklog

REPORT_SCHEMA_VERSION = 1
MAX_DECIDING_RUNS = 8


# -- facts about single runs -------------------------------------------------------------------------
def is_gpu_run(run: Run) -> bool:
    """num_gpu ≠ 0 asks for GPU offload (-1: as many layers as fit)."""
    return run.num_gpu != 0


def vram(run: Run) -> tuple[int | None, int | None]:
    """(size, size_vram) of the run's model in ``/api/ps`` after the run; (None, None) when unknown."""
    ps = run.get("ps_after") or {}
    for entry in ps.get("models") or ():
        name = entry.get("model") or ""
        if name in (run.model, f"{run.model}:latest"):
            return entry.get("size"), entry.get("size_vram")
    return None, None


def layers(run: Run) -> tuple[int, int] | None:
    """(N, M) from the server log's ``offloaded N/M layers to GPU`` (llama-server runs); None when not shown.

    Only with a GPU device in use: llama.cpp still prints ``offloaded 5/5 layers`` under ``--device none``.
    """
    offload = run.get("offload") or {}
    if not offload.get("devices"):
        return None
    if isinstance(offload.get("layers"), int) and isinstance(offload.get("of"), int):
        return offload["layers"], offload["of"]
    return None


def offloaded(run: Run) -> bool | None:
    """Did the successful run really put part of the model on the GPU? None when neither /api/ps nor the log said.

    Ollama runs: ``size_vram`` in /api/ps. llama-server runs: the log's ``offloaded N/M layers``; a process
    whose log shows backends but no GPU device (the CPU-only set) offloaded nothing.
    """
    size, size_vram = vram(run)
    if size_vram is not None:
        return size_vram > 0
    counted = layers(run)
    if counted is not None:
        return counted[0] > 0
    offload = run.get("offload") or {}
    if offload.get("backends") and not offload.get("devices"):
        return False
    return None


def offload_text(run: Run) -> str:
    """``2/5 layers`` (log) / ``812/1536 MiB`` (/api/ps) / ``no GPU device`` / ``—``."""
    counted = layers(run)
    if counted is not None:
        return f"{counted[0]}/{counted[1]} layers"
    size, size_vram = vram(run)
    if size_vram is not None:
        return f"{size_vram / 2**20:.0f}/{size / 2**20:.0f} MiB" if size else f"{size_vram / 2**20:.0f} MiB"
    if offloaded(run) is False:
        return "no GPU device"
    return "—"


def gpu_pass(run: Run) -> bool:
    """A GPU run that answered, unless /api/ps shows that nothing was offloaded (a silent CPU fallback)."""
    return run.ok and is_gpu_run(run) and offloaded(run) is not False


def crash_label(run: Run) -> str | None:
    crash = run.get("crash") or {}
    if crash.get("signals"):
        return crash["signals"][0]
    if crash.get("exit_status") is not None:
        return f"exit status {crash['exit_status']}"
    if crash.get("terminated"):
        return "runner terminated"
    return None


def phase_of(run: Run) -> tuple[str, str]:
    phase = run.get("phase") or {}
    return phase.get("phase", "unknown"), phase.get("reason", "")


def failure_text(run: Run) -> str:
    """``HTTP 500, SIGSEGV`` / ``timeout after 5 s`` / ``connection error``."""
    if run.outcome == "timeout":
        return f"timeout after {run.get('timeout_s', 0):g} s"
    if run.outcome == "connection-error":
        return "connection error"
    parts = []
    if run.get("http_status"):
        parts.append(f"HTTP {run.get('http_status')}")
    label = crash_label(run)
    if label:
        parts.append(label)
    elif run.outcome == "crash":
        parts.append("runner terminated")
    if not parts:
        parts.append(run.outcome)
    return ", ".join(parts)


def seconds(run: Run) -> float | None:
    total = (run.get("durations_ns") or {}).get("total")
    if total:
        return total / 1e9
    return run.get("wall_s")


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def ok_text(runs: Sequence[Run]) -> str:
    secs = _median(seconds(r) for r in runs)
    evals = _median(r.get("eval_count") for r in runs)
    parts = []
    if secs is not None:
        parts.append(f"{secs:.1f} s")
    if evals is not None:
        parts.append(f"eval_count={int(evals) if float(evals).is_integer() else evals}")
    shown = _ordered(f"{n}/{m} layers" for n, m in (layers(r) for r in runs if layers(r) is not None))
    if len(shown) == 1:
        parts.append(f"{shown[0]} on GPU")
    return f"({', '.join(parts)})" if parts else ""


def cell_text(runs: Sequence[Run]) -> str:
    """The seed's cell: ``OK (46.7 s, eval_count=512)`` / ``FAIL (HTTP 500, SIGSEGV)``; counts over repeats."""
    if not runs:
        return "—"
    good = [r for r in runs if r.ok]
    bad = [r for r in runs if not r.ok]
    count = "" if len(runs) == 1 else f" {len(good)}/{len(runs)}"
    if not bad:
        return f"OK{count} {ok_text(good)}".strip()
    reasons = Counter(failure_text(r) for r in bad)
    why = "; ".join(text if n == 1 or len(bad) == 1 else f"{n}× {text}" for text, n in reasons.most_common())
    if not good:
        return f"FAIL{count} ({why})"
    return f"FLAKY{count} OK {ok_text(good)}; FAIL ({why})"


# -- the report object ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell(JsonRecord):
    model: str
    num_gpu: int
    endpoint: str
    text: str
    passes: int
    total: int
    run_ids: tuple[str, ...] = json_field(name="runs")


@dataclass(frozen=True)
class Hypothesis(JsonRecord):
    id: str
    question: str
    verdict: str  # "supported", "rejected" or "inconclusive"
    reason: str
    run_ids: tuple[str, ...] = json_field(name="runs")


@dataclass(frozen=True)
class CrashExcerpt(JsonRecord):
    run_id: str = json_field(name="run")
    endpoint: str
    model: str
    num_gpu: int
    label: str
    phase: str
    reason: str
    frames: tuple[str, ...] = json_field(name="key_frames")
    source: str | None
    lines: tuple[str, ...] = json_field(name="excerpt")


@dataclass(frozen=True)
class RunRow(JsonRecord):
    run_id: str = json_field(name="run")
    line: int = json_field(name="worklog_line")
    endpoint: str
    model: str
    num_gpu: int
    outcome: str
    text: str
    phase: str
    vram: str
    superseded: bool = False


@dataclass(frozen=True)
class SweepReport:
    worklog: str
    endpoints: tuple[tuple[str, str, str], ...]  # (name, url, server version)
    models: tuple[str, ...]
    num_gpus: tuple[int, ...]
    cells: tuple[Cell, ...]
    hypotheses: tuple[Hypothesis, ...]
    crashes: tuple[CrashExcerpt, ...]
    runs: tuple[RunRow, ...]
    gpu_targets: tuple[str, ...]
    hosts: tuple[str, ...]
    warnings: tuple[str, ...]

    def cell(self, model: str, num_gpu: int, endpoint: str) -> Cell | None:
        for cell in self.cells:
            if (cell.model, cell.num_gpu, cell.endpoint) == (model, num_gpu, endpoint):
                return cell
        return None

    def hypothesis(self, hid: str) -> Hypothesis:
        return next(h for h in self.hypotheses if h.id == hid)

    def to_json(self) -> dict[str, Any]:
        return document("sweep-report", {
            "worklog": self.worklog,
            "gpu_targets": list(self.gpu_targets),
            "hosts": list(self.hosts),
            "endpoints": [{"name": n, "url": u, "server_version": v} for n, u, v in self.endpoints],
            "models": list(self.models),
            "num_gpu": list(self.num_gpus),
            "cells": [c.to_json() for c in self.cells],
            "hypotheses": [h.to_json() for h in self.hypotheses],
            "crashes": [c.to_json() for c in self.crashes],
            "runs": [r.to_json() for r in self.runs],
            "warnings": list(self.warnings),
        }, version=REPORT_SCHEMA_VERSION)


def _ordered(values: Iterable[Any]) -> tuple[Any, ...]:
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return tuple(out)


def build_report(worklog: Worklog) -> SweepReport:
    """The report of a worklog; a cell's earlier runs superseded by a retry are listed but not counted."""
    runs = worklog.effective_runs()
    superseded = worklog.superseded()
    endpoints: dict[str, tuple[str, str, str]] = {}
    for run in runs:
        name = run.endpoint
        version = run.get("server_version") or (endpoints.get(name, ("", "", ""))[2])
        endpoints[name] = (name, run.url, version or "")
    models = _ordered(r.model for r in runs)
    num_gpus = _ordered(r.num_gpu for r in runs)
    cells = []
    for model in models:
        for num_gpu in num_gpus:
            for endpoint in endpoints:
                group = [r for r in runs if (r.model, r.num_gpu, r.endpoint) == (model, num_gpu, endpoint)]
                if group:
                    cells.append(
                        Cell(
                            model,
                            num_gpu,
                            endpoint,
                            cell_text(group),
                            sum(r.ok for r in group),
                            len(group),
                            tuple(r.run_id for r in group),
                        )
                    )
    hypotheses = (
        hypothesis_gpu_unusable(runs),
        hypothesis_num_gpu_is_count(runs),
        hypothesis_backend_compute(runs),
    )
    return SweepReport(
        worklog=str(worklog.path),
        endpoints=tuple(endpoints.values()),
        models=models,
        num_gpus=num_gpus,
        cells=tuple(cells),
        hypotheses=hypotheses,
        crashes=crash_excerpts(runs),
        runs=tuple(_run_row(r, r.run_id in superseded) for r in worklog.runs),
        gpu_targets=_ordered(r.gpu_target or "unknown" for r in runs),
        hosts=_ordered(r.get("host") or "unknown" for r in runs),
        warnings=worklog.warnings,
    )


def _run_row(run: Run, superseded: bool) -> RunRow:
    where = offload_text(run)
    return RunRow(
        run.run_id, run.line, run.endpoint, run.model, run.num_gpu, run.outcome, cell_text([run]), phase_of(run)[0], where, superseded
    )


def crash_excerpts(runs: Sequence[Run]) -> tuple[CrashExcerpt, ...]:
    """The first crash with a log excerpt per (endpoint, model, phase): the crash localisation."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for run in runs:
        crash = run.get("crash") or {}
        if run.ok or not crash.get("excerpt"):
            continue
        phase, reason = phase_of(run)
        key = (run.endpoint, run.model, phase)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            CrashExcerpt(
                run.run_id,
                run.endpoint,
                run.model,
                run.num_gpu,
                crash_label(run) or "crash",
                phase,
                reason,
                tuple(crash.get("key_frames", ())),
                run.get("crash_log_source"),
                tuple(crash["excerpt"]),
            )
        )
    return tuple(out)


# -- hypotheses ------------------------------------------------------------------------------------------
def _ids(runs: Iterable[Run]) -> tuple[str, ...]:
    return tuple(r.run_id for r in runs)[:MAX_DECIDING_RUNS]


def _first_per(runs: Iterable[Run], key: Callable[[Run], Any]) -> list[Run]:
    seen, out = set(), []
    for run in runs:
        k = key(run)
        if k not in seen:
            seen.add(k)
            out.append(run)
    return out


def _list_num_gpu(runs: Iterable[Run]) -> str:
    return ", ".join(str(n) for n in _ordered(r.num_gpu for r in runs))


def hypothesis_gpu_unusable(runs: Sequence[Run]) -> Hypothesis:
    question = "Is the GPU generally unusable (no backend runs the model with num_gpu ≠ 0)?"
    gpu_runs = [r for r in runs if is_gpu_run(r)]
    passes = [r for r in gpu_runs if gpu_pass(r)]
    if passes:
        deciding = _first_per(passes, lambda r: (r.endpoint, r.num_gpu))
        by_endpoint = {}
        for run in deciding:
            by_endpoint.setdefault(run.endpoint, []).append(run)
        said = "; ".join(f"{ep} answered with num_gpu={_list_num_gpu(rs)}" for ep, rs in by_endpoint.items())
        return Hypothesis("gpu-unusable", question, "rejected", f"{said} (with layers on the GPU per /api/ps or the server log where shown)", _ids(deciding))
    if gpu_runs:
        deciding = _first_per(gpu_runs, lambda r: (r.endpoint, r.num_gpu))
        silent = [r for r in gpu_runs if r.ok]
        extra = f"; {len(silent)} run(s) answered but /api/ps showed size_vram=0 (CPU fallback)" if silent else ""
        return Hypothesis(
            "gpu-unusable",
            question,
            "supported",
            f"every run with num_gpu ≠ 0 failed on every endpoint ({len(gpu_runs)} runs){extra}",
            _ids(deciding),
        )
    return Hypothesis("gpu-unusable", question, "inconclusive", "the worklog has no run with num_gpu ≠ 0", ())


def hypothesis_num_gpu_is_count(runs: Sequence[Run]) -> Hypothesis:
    question = "Does num_gpu mean the number of GPUs?"
    measured = [r for r in runs if r.ok and r.num_gpu >= 1 and _amount(r) is not None]
    by_key: dict[tuple[str, str], dict[int, Run]] = {}
    for run in measured:
        by_key.setdefault((run.endpoint, run.model), {}).setdefault(run.num_gpu, run)
    for (endpoint, model), per in by_key.items():
        values = sorted(per.items())
        partial = [(n, r) for n, r in values if 0 < _amount(r)[0] < _amount(r)[1]]
        distinct = {_amount(r)[0] for _, r in values}
        if partial and (len(distinct) > 1 or len(values) == 1):
            shown = ", ".join(f"num_gpu={n} → {_amount_text(r)}" for n, r in values)
            two = [r for n, r in values if n >= 2]
            extra = f"; num_gpu={two[0].num_gpu} answered too" if two else ""
            return Hypothesis(
                "num-gpu-is-gpu-count",
                question,
                "rejected",
                f"on {endpoint} ({model}) {shown}: num_gpu sets how many layers are offloaded, not how many GPUs{extra}",
                _ids(r for _, r in values),
            )
    if by_key:
        ids = _ids(r for per in by_key.values() for r in per.values())
        return Hypothesis(
            "num-gpu-is-gpu-count",
            question,
            "inconclusive",
            "every successful num_gpu ≥ 1 run put the whole model in VRAM, which both readings predict",
            ids,
        )
    return Hypothesis(
        "num-gpu-is-gpu-count",
        question,
        "inconclusive",
        "no successful num_gpu ≥ 1 run with /api/ps data or a logged layer count to compare offloads",
        (),
    )


def _amount(run: Run) -> tuple[int, int] | None:
    """(offloaded, whole) of one run: layers from the llama-server log, else bytes from /api/ps."""
    counted = layers(run)
    if counted is not None:
        return counted
    size, size_vram = vram(run)
    if size_vram is None:
        return None
    return size_vram, size or 0


def _amount_text(run: Run) -> str:
    if layers(run) is not None:
        n, m = layers(run)
        return f"{n} of {m} layers offloaded (log)"
    size, size_vram = vram(run)
    return f"{size_vram / 2**20:.0f} of {(size or 0) / 2**20:.0f} MiB in VRAM"


def hypothesis_backend_compute(runs: Sequence[Run]) -> Hypothesis:
    question = "Is the failure backend-specific and in the compute path (after the model loaded)?"
    endpoints = _ordered(r.endpoint for r in runs)
    gpu = {ep: [r for r in runs if r.endpoint == ep and is_gpu_run(r)] for ep in endpoints}
    passing = [ep for ep in endpoints if any(gpu_pass(r) for r in gpu[ep])]
    # An endpoint whose GPU runs all answered without offload (a CPU-only backend set) did not fail.
    failing = [ep for ep in endpoints if gpu[ep] and not any(gpu_pass(r) for r in gpu[ep]) and not all(r.ok for r in gpu[ep])]
    if not failing:
        any_gpu = [r for rs in gpu.values() for r in rs]
        reason = "no endpoint fails with num_gpu ≠ 0: there is no failure to explain" if any_gpu else "no GPU runs"
        return Hypothesis("backend-compute-failure", question, "rejected" if any_gpu else "inconclusive", reason, _ids(_first_per(any_gpu, lambda r: r.endpoint)))
    failed_runs = [r for ep in failing for r in gpu[ep] if not r.ok]
    if not passing:
        return Hypothesis(
            "backend-compute-failure",
            question,
            "rejected",
            f"every endpoint fails with num_gpu ≠ 0 ({', '.join(failing)}): not specific to one backend",
            _ids(_first_per(failed_runs, lambda r: r.endpoint)),
        )
    phases = Counter(phase_of(r)[0] for r in failed_runs)
    pass_runs = _first_per([r for ep in passing for r in gpu[ep] if gpu_pass(r)], lambda r: r.endpoint)
    cpu_ok = _first_per([r for ep in failing for r in runs if r.endpoint == ep and r.num_gpu == 0 and r.ok], lambda r: r.endpoint)
    compute_runs = _first_per([r for r in failed_runs if phase_of(r)[0] == "compute"], lambda r: (r.endpoint, r.num_gpu))
    phase_words = ", ".join(f"{n}× {p}" for p, n in sorted(phases.items()))
    if set(phases) == {"compute"}:
        cpu = f"; {', '.join(r.endpoint for r in cpu_ok)} still answers with num_gpu=0" if cpu_ok else ""
        first = compute_runs[0]
        return Hypothesis(
            "backend-compute-failure",
            question,
            "supported",
            f"{', '.join(failing)} fails for every num_gpu ≠ 0 ({_list_num_gpu(failed_runs)}), each a compute-phase failure "
            f"({phase_of(first)[1]}), while {', '.join(passing)} answers with num_gpu ≠ 0{cpu}",
            _ids([*compute_runs, *pass_runs, *cpu_ok]),
        )
    if set(phases) == {"load"}:
        return Hypothesis(
            "backend-compute-failure",
            question,
            "rejected",
            f"{', '.join(failing)} fails while loading the model ({phase_words}), not in compute",
            _ids(_first_per(failed_runs, lambda r: (r.endpoint, r.num_gpu))),
        )
    return Hypothesis(
        "backend-compute-failure",
        question,
        "inconclusive",
        f"{', '.join(failing)} fails for num_gpu ≠ 0 but the phases are {phase_words} "
        "(pass --server-log/--journal-unit so crashes can be located)",
        _ids([*_first_per(failed_runs, lambda r: (r.endpoint, r.num_gpu)), *pass_runs]),
    )


# -- formatters ------------------------------------------------------------------------------------------
class ReportFormat(str, Enum):
    MD = "md"
    JSON = "json"

    def __str__(self) -> str:
        return self.value


LABELS = {
    "en": {
        "title": "gfxgate sweep report",
        "worklog": "Worklog",
        "targets": "GPU target",
        "hosts": "Host",
        "endpoints": "Endpoints",
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
        "gpu-unusable": "Is the GPU generally unusable (no backend runs the model with num_gpu ≠ 0)?",
        "num-gpu-is-gpu-count": "Does num_gpu mean the number of GPUs?",
        "backend-compute-failure": "Is the failure backend-specific and in the compute path (after the model loaded)?",
    },
    "ja": {
        "title": "gfxgate スイープレポート",
        "worklog": "ワークログ",
        "targets": "GPU ターゲット",
        "hosts": "ホスト",
        "endpoints": "エンドポイント",
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
    out = ["| num_gpu | " + " | ".join(names) + " |", "|---:|" + "---|" * len(names)]
    for num_gpu in report.num_gpus:
        row = [report.cell(model, num_gpu, n) for n in names]
        if any(row):
            out.append(f"| {num_gpu} | " + " | ".join(text(c) if c else "—" for c in row) + " |")
    return out + [""]


def render_markdown(report: SweepReport, lang: str = "en") -> str:
    t = LABELS[lang]
    out: list[str] = [f"# {t['title']}", ""]
    out.append(f"- {t['worklog']}: `{report.worklog}` ({len(report.runs)} {t['runcount']})")
    out.append(f"- {t['targets']}: {', '.join(report.gpu_targets) or '—'}")
    out.append(f"- {t['hosts']}: {', '.join(report.hosts) or '—'}")
    out.append(
        f"- {t['endpoints']}: "
        + ", ".join(f"{n} = {u}" + (f" ({v})" if v.startswith("llama.cpp") else f" (ollama {v})" if v else "") for n, u, v in report.endpoints)
    )
    out.append("")
    for model in report.models:
        out += [f"## {t['table']} — {t['model']} `{model}`", ""]
        out += _grid(report, model, lambda c: md_escape(c.text))
        out += [f"### {t['passrates']}", ""]
        out += _grid(report, model, lambda c: f"{c.passes}/{c.total} ({100 * c.passes / c.total:.0f}%)")
    out += [f"## {t['hypotheses']}", "", f"| {t['question']} | {t['verdict']} | {t['reason']} | {t['runs']} |", "|---|---|---|---|"]
    for h in report.hypotheses:
        runs = ", ".join(f"`{r}`" for r in h.run_ids) or "—"
        out.append(f"| {md_escape(t.get(h.id, h.question))} | **{t[h.verdict]}** | {md_escape(h.reason)} | {runs} |")
    out.append("")
    out += [f"## {t['crashes']}", ""]
    if not report.crashes:
        out += [f"_{t['none']}_", ""]
    for c in report.crashes:
        out.append(f"### `{c.run_id}` — {c.endpoint}, num_gpu={c.num_gpu}: {c.label}, {t['phase']} **{c.phase}**")
        out.append("")
        out.append(f"- {t['phase']}: {c.phase} — {c.reason}")
        if c.frames:
            out.append(f"- {t['frames']}: " + " → ".join(f"`{f}`" for f in c.frames))
        if c.source:
            out.append(f"- {t['log']}: `{c.source}`")
        out += ["", "```text", *c.lines, "```", ""]
    out += [f"## {t['allruns']}", "", "| run | line | endpoint | model | num_gpu | outcome | phase | offload (ps / log) |", "|---|---:|---|---|---:|---|---|---|"]
    for r in report.runs:
        run = f"~~`{r.run_id}`~~ ({t['superseded']})" if r.superseded else f"`{r.run_id}`"
        out.append(
            f"| {run} | {r.line} | {r.endpoint} | {r.model} | {r.num_gpu} | {md_escape(r.text)} | {r.phase} | {r.vram} |"
        )
    out.append("")
    if report.warnings:
        out += [f"## {t['warnings']}", "", *(f"- {w}" for w in report.warnings), ""]
    return "\n".join(out)


def render_json(report: SweepReport, lang: str = "en") -> str:
    del lang  # the JSON keys and values are language-neutral
    return dumps(report.to_json()) + "\n"


FORMATTERS: dict[ReportFormat, Callable[[SweepReport, str], str]] = {
    ReportFormat.MD: render_markdown,
    ReportFormat.JSON: render_json,
}


def render(report: SweepReport, fmt: ReportFormat | str, lang: str = "en") -> str:
    return FORMATTERS[ReportFormat(fmt)](report, lang)
