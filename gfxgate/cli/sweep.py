"""`gfxgate sweep`: run the backend x num_gpu sweep; `gfxgate sweep report WORKLOG`: render it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gfxgate.app.sweep import DEFAULT_WORKLOG
from gfxgate.cli.common import echo, emit, format_option, output_option, terminal

if TYPE_CHECKING:
    from rich.progress import TaskID


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

    def run_finished(self, cell: Any, run: Any) -> None:  # a sweep.worklog.RunRecord, as the worklog reads it
        from gfxgate.sweep.facts import cell_text

        self.done += 1
        echo(f"[{self.done}/{self.total}] {cell}: {cell_text([run])} ({run.run_id})", err=True)

    def end(self) -> None:
        pass


class RichProgress:
    """A progress bar with ETA on a terminal."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

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

    def run_finished(self, cell: Any, run: Any) -> None:  # a sweep.worklog.RunRecord, as the worklog reads it
        from gfxgate.sweep.facts import cell_text

        from gfxgate.report.text import inert

        self.bar.console.print(inert(f"{cell}: {cell_text([run])} ({run.run_id})"), markup=False, highlight=False)
        if self.task is not None:
            self.bar.advance(self.task)

    def end(self) -> None:
        self.bar.stop()


def _progress(mode: str) -> PlainProgress | RichProgress | None:
    """The progress view of --progress (None: none, the runner's own NoProgress)."""
    if mode == "none":
        return None
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichProgress()
    return PlainProgress()


