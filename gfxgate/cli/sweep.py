"""`gfxgate sweep`: run the backend x num_gpu sweep; `gfxgate sweep report WORKLOG`: render it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import click

from gfxgate.cli.common import echo, emit, format_option, output_option, terminal

if TYPE_CHECKING:
    from rich.progress import TaskID

DEFAULT_WORKLOG = "gfxgate-sweep.jsonl"


class PlainProgress:
    """One line per run on stderr (used when stderr is not a terminal)."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0

    def begin(self, total: int, skipped: int) -> None:
        self.total = total
        click.echo(f"gfxgate: sweep: {total} run(s) to do, {skipped} already in the worklog", err=True)

    def run_started(self, cell: Any) -> None:
        pass

    def run_finished(self, cell: Any, record: Mapping[str, Any]) -> None:
        from gfxgate.sweep.facts import cell_text
        from gfxgate.sweep.worklog import Run

        self.done += 1
        text = cell_text([Run(record, 0)])
        echo(f"[{self.done}/{self.total}] {cell}: {text} ({record['run_id']})", err=True)

    def end(self) -> None:
        pass


class RichProgress:
    """A progress bar with ETA on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console = Console(stderr=True, markup=False, highlight=False, emoji=False)  # server text is never markup
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task: TaskID | None = None  # begin() adds it

    def begin(self, total: int, skipped: int) -> None:
        self.console.print(f"gfxgate: sweep: {total} run(s) to do, {skipped} already in the worklog")
        self.bar.start()
        self.task = self.bar.add_task("sweep", total=total)

    def run_started(self, cell: Any) -> None:
        if self.task is not None:
            self.bar.update(self.task, description=str(cell))

    def run_finished(self, cell: Any, record: Mapping[str, Any]) -> None:
        from gfxgate.sweep.facts import cell_text
        from gfxgate.sweep.worklog import Run

        from gfxgate.report.text import inert

        self.bar.console.print(inert(f"{cell}: {cell_text([Run(record, 0)])} ({record['run_id']})"), markup=False,
                               highlight=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def end(self) -> None:
        self.bar.stop()


def _progress(mode: str):
    from gfxgate.sweep.runner import NoProgress

    if mode == "none":
        return NoProgress()
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichProgress()
    return PlainProgress()


@click.group(invoke_without_command=True)
@click.option("--endpoint", "endpoints", multiple=True, metavar="NAME=URL", help="An Ollama server, e.g. rocm=http://127.0.0.1:11435 (repeatable).")
@click.option("--llama-server", "llama_servers", multiple=True, metavar="NAME=COMMAND", help="A llama-server gfxgate starts per cell: COMMAND is its argv prefix, shell-split (never run by a shell), e.g. vulkan='llama-server --device Vulkan0' (repeatable).")
@click.option("--model", "models", multiple=True, metavar="MODEL", help="Ollama model to run (repeatable).")
@click.option("--model-file", "model_files", multiple=True, type=click.Path(dir_okay=False, path_type=Path), metavar="PATH", help="GGUF file the --llama-server endpoints load (repeatable).")
@click.option("--num-gpu", "num_gpu", multiple=True, metavar="N,N,…", help="num_gpu values (layers to offload; -1 = all that fit). [default: 0,1,2,-1]")
@click.option("--num-predict", type=int, default=512, show_default=True, help="Tokens to generate per run.")
@click.option("--repeat", type=int, default=1, show_default=True, help="Runs per cell.")
@click.option("--prompt", default=None, metavar="TEXT|@FILE", help="Prompt text, or @FILE to read it.")
@click.option("--seed", type=int, default=42, show_default=True)
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds a generate may take (whole answer, streamed or not; connect ≤ 10 s); info, ps and unload requests get ≤ 15 s.")
@click.option("--keep-alive", default="5m", show_default=True, help="keep_alive of each generate (so /api/ps sees the model).")
@click.option("--unload/--no-unload", default=True, show_default=True, help="Unload the model after each run so the next cell loads it with its own num_gpu.")
@click.option("--stream/--no-stream", default=False, show_default=True, help="Stream the answer (records time to first token).")
@click.option("--worklog", type=click.Path(dir_okay=False, path_type=Path), default=DEFAULT_WORKLOG, show_default=True, envvar="GFXGATE_SWEEP_WORKLOG")
@click.option("--resume/--no-resume", default=True, show_default=True, help="Skip cells the worklog already has (--no-resume re-measures every cell; the new runs supersede the old).")
@click.option("--retry", "retry", multiple=True, type=click.Choice(("http-error", "crash", "timeout", "connection-error")), help="With --resume, run again the cells whose latest run ended so (repeatable).")
@click.option("--gpu-target", default=None, metavar="GFX", help="The GPU the servers run on (gfx900, or sm_90 for an NVIDIA GPU); recorded in every run.")
@click.option("--journal-unit", "journal_units", multiple=True, metavar="NAME=UNIT", help="journald unit of an endpoint's server.")
@click.option("--server-log", "server_logs", multiple=True, metavar="NAME=PATH", help="Log file an endpoint's server writes.")
@click.option("--probe-gpu/--no-probe-gpu", default=True, show_default=True, help="Record rocm-smi / amd-smi / nvidia-smi / vulkaninfo output.")
@click.option("--gpu-memory-log", type=click.Path(dir_okay=False, path_type=Path), default=None, metavar="PATH", help="CSV a GPU sampler writes beside the sweep (nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader -lms 200): each llama-server run records the most memory its process held.")
@click.option("--progress", type=click.Choice(("auto", "bar", "plain", "none")), default="auto", show_default=True)
@click.pass_context
def sweep(ctx: click.Context, **opts: Any) -> None:
    """Backend x num_gpu runtime sweep against Ollama servers or llama-servers; every run is one worklog line.

    \b
    gfxgate sweep --endpoint rocm=http://127.0.0.1:11435 --endpoint vulkan=http://127.0.0.1:11434 \\
        --model qwen3.5:2b --num-gpu 0,1,2,-1 --gpu-target gfx900 --server-log vulkan=ollama-vulkan.log
    gfxgate sweep --llama-server vulkan='llama-server --device Vulkan0' --llama-server cpu='llama-server --device none' \\
        --model-file qwen2.5-0.5b-q8_0.gguf --num-gpu 0,1,2,-1 --gpu-target gfx900
    gfxgate sweep report gfxgate-sweep.jsonl
    """
    if ctx.invoked_subcommand is not None:
        return
    if not (opts["endpoints"] and opts["models"]) and not (opts["llama_servers"] and opts["model_files"]):
        from gfxgate.errors import UsageError

        raise UsageError(
            "`gfxgate sweep` needs --endpoint NAME=URL and --model, or --llama-server NAME=COMMAND and --model-file "
            "(or the `report` subcommand)",
            hint="`gfxgate sweep --help` shows every option",
        )
    run_sweep(**opts)


def run_sweep(**opts: Any) -> None:
    from gfxgate.sweep.runner import SweepPlan, SweepRunner, parse_endpoint, parse_named, parse_num_gpu, preflight, read_prompt
    from gfxgate.sweep.worklog import WorklogWriter, read_worklog

    gpu_target = opts["gpu_target"]
    if gpu_target:
        from gfxgate.targets import catalog

        gpu_target = catalog().parse_gpu(gpu_target)  # an AMD target id or an NVIDIA sm_XX
    from gfxgate.sweep.llamaserver import parse_llama_server

    if opts["model_files"] and not opts["llama_servers"]:
        from gfxgate.errors import UsageError

        raise UsageError("--model-file needs a --llama-server NAME=COMMAND endpoint to load it")
    if opts["llama_servers"] and not opts["model_files"]:
        from gfxgate.errors import UsageError

        raise UsageError("--llama-server needs --model-file PATH (the GGUF it loads)")
    if opts["endpoints"] and not opts["models"]:
        from gfxgate.errors import UsageError

        raise UsageError("--endpoint needs --model (the Ollama model it runs)")
    plan = SweepPlan(
        endpoints=tuple(parse_endpoint(e) for e in opts["endpoints"])
        + tuple(parse_llama_server(s, opts["model_files"]) for s in opts["llama_servers"]),
        models=tuple(dict.fromkeys(opts["models"])),
        num_gpus=parse_num_gpu(opts["num_gpu"]),
        repeats=opts["repeat"],
        num_predict=opts["num_predict"],
        prompt=read_prompt(opts["prompt"]),
        seed=opts["seed"],
        timeout=opts["timeout"],
        keep_alive=opts["keep_alive"],
        unload=opts["unload"],
        stream=opts["stream"],
        gpu_target=gpu_target,
        server_logs={k: Path(v) for k, v in (parse_named(s, "--server-log", "NAME=PATH") for s in opts["server_logs"])},
        journal_units=dict(parse_named(s, "--journal-unit", "NAME=UNIT") for s in opts["journal_units"]),
        probe_gpu=opts["probe_gpu"],
        gpu_memory_log=opts["gpu_memory_log"],
    )
    worklog_path: Path = opts["worklog"]
    with WorklogWriter(worklog_path, set_aside=False) as writer:  # the lock first, then read what is there
        existing = read_worklog(worklog_path, missing_ok=True)  # a garbage worklog stops us before anything runs
        for warning in existing.warnings:
            echo(f"gfxgate: warning: {warning}", err=True)
        finished = existing.finished_cells(opts["retry"]) if opts["resume"] else set()
        todo = [c for c in plan.cells() if c.key not in finished]
        if not todo:
            click.echo(f"gfxgate: sweep: all {len(plan.cells())} cells are already in {worklog_path}; nothing to do", err=True)
            return
        preflight(_unique(c.endpoint for c in todo if c.endpoint.kind == "ollama"), plan.timeout)
        writer.set_aside_torn_tail()
        summary = SweepRunner(plan, writer, _progress(opts["progress"])).run(finished)
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(summary.outcomes.items())) or "none"
    click.echo(
        f"gfxgate: sweep: recorded {summary.recorded} run(s) ({outcomes}), skipped {summary.skipped}; "
        f"worklog {worklog_path}; next: gfxgate sweep report {worklog_path}",
        err=True,
    )


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


@sweep.command("report")
@click.argument("worklog", type=click.Path(path_type=Path))
@format_option(("md", "json", "text"))
@click.option("--lang", type=click.Choice(("en", "ja")), default="en", show_default=True, help="Language of headings and questions (cells stay the same).")
@output_option()
def report(worklog: Path, fmt: str, lang: str, output: Path | None) -> None:
    """Render WORKLOG: the num_gpu x endpoint table, pass rates, crash excerpts, hypothesis verdicts."""
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render
    from gfxgate.sweep.worklog import read_worklog

    from gfxgate.cli.io import refuse_output_over_inputs

    refuse_output_over_inputs(output, (worklog,))
    log = read_worklog(worklog)
    for warning in log.warnings:
        echo(f"gfxgate: warning: {warning}", err=True)
    if not log.runs:
        from gfxgate.errors import InputError

        raise InputError(f"worklog {worklog} has no runs")
    emit(render(build_report(log), fmt, lang, **(terminal(output) if fmt == "text" else {})), output)
