"""The sweep result: the seed-style table's cells, pass rates, crash excerpts, hypotheses and every run (pure data).

``build_report`` turns a parsed worklog into a :class:`SweepReport`; ``sweep/render.py`` renders it. Every table
cell and every hypothesis verdict names the run ids that decide it, so a reader can find the worklog line behind
each claim.
"""

from __future__ import annotations

from typing import Any, Sequence
from datetime import datetime
import statistics

from gfxgate.serial import JsonRecord, document, json_dataclass, json_field
from gfxgate.sweep import facts
from gfxgate.sweep.contexts import ContextSweep, build_contexts
from gfxgate.sweep.facts import cell_text, crash_label, offload_text, ordered, phase_of
from gfxgate.sweep.hypotheses import (
    Hypothesis,
    hypothesis_backend_compute,
    hypothesis_gpu_unusable,
    hypothesis_num_gpu_is_count,
)
from gfxgate.sweep.worklog import Run, Worklog
from gfxgate.targets import catalog

REPORT_SCHEMA_VERSION = 1


@json_dataclass(frozen=True)
class Cell(JsonRecord):
    model: str
    num_gpu: int
    endpoint: str
    text: str
    passes: int
    total: int
    run_ids: tuple[str, ...] = json_field(name="runs")


@json_dataclass(frozen=True)
class CellDetail(JsonRecord):
    """What the runs of one cell measured: medians (min–max) over its successful runs, and where the model sat."""

    model: str
    num_gpu: int
    endpoint: str
    runs: int
    ok: int
    eval_count: tuple[int, ...]  # the distinct values
    tokens_per_s: tuple[float, float, float] | None  # median, min, max
    first_token_s: tuple[float, float, float] | None
    layers: str  # "16/29 layers", "no GPU device", "—"
    devices: tuple[str, ...]  # the device(s) that held the weights
    vram_log_mib: float | None  # GPU buffers per the log (model + KV + compute)
    vram_sampled_mib: int | None  # the most nvidia-smi saw the server hold
    placement: str  # per buffer: layers and MiB of weights


@json_dataclass(frozen=True)
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


@json_dataclass(frozen=True)
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
    node: str | None = None  # the Slurm node of a job array's run (gfxgate fleet sweep)

    def to_json(self) -> dict[str, Any]:
        out = JsonRecord.to_json(self)
        if out.get("node") is None:
            del out["node"]  # a run outside Slurm: the report is the one it was before the fleet
        return out


@json_dataclass(frozen=True)
class RunSpan(JsonRecord):
    """When the worklog's runs ran: the first start, the last end, the seconds between, and the longest pause between
    one run's end and the next run's start (a soak split over several processes says how long it stood still)."""

    first_started_at: str
    last_ended_at: str
    seconds: float
    longest_pause_s: float


@json_dataclass(frozen=True)
class SweepReport(JsonRecord):
    worklog: str
    gpu_targets: tuple[str, ...]
    hosts: tuple[str, ...]
    span: RunSpan | None
    endpoints: tuple[tuple[str, str, str], ...] = json_field(  # (name, url, server version)
        value=lambda endpoints: [{"name": n, "url": u, "server_version": v} for n, u, v in endpoints]
    )
    models: tuple[str, ...]
    num_gpus: tuple[int, ...] = json_field(name="num_gpu")
    cells: tuple[Cell, ...]
    details: tuple[CellDetail, ...]
    devices: tuple[tuple[str, str], ...] = json_field(  # (endpoint, the device(s) its runs used)
        value=lambda devices: [{"endpoint": e, "devices": d} for e, d in devices]
    )
    hypotheses: tuple[Hypothesis, ...]
    crashes: tuple[CrashExcerpt, ...]
    runs: tuple[RunRow, ...]
    warnings: tuple[str, ...]
    contexts: ContextSweep | None = None  # the context sweep's answer, where the runs name a context (--ctx)

    def cell(self, model: str, num_gpu: int, endpoint: str) -> Cell | None:
        for cell in self.cells:
            if (cell.model, cell.num_gpu, cell.endpoint) == (model, num_gpu, endpoint):
                return cell
        return None

    def hypothesis(self, hid: str) -> Hypothesis:
        return next(h for h in self.hypotheses if h.id == hid)

    def to_json(self) -> dict[str, Any]:
        body = super().to_json()
        if body.get("contexts") is None:  # a sweep without --ctx: the report it always had
            body.pop("contexts", None)
        return document("sweep-report", body, version=REPORT_SCHEMA_VERSION)


