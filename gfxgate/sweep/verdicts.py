"""The gate matrix's ``runtime`` row, read from a sweep worklog.

For each requested target the verdict is decided by the runs recorded with ``--gpu-target`` naming that
processor: ``allowed`` when every measured backend answers with num_gpu ≠ 0, ``partial`` when some do and
some fail, ``blocked`` when all fail, ``not-measured`` when the worklog has no run for the target. Each
piece of evidence is one run: its id, its worklog line and its table-cell text.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.sweep.facts import backend_of, cell_text, gpu_pass, is_gpu_run, layers, offloaded, phase_of, vram
from gfxgate.sweep.worklog import Run, read_worklog

if TYPE_CHECKING:
    from gfxgate.targets import TargetId

LAYER = "runtime"


def _covers(run: Run, target: TargetId) -> bool:
    recorded = run.gpu_target
    if not recorded:
        return False
    processor = recorded.split(":", 1)[0].strip().lower()
    return recorded == str(target) or processor == target.processor


def _evidence(run: Run, worklog: Path) -> Evidence:
    phase, reason = phase_of(run)
    if run.ok:
        layer_counts = layers(run)
        if layer_counts is not None:
            n, m = layer_counts
            shown = f"{n}/{m} layers offloaded per the server log"
        else:
            where = {True: "layers in VRAM per /api/ps", False: "/api/ps shows size_vram=0", None: "no /api/ps data"}
            shown = where[offloaded(run)]
            if offloaded(run) is False and vram(run)[1] is None:
                shown = "no GPU device in the server log"
        note = f"{run.endpoint} num_gpu={run.num_gpu} answered ({shown})"
    else:
        note = f"{run.endpoint} num_gpu={run.num_gpu} failed, phase {phase}: {reason}"
    return Evidence(
        source=run.run_id,
        location=Location(repo="worklog", path=str(worklog), line=run.line),
        text=cell_text([run]),
        note=note,
    )


def runtime_verdicts(worklog_path: Path, targets: list[TargetId]) -> dict[str, Verdict]:
    """One ``runtime`` verdict per target, keyed by ``str(target)``; raises InputError for a bad worklog.

    A run on a CPU-only endpoint (``llama-server --device none``) asks no GPU for anything, whatever its num_gpu: it
    is left out of the GPU verdict, as a num_gpu=0 run is (it used to count as "cpu fails with num_gpu ≠ 0")."""
    return {key: backends.pop(None) for key, backends in _verdicts(Path(worklog_path), targets).items()}


def runtime_backend_verdicts(worklog_path: Path, targets: list[TargetId]) -> dict[str, dict[str, Verdict]]:
    """Per target, one ``runtime`` verdict per backend its runs exercised (``facts.backend_of``): what the answer's
    routes are confirmed or refuted by, each by its own backend's runs only."""
    return {
        key: {b: v for b, v in backends.items() if b is not None}
        for key, backends in _verdicts(Path(worklog_path), targets).items()
    }


def _verdicts(worklog_path: Path, targets: list[TargetId]) -> dict[str, dict[str | None, Verdict]]:
    worklog = read_worklog(worklog_path)
    effective = worklog.effective_runs()  # a retried cell counts with its latest run only
    recorded = sorted({r.gpu_target or "unknown" for r in effective})
    out: dict[str, dict[str | None, Verdict]] = {}
    for target in targets:
        key = str(target)
        runs = [r for r in effective if _covers(r, target)]
        mine: dict[str | None, Verdict] = {None: _judge(runs, key, target, worklog_path, recorded)}
        for backend in dict.fromkeys(b for r in runs if (b := backend_of(r)) not in (None, "cpu")):
            mine[backend] = _judge([r for r in runs if backend_of(r) == backend], key, target, worklog_path, recorded)
        out[key] = mine
    return out


def _judge(runs: list[Run], key: str, target: TargetId, worklog_path: Path, recorded: list[str]) -> Verdict:
    gpu_runs = [r for r in runs if is_gpu_run(r) and backend_of(r) != "cpu"]
    if not gpu_runs:
        cpu_only = any(backend_of(r) == "cpu" for r in runs)
        what = (
            "no runs"
            if not runs
            else ("only CPU runs (num_gpu=0 or a CPU-only endpoint)" if cpu_only else "only num_gpu=0 (CPU) runs")
        )
        return Verdict(
            layer=LAYER,
            target=key,
            status=Status.NOT_MEASURED,
            summary=f"the sweep worklog has {what} for {key}",
            reason=(
                f"{worklog_path} has {what} recorded with --gpu-target {target.processor} "
                f"(targets recorded: {', '.join(recorded) or 'none'})"
            ),
        )
    endpoints: list[str] = []
    for run in gpu_runs:
        if run.endpoint not in endpoints:
            endpoints.append(run.endpoint)
    passing = [ep for ep in endpoints if any(gpu_pass(r) for r in gpu_runs if r.endpoint == ep)]
    failing = [ep for ep in endpoints if ep not in passing]
    evidence: list[Evidence] = []
    for ep in passing:
        good = [r for r in gpu_runs if r.endpoint == ep and gpu_pass(r)]
        evidence.append(_evidence(good[0], worklog_path))
    for ep in failing:
        bad = [r for r in gpu_runs if r.endpoint == ep]
        evidence.append(_evidence(next((r for r in bad if not r.ok), bad[0]), worklog_path))
    if passing and not failing:
        status = Status.ALLOWED
        summary = f"runs on the GPU with {', '.join(passing)} (num_gpu ≠ 0 answered)"
    elif passing:
        status = Status.PARTIAL
        phases = sorted({phase_of(r)[0] for r in gpu_runs if r.endpoint in failing and not r.ok})
        summary = (
            f"runs on the GPU with {', '.join(passing)}; {', '.join(failing)} fails with num_gpu ≠ 0 "
            f"({'/'.join(phases) or 'answered without offload'} phase)"
        )
    else:
        status = Status.BLOCKED
        summary = f"every backend measured ({', '.join(failing)}) fails with num_gpu ≠ 0"
    remedy = f"use the {passing[0]} backend" if status == Status.PARTIAL else None
    return Verdict(
        layer=LAYER,
        target=key,
        status=status,
        summary=summary,
        evidence=tuple(evidence),
        remedy=remedy,
        workarounds=("num_gpu=0 (CPU only) answers",)
        if status == Status.BLOCKED and any(r.ok and r.num_gpu == 0 for r in runs)
        else (),
    )