@click.group(invoke_without_command=True)
@click.option(
    "--endpoint",
    "endpoints",
    multiple=True,
    metavar="NAME=URL",
    help="An Ollama server, e.g. rocm=http://127.0.0.1:11435 (repeatable).",
)
@click.option(
    "--llama-server",
    "llama_servers",
    multiple=True,
    metavar="NAME=COMMAND",
    help="A llama-server gfxgate starts per cell: COMMAND is its argv prefix, shell-split (never run by a shell), e.g. vulkan='llama-server --device Vulkan0' (repeatable).",
)
@click.option("--model", "models", multiple=True, metavar="MODEL", help="Ollama model to run (repeatable).")
@click.option(
    "--model-file",
    "model_files",
    multiple=True,
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="PATH",
    help="GGUF file the --llama-server endpoints load (repeatable).",
)
@click.option(
    "--num-gpu",
    "num_gpu",
    multiple=True,
    metavar="N,N,…",
    help="num_gpu values (layers to offload; -1 = all that fit). [default: 0,1,2,-1]",
)
@click.option("--num-predict", type=int, default=512, show_default=True, help="Tokens to generate per run.")
@click.option("--repeat", type=int, default=1, show_default=True, help="Runs per cell.")
@click.option("--prompt", default=None, metavar="TEXT|@FILE", help="Prompt text, or @FILE to read it.")
@click.option("--seed", type=int, default=42, show_default=True)
@click.option(
    "--timeout",
    type=float,
    default=600.0,
    show_default=True,
    help="Seconds a generate may take (whole answer, streamed or not; connect ≤ 10 s); info, ps and unload requests get ≤ 15 s.",
)
@click.option(
    "--keep-alive", default="5m", show_default=True, help="keep_alive of each generate (so /api/ps sees the model)."
)
@click.option(
    "--unload/--no-unload",
    default=True,
    show_default=True,
    help="Unload the model after each run so the next cell loads it with its own num_gpu.",
)
@click.option(
    "--stream/--no-stream", default=False, show_default=True, help="Stream the answer (records time to first token)."
)
@click.option(
    "--worklog",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_WORKLOG,
    show_default=True,
    envvar="GFXGATE_SWEEP_WORKLOG",
)
@click.option(
    "--resume/--no-resume",
    default=True,
    show_default=True,
    help="Skip cells the worklog already has (--no-resume re-measures every cell; the new runs supersede the old).",
)
@click.option(
    "--retry",
    "retry",
    multiple=True,
    type=click.Choice(("http-error", "crash", "timeout", "connection-error")),
    help="With --resume, run again the cells whose latest run ended so (repeatable).",
)
@click.option(
    "--gpu-target",
    default=None,
    metavar="GFX",
    help="The GPU the servers run on (gfx900, or sm_90 for an NVIDIA GPU); recorded in every run.",
)
@click.option(
    "--journal-unit", "journal_units", multiple=True, metavar="NAME=UNIT", help="journald unit of an endpoint's server."
)
@click.option(
    "--server-log", "server_logs", multiple=True, metavar="NAME=PATH", help="Log file an endpoint's server writes."
)
@click.option(
    "--probe-gpu/--no-probe-gpu",
    default=True,
    show_default=True,
    help="Record rocm-smi / amd-smi / nvidia-smi / vulkaninfo output.",
)
@click.option(
    "--gpu-memory-log",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="PATH",
    help="CSV a GPU sampler writes beside the sweep (nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader -lms 200): each llama-server run records the most memory its process held.",
)
@click.option(
    "--ctx",
    "contexts",
    multiple=True,
    metavar="N,N,…",
    help="Context sizes to sweep (num_ctx for Ollama, -c for llama-server), e.g. 2048,8192,32K; the report then says, per context, which backend is faster and the largest context each fits.",
)
@click.option(
    "--prompt-tokens",
    "prompt_tokens",
    multiple=True,
    metavar="N|P%,…",
    help="Prompt lengths in tokens, or shares of each context (50%); the server's own prompt-token count is recorded.",
)
@click.option(
    "--flash-attn",
    "flash_attn",
    multiple=True,
    metavar="on,off",
    help="llama-server -fa values to sweep (Ollama: start one server per OLLAMA_FLASH_ATTENTION setting).",
)
@click.option(
    "--kv-type",
    "kv_types",
    multiple=True,
    metavar="TYPE,…",
    help="llama-server -ctk/-ctv KV cache types to sweep, e.g. f16,q8_0 (Ollama: OLLAMA_KV_CACHE_TYPE per server).",
)
@click.option(
    "--warmup",
    type=int,
    default=None,
    metavar="N",
    help="Warm-up runs per backend and configuration, recorded and left out of the statistics. [default: 1 with --ctx, else 0]",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE.svg|FILE.png",
    help="After the sweep, write the context sweep's plot (tokens/s against context, with intervals).",
)
@click.option("--progress", type=click.Choice(("auto", "bar", "plain", "none")), default="auto", show_default=True)
@click.option(
    "--cell",
    "cells",
    multiple=True,
    type=click.IntRange(min=0),
    metavar="INDEX",
    help="Run only cell INDEX of the plan (0-based, endpoint x model x num_gpu x repeat order; repeatable): a Slurm array task's SLURM_ARRAY_TASK_ID (gfxgate fleet sweep; `gfxgate sweep report FOLDER` then merges the array's worklogs).",
)
@click.pass_context
def sweep(ctx: click.Context, **opts: Any) -> None:
    """Backend x num_gpu runtime sweep against Ollama servers or llama-servers; every run is one worklog line.

    \b
    gfxgate sweep --endpoint rocm=http://127.0.0.1:11435 --endpoint vulkan=http://127.0.0.1:11434 \\
        --model qwen3.5:2b --num-gpu 0,1,2,-1 --gpu-target gfx900 --server-log vulkan=ollama-vulkan.log
    gfxgate sweep --llama-server vulkan='llama-server --device Vulkan0' --llama-server cpu='llama-server --device none' \\
        --model-file qwen2.5-0.5b-q8_0.gguf --num-gpu 0,1,2,-1 --gpu-target gfx900
    gfxgate sweep --llama-server rocm='llama-server --device ROCm0' --llama-server vulkan='llama-server --device Vulkan0' \\
        --model-file qwen2.5-1.5b-q4_k_m.gguf --num-gpu -1 --ctx 2048,8192,32768 --prompt-tokens 25% --repeat 5 --plot ctx.svg
    gfxgate sweep report gfxgate-sweep.jsonl
    """
    if ctx.invoked_subcommand is not None:
        return
    from gfxgate.app.sweep import SweepRequest
    from gfxgate.app.sweep import sweep as run

    o = opts
    outcome = run(
        SweepRequest(
            endpoints=o["endpoints"],
            llama_servers=o["llama_servers"],
            models=o["models"],
            model_files=o["model_files"],
            cells=o["cells"],
            num_gpu=o["num_gpu"],
            num_predict=o["num_predict"],
            repeat=o["repeat"],
            prompt=o["prompt"],
            seed=o["seed"],
            timeout=o["timeout"],
            keep_alive=o["keep_alive"],
            unload=o["unload"],
            stream=o["stream"],
            worklog=o["worklog"],
            resume=o["resume"],
            retry=o["retry"],
            gpu_target=o["gpu_target"],
            journal_units=o["journal_units"],
            server_logs=o["server_logs"],
            probe_gpu=o["probe_gpu"],
            gpu_memory_log=o["gpu_memory_log"],
            contexts=o["contexts"],
            prompt_tokens=o["prompt_tokens"],
            flash_attn=o["flash_attn"],
            kv_types=o["kv_types"],
            warmup=o["warmup"],
            progress=_progress(o["progress"]),
            warn=_warn,
        )
    )
    worklog_path = outcome.worklog
    _verdict(outcome.report, o["plot"])
    if outcome.summary is None:
        click.echo(f"gfxgate: sweep: all {outcome.cells} cells are already in {worklog_path}; nothing to do", err=True)
        return
    summary = outcome.summary
    outcomes = ", ".join(f"{n} {k}" for k, n in sorted(summary.outcomes.items())) or "none"
    click.echo(
        f"gfxgate: sweep: recorded {summary.recorded} run(s) ({outcomes}), skipped {summary.skipped}; "
        f"worklog {worklog_path}; next: gfxgate sweep report {worklog_path}",
        err=True,
    )