def build_report(worklog: Worklog) -> SweepReport:
    """The report of a worklog; a cell's earlier runs superseded by a retry are listed but not counted."""
    runs = worklog.effective_runs()
    superseded = worklog.superseded()
    endpoints: dict[str, tuple[str, str, str]] = {}
    for run in runs:
        name = run.endpoint
        version = run.get("server_version") or (endpoints.get(name, ("", "", ""))[2])
        endpoints[name] = (name, run.url, version or "")
    models = ordered(r.model for r in runs)
    num_gpus = ordered(r.num_gpu for r in runs)
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
    details = tuple(
        _detail(model, num_gpu, endpoint, group)
        for model in models
        for num_gpu in num_gpus
        for endpoint in endpoints
        for group in [[r for r in runs if (r.model, r.num_gpu, r.endpoint) == (model, num_gpu, endpoint)]]
        if group
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
        details=details,
        devices=tuple((name, _devices_text([r for r in runs if r.endpoint == name])) for name in endpoints),
        hypotheses=hypotheses,
        crashes=crash_excerpts(runs),
        runs=tuple(_run_row(r, r.run_id in superseded) for r in worklog.runs),
        gpu_targets=ordered(_target_text(r.gpu_target) for r in runs),
        hosts=ordered(r.get("host") or "unknown" for r in runs),
        span=run_span(worklog.runs),
        warnings=worklog.warnings,
        contexts=build_contexts(runs),
    )


def run_span(runs: Sequence[Run]) -> RunSpan | None:
    """The span of the runs in worklog order; None when a run's times cannot be read (a worklog from elsewhere)."""
    if not runs:
        return None
    try:  # naive and aware times mixed, or a time that is no ISO time: no span rather than a wrong one
        times = [(datetime.fromisoformat(r.get("started_at")), datetime.fromisoformat(r.get("ended_at"))) for r in runs]
        pauses = [(start - end).total_seconds() for (_, end), (start, _) in zip(times, times[1:])]
        seconds = (times[-1][1] - times[0][0]).total_seconds()
    except (TypeError, ValueError, OverflowError):
        return None
    return RunSpan(
        first_started_at=runs[0].get("started_at"),
        last_ended_at=runs[-1].get("ended_at"),
        seconds=round(seconds, 3),
        longest_pause_s=round(max([0.0, *pauses]), 3),
    )


def _spread(values: Sequence[float | None]) -> tuple[float, float, float] | None:
    present = [v for v in values if v is not None]
    if not present:
        return None
    return (round(statistics.median(present), 4), round(min(present), 4), round(max(present), 4))


def _detail(model: str, num_gpu: int, endpoint: str, group: Sequence[Run]) -> CellDetail:
    good = [r for r in group if r.ok] or list(group)
    sampled = [v for v in (facts.vram_sampled_mib(r) for r in good) if v is not None]
    logged = [v for v in (facts.vram_log_mib(r) for r in good) if v is not None]
    placements = ordered(facts.placement_text(r) for r in good)
    return CellDetail(
        model,
        num_gpu,
        endpoint,
        len(group),
        sum(r.ok for r in group),
        tuple(sorted({r.get("eval_count") for r in good if isinstance(r.get("eval_count"), int)})),
        _spread([facts.tokens_per_s(r) for r in good]),
        _spread([facts.first_token_s(r) for r in good]),
        " / ".join(ordered(offload_text(r) for r in good)),
        ordered(d for r in good for d in facts.devices_used(r)),
        max(logged) if logged else None,
        max(sampled) if sampled else None,
        " | ".join(p for p in placements if p) if placements else "",
    )


def _devices_text(runs: Sequence[Run]) -> str:
    """The device(s) an endpoint's runs put the model on, described: ``CUDA0 (NVIDIA H200)``; ``none`` if only CPU."""
    used = ordered(d for r in runs for d in facts.devices_used(r))
    if not used:
        return "no GPU device (every model buffer in system memory)" if any(r.get("offload") for r in runs) else "—"
    return ", ".join(next(facts.device_description(r, d) for r in runs if d in facts.devices_used(r)) for d in used)


def _target_text(target: str | None) -> str:
    """``gfx900`` as recorded; an NVIDIA ``sm_90`` with its family and compute capability (rules/targets.yaml)."""
    if not target:
        return "unknown"

    return catalog().describe_gpu(target)  # its vendor's description


def _run_row(run: Run, superseded: bool) -> RunRow:
    where = offload_text(run)
    return RunRow(
        run.run_id,
        run.line,
        run.endpoint,
        run.model,
        run.num_gpu,
        run.outcome,
        cell_text([run]),
        phase_of(run)[0],
        where,
        superseded,
        (run.get("slurm") or {}).get("node"),
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
