"""`sweep(SweepRequest) -> SweepResult`: the backend x num_gpu runtime sweep — the plan from the options, the cells
the worklog does not have yet run against Ollama servers or llama-servers, one worklog line per run;
`report(SweepReportRequest)`: a worklog's report (the num_gpu x endpoint table, pass rates, crashes, hypotheses)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.sweep.model import SweepReport
    from gfxgate.sweep.runner import Cell, SweepPlan

DEFAULT_WORKLOG = "gfxgate-sweep.jsonl"


def _ignore(message: str) -> None:
    pass


@dataclass(frozen=True)
class SweepRequest:
    endpoints: tuple[str, ...] = ()  # NAME=URL: Ollama servers
    llama_servers: tuple[str, ...] = ()  # NAME=COMMAND: llama-servers started per cell
    models: tuple[str, ...] = ()
    model_files: tuple[Path, ...] = ()
    num_gpu: tuple[str, ...] = ()  # "N,N,…" values
    num_predict: int = 512
    repeat: int = 1
    prompt: str | None = None  # text, or @FILE
    seed: int = 42
    timeout: float = 600.0
    keep_alive: str = "5m"
    unload: bool = True
    stream: bool = False
    worklog: Path = Path(DEFAULT_WORKLOG)
    resume: bool = True
    retry: tuple[str, ...] = ()
    cells: tuple[
        int, ...
    ] = ()  # only these cells of the plan (0-based, plan order: a Slurm array task's index); () all
    planned: Callable[[Any], None] | None = None  # given: the plan (sweep.runner.SweepPlan) goes to it, nothing runs
    gpu_target: str | None = None
    journal_units: tuple[str, ...] = ()  # NAME=UNIT
    server_logs: tuple[str, ...] = ()  # NAME=PATH
    probe_gpu: bool = True
    gpu_memory_log: Path | None = None
    contexts: tuple[str, ...] = ()  # "2048,8192,32K" values: num_ctx / llama-server -c
    prompt_tokens: tuple[str, ...] = ()  # "512,50%" values
    flash_attn: tuple[str, ...] = ()  # "on,off"
    kv_types: tuple[str, ...] = ()  # "f16,q8_0"
    warmup: int | None = None  # warm-up runs per configuration; None: 1 with --ctx, else 0
    progress: Any = None  # the runner's progress (sweep.runner.NoProgress's methods); None: none
    warn: Callable[[str], None] = _ignore  # a worklog's warning, before anything runs


@dataclass(frozen=True)
class SweepResult:
    worklog: Path
    cells: int  # cells in the plan
    summary: Any = None  # the runner's summary (recorded, skipped, outcomes); None: every cell was already done
    report: Any = None  # sweep.model.SweepReport of the whole worklog after the run (its verdict, its plot)


def sweep(req: SweepRequest) -> SweepResult:
    from gfxgate.errors import UsageError
    from gfxgate.sweep.runner import (
        KV_TYPES,
        NoProgress,
        SweepPlan,
        SweepRunner,
        parse_choices,
        parse_contexts,
        parse_endpoint,
        parse_named,
        parse_num_gpu,
        parse_prompt_tokens,
        preflight,
        read_prompt,
    )
    from gfxgate.sweep.worklog import WorklogWriter, read_worklog

    if not (req.endpoints and req.models) and not (req.llama_servers and req.model_files):
        raise UsageError(
            "`gfxgate sweep` needs --endpoint NAME=URL and --model, or --llama-server NAME=COMMAND and --model-file "
            "(or the `report` subcommand)",
            hint="`gfxgate sweep --help` shows every option",
        )
    gpu_target = req.gpu_target
    if gpu_target:
        from gfxgate.targets import catalog

        gpu_target = catalog().parse_gpu(gpu_target)  # an AMD target id or an NVIDIA sm_XX
    from gfxgate.sweep.llamaserver import parse_llama_server

    if req.model_files and not req.llama_servers:
        raise UsageError("--model-file needs a --llama-server NAME=COMMAND endpoint to load it")
    if req.llama_servers and not req.model_files:
        raise UsageError("--llama-server needs --model-file PATH (the GGUF it loads)")
    if req.endpoints and not req.models:
        raise UsageError("--endpoint needs --model (the Ollama model it runs)")
    plan = SweepPlan(
        endpoints=tuple(parse_endpoint(e) for e in req.endpoints)
        + tuple(parse_llama_server(s, req.model_files) for s in req.llama_servers),
        models=tuple(dict.fromkeys(req.models)),
        num_gpus=parse_num_gpu(req.num_gpu),
        repeats=req.repeat,
        num_predict=req.num_predict,
        prompt=read_prompt(req.prompt),
        seed=req.seed,
        timeout=req.timeout,
        keep_alive=req.keep_alive,
        unload=req.unload,
        stream=req.stream,
        gpu_target=gpu_target,
        server_logs={k: Path(v) for k, v in (parse_named(s, "--server-log", "NAME=PATH") for s in req.server_logs)},
        journal_units=dict(parse_named(s, "--journal-unit", "NAME=UNIT") for s in req.journal_units),
        probe_gpu=req.probe_gpu,
        gpu_memory_log=req.gpu_memory_log,
        contexts=(contexts := parse_contexts(req.contexts)),
        prompt_tokens=parse_prompt_tokens(req.prompt_tokens),
        flash_attn=parse_choices(req.flash_attn, "--flash-attn", ("on", "off", "auto")),
        kv_types=parse_choices(req.kv_types, "--kv-type", KV_TYPES),
        warmup=req.warmup if req.warmup is not None else (1 if contexts != (None,) else 0),
    )
    if req.cells:  # --cell: a plan of those cells only (counts, progress and the summary say what this run does)
        plan = _only_cells(plan, _chosen_cells(plan.cells(), req.cells))
    if req.planned is not None:  # gfxgate fleet sweep: the cells of the plan, for a job array
        req.planned(plan)
        return SweepResult(req.worklog, len(plan.cells()))
    with WorklogWriter(req.worklog, set_aside=False) as writer:  # the lock first, then read what is there
        existing = read_worklog(req.worklog, missing_ok=True)  # a garbage worklog stops us before anything runs
        for warning in existing.warnings:
            req.warn(warning)
        finished = existing.finished_cells(req.retry) if req.resume else set()
        todo = [c for c in plan.cells() if c.key not in finished]
        if not todo:
            return SweepResult(req.worklog, len(plan.cells()), None, _report_of(req.worklog))
        preflight(_unique(c.endpoint for c in todo if c.endpoint.kind == "ollama"), plan.timeout)
        writer.set_aside_torn_tail()
        summary = SweepRunner(plan, writer, req.progress if req.progress is not None else NoProgress()).run(finished)
    return SweepResult(req.worklog, len(plan.cells()), summary, _report_of(req.worklog))


def _report_of(path: Path) -> SweepReport | None:
    """The report of the worklog as it now stands (None when it has no runs)."""
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.worklog import read_worklog

    log = read_worklog(path, missing_ok=True)
    return build_report(log) if log.runs else None


def _chosen_cells(cells: Sequence[Cell], indices: tuple[int, ...]) -> set[str]:
    """The keys of the cells ``--cell`` picks; an index outside the plan is a usage error."""
    wrong = [i for i in indices if not 0 <= i < len(cells)]
    if wrong:
        from gfxgate.errors import UsageError

        raise UsageError(f"--cell {wrong[0]}: the plan has {len(cells)} cell(s), numbered 0 to {len(cells) - 1}")
    return {cells[i].key for i in indices}


def _only_cells(plan: SweepPlan, keys: set[str]) -> SweepPlan:
    """``plan`` whose cells() are only those with these keys (the plan's order kept)."""
    from dataclasses import dataclass, fields

    from gfxgate.sweep.runner import SweepPlan

    @dataclass(frozen=True)
    class OnlyCells(SweepPlan):
        only: frozenset[str] = frozenset()

        def cells(self) -> list[Cell]:
            return [c for c in super().cells() if c.key in self.only]

    return OnlyCells(**{f.name: getattr(plan, f.name) for f in fields(plan)}, only=frozenset(keys))


def _unique(items: Iterable[Any]) -> list:
    out: list = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


@dataclass(frozen=True)
class SweepReportRequest:
    worklog: Path  # a worklog, or a folder of them (a job array's: every *.jsonl in it, merged)
    output: Path | None = None  # the report's file: refused when it is the worklog
    warn: Callable[[str], None] = _ignore  # a worklog's warning, before its report


def report(req: SweepReportRequest) -> SweepReport:
    """sweep.model's report of the worklog's runs; a worklog without runs is an input error (exit 6)."""
    from gfxgate.app.common import refuse_output_over_inputs
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.worklog import read_worklog

    refuse_output_over_inputs(req.output, (req.worklog,))
    if req.worklog.is_dir():  # a job array's worklogs (gfxgate fleet sweep): one report over all of them
        from gfxgate.fleet.worklogs import read_worklog_set

        log = read_worklog_set(req.worklog)
    else:
        log = read_worklog(req.worklog)
    for warning in log.warnings:
        req.warn(warning)
    if not log.runs:
        from gfxgate.errors import InputError

        raise InputError(f"worklog {req.worklog} has no runs")
    return build_report(log)