def _verdict(report: Any, plot: Path | None) -> None:
    """The context sweep's one-sentence verdict on stderr, and its plot where --plot asks for it."""
    contexts = getattr(report, "contexts", None)
    if contexts is not None:
        echo(f"gfxgate: sweep: {contexts.sentence}", err=True)
    if plot is not None:
        if contexts is None:
            _warn(f"no plot written to {plot}: no run names a context (--ctx)")
            return
        from gfxgate.sweep.render import render

        emit(render(report, "png" if plot.suffix.lower() == ".png" else "svg"), plot)


def _warn(message: str) -> None:
    echo(f"gfxgate: warning: {message}", err=True)


@sweep.command("report")
@click.argument("worklog", type=click.Path(path_type=Path))
@format_option(("md", "json", "text", "svg", "png"))
@click.option(
    "--lang",
    type=click.Choice(("en", "ja")),
    default="en",
    show_default=True,
    help="Language of headings and questions (cells stay the same).",
)
@click.option(
    "--plot",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    metavar="FILE.svg|FILE.png",
    help="Also write the context sweep's plot there (the Markdown report links it).",
)
@output_option()
def report(worklog: Path, fmt: str, lang: str, plot: Path | None, output: Path | None) -> None:
    """Render WORKLOG: the context sweep's verdict, table and plot (svg/png) where the runs name contexts; the num_gpu
    x endpoint table, pass rates, crash excerpts, hypothesis verdicts."""
    from gfxgate.app.sweep import SweepReportRequest
    from gfxgate.app.sweep import report as run
    from gfxgate.cli.common import stdout_is_terminal
    from gfxgate.errors import UsageError
    from gfxgate.sweep.render import render

    if fmt == "png" and output is None and stdout_is_terminal():
        raise UsageError("a PNG is binary: write it with -o FILE (or redirect stdout)")
    result = run(SweepReportRequest(worklog, output, _warn))
    if fmt in ("svg", "png") and result.contexts is None:
        raise UsageError(f"--format {fmt} plots a context sweep; no run in {worklog} names a context (--ctx)")
    if plot is not None:
        _verdict(result, plot)
    options: dict[str, Any] = terminal(output) if fmt == "text" else {}
    if fmt == "md" and plot is not None:
        options["plot"] = plot.name if output is not None and plot.parent == output.parent else str(plot)
    emit(render(result, fmt, lang, **options), output)
