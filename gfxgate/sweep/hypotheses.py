"""The sweep's hypotheses: each a question about the GPU, decided from the runs with the run ids that decide it."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterable, Sequence

from gfxgate.serial import JsonRecord, json_dataclass, json_field
from gfxgate.sweep.facts import gpu_pass, is_gpu_run, layers, ordered, phase_of, vram
from gfxgate.sweep.worklog import Run

MAX_DECIDING_RUNS = 8


@json_dataclass(frozen=True)
class Hypothesis(JsonRecord):
    """A question about the GPU, its verdict, why, and the runs that decide it."""

    id: str
    question: str
    verdict: str  # "supported", "rejected" or "inconclusive"
    reason: str
    run_ids: tuple[str, ...] = json_field(name="runs")


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
    return ", ".join(str(n) for n in ordered(r.num_gpu for r in runs))


def hypothesis_gpu_unusable(runs: Sequence[Run]) -> Hypothesis:
    question = "Is the GPU generally unusable (no backend runs the model with num_gpu ≠ 0)?"
    gpu_runs = [r for r in runs if is_gpu_run(r)]
    passes = [r for r in gpu_runs if gpu_pass(r)]
    if passes:
        deciding = _first_per(passes, lambda r: (r.endpoint, r.num_gpu))
        by_endpoint: dict[str, list[Run]] = {}
        for run in deciding:
            by_endpoint.setdefault(run.endpoint, []).append(run)
        said = "; ".join(f"{ep} answered with num_gpu={_list_num_gpu(rs)}" for ep, rs in by_endpoint.items())
        return Hypothesis(
            "gpu-unusable",
            question,
            "rejected",
            f"{said} (with layers on the GPU per /api/ps or the server log where shown)",
            _ids(deciding),
        )
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
        amounts = {n: a for n, r in values if (a := _amount(r)) is not None}  # every one: measured
        partial = [(n, r) for n, r in values if 0 < amounts[n][0] < amounts[n][1]]
        distinct = {amounts[n][0] for n, _ in values}
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
    layer_counts = layers(run)
    if layer_counts is not None:
        n, m = layer_counts
        return f"{n} of {m} layers offloaded (log)"
    size, size_vram = vram(run)
    return f"{(size_vram or 0) / 2**20:.0f} of {(size or 0) / 2**20:.0f} MiB in VRAM"


def hypothesis_backend_compute(runs: Sequence[Run]) -> Hypothesis:
    question = "Is the failure backend-specific and in the compute path (after the model loaded)?"
    endpoints = ordered(r.endpoint for r in runs)
    gpu = {ep: [r for r in runs if r.endpoint == ep and is_gpu_run(r)] for ep in endpoints}
    passing = [ep for ep in endpoints if any(gpu_pass(r) for r in gpu[ep])]
    # An endpoint whose GPU runs all answered without offload (a CPU-only backend set) did not fail.
    failing = [
        ep for ep in endpoints if gpu[ep] and not any(gpu_pass(r) for r in gpu[ep]) and not all(r.ok for r in gpu[ep])
    ]
    if not failing:
        any_gpu = [r for rs in gpu.values() for r in rs]
        reason = "no endpoint fails with num_gpu ≠ 0: there is no failure to explain" if any_gpu else "no GPU runs"
        return Hypothesis(
            "backend-compute-failure",
            question,
            "rejected" if any_gpu else "inconclusive",
            reason,
            _ids(_first_per(any_gpu, lambda r: r.endpoint)),
        )
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
    cpu_ok = _first_per(
        [r for ep in failing for r in runs if r.endpoint == ep and r.num_gpu == 0 and r.ok], lambda r: r.endpoint
    )
    compute_runs = _first_per(
        [r for r in failed_runs if phase_of(r)[0] == "compute"], lambda r: (r.endpoint, r.num_gpu)
    )
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
