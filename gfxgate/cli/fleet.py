"""`gfxgate fleet`: doctor on every node of a Slurm cluster (`fleet doctor`, each node's task `fleet node`, the table
`fleet report`) and the sweep as a job array (`fleet sweep`). Slurm schedules; gfxgate never drains a node."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gfxgate.cli.common import echo, emit, fail_on_option, format_option, output_option

_DIR = click.option(
    "--dir",
    "folder",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="A folder every node sees (NFS, Lustre …): the batch script, the nodes' answers, the worklogs.",
)


def _where(f):
    for opt in reversed(
        (
            click.option("-N", "--nodes", type=int, default=None, help="Number of nodes (sbatch -N)."),
            click.option(
                "--nodelist", default=None, metavar="HOSTLIST", help="These nodes (sbatch --nodelist, e.g. n[1-4])."
            ),
            click.option("--partition", "-p", default=None, help="Partition (sbatch --partition)."),
            click.option("--time", default=None, metavar="TIME", help="Time limit (sbatch --time)."),
            click.option(
                "--sbatch-arg",
                "sbatch_args",
                multiple=True,
                metavar="--OPTION=VALUE",
                help="Another sbatch option, written into the script (repeatable: --sbatch-arg=--account=lab).",
            ),
            click.option(
                "--gfxgate",
                "gfxgate_exe",
                default=None,
                metavar="PATH",
                help="The gfxgate the tasks run [default: this one, if the nodes see the same path].",
            ),
            click.option(
                "--print", "print_only", is_flag=True, help="Print the batch script for review; submit nothing."
            ),
            click.option(
                "--wait", is_flag=True, help="Wait for the job to end (sbatch --wait); exit 1 when a task failed."
            ),
        )
    ):
        f = opt(f)
    return f


@click.group()
def fleet() -> None:
    """doctor on every node of a Slurm cluster, gathered into one table, and the sweep as a job array (docs/slurm.md)."""


@fleet.command("doctor")
@_DIR
@_where
@click.option(
    "--root",
    default=None,
    metavar="PATH",
    help="doctor's --root on every node; {node} becomes the node's name (captured trees: --root 'trees/{node}').",
)
@fail_on_option("backend", "BACKEND|any", "doctor's --fail-on-backend on every node (the task exits 1).")
def doctor(folder, nodes, nodelist, partition, time, sbatch_args, gfxgate_exe, print_only, wait, root, fail_on) -> None:
    """Submit one job with one task per node (sbatch -N … --ntasks-per-node=1, srun gfxgate fleet node DIR): each
    node writes `gfxgate doctor --format json` plus its node name and Slurm job/step ids to DIR/nodes/NODE.json.
    Then `gfxgate fleet report DIR`. With --print: the script only.

    Exit codes: 0 submitted (or printed; with --wait: every task ended 0), 1 with --wait: a task failed (a --fail-on-backend
    backend does not run there), 2 usage, 6 Slurm refused or is not installed here.
    """
    from gfxgate.app.fleet import FleetDoctorRequest, Where
    from gfxgate.app.fleet import doctor as run

    done = run(
        FleetDoctorRequest(
            folder,
            Where(nodes, nodelist, partition, time, tuple(sbatch_args)),
            root,
            tuple(fail_on),
            gfxgate_exe,
            print_only,
            wait,
        )
    )
    _submitted(done, f"gfxgate fleet report {folder}")


def _submitted(done: Any, next_step: str) -> None:
    if done.job_id is None:
        emit(done.script, None)
        return
    echo(f"gfxgate: fleet: submitted job {done.job_id} ({done.script_path}); next: {next_step}", err=True)
    if done.returncode:
        echo(f"gfxgate: fleet: job {done.job_id} ended with exit status {done.returncode} (a task failed)", err=True)
        sys.exit(1)


@fleet.command("node")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--root", default=None, metavar="PATH", help="doctor's --root; {node} becomes this node's name.")
@fail_on_option("backend", "BACKEND|any", "Exit 1 when BACKEND does not run here (doctor's --fail-on-backend).")
def node(folder: Path, root: str | None, fail_on: tuple[str, ...]) -> None:
    """One node's task (run by `fleet doctor`'s job through srun): `gfxgate doctor --format json` on this node, written
    to FOLDER/nodes/NODE.json with the node name (SLURMD_NODENAME) and the Slurm job and step ids.

    Exit codes: doctor's (0, 1 a --fail-on-backend backend does not run, 6 unreadable --root); the answer is written either way.
    """
    from gfxgate.app.fleet import NodeRequest
    from gfxgate.app.fleet import node as run

    done = run(NodeRequest(folder, root, tuple(fail_on)))
    if done.error:
        echo(f"gfxgate: fleet: {done.node}: doctor failed: {done.error}", err=True)
    elif done.failing:
        echo(f"gfxgate: fleet: {done.node}: does not run as the machine is: {', '.join(done.failing)}", err=True)
    sys.exit(done.exit_code)


@fleet.command("report")
@click.argument("folder", type=click.Path(path_type=Path))
@click.option(
    "--expect",
    multiple=True,
    metavar="NODE",
    help="A node that should have answered besides the job's nodes (repeatable).",
)
@format_option(("md", "json", "text"))
@output_option()
def report(folder: Path, expect: tuple[str, ...], fmt: str, output: Path | None) -> None:
    """One table over FOLDER (of `gfxgate fleet doctor --dir`): node x GPU x backend verdict x blocking layer x fix,
    the nodes that did not answer listed as such.

    Exit codes: 0 every node answered, 1 a node did not answer or its doctor failed, 6 unreadable folder.
    """
    from gfxgate.app.fleet import FleetReportRequest
    from gfxgate.app.fleet import report as run
    from gfxgate.fleet.render import render

    result = run(FleetReportRequest(folder, tuple(expect)))
    emit(render(result, fmt), output)
    if result.missing or result.failed:
        echo(
            f"gfxgate: fleet: did not answer: {', '.join(result.missing) or '-'}; doctor failed: {', '.join(result.failed) or '-'}",
            err=True,
        )
        sys.exit(1)


@fleet.command("sweep", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@_DIR
@_where
@click.option("--parallel", type=int, default=None, metavar="K", help="At most K array tasks at once (--array=…%K).")
@click.argument("sweep_args", nargs=-1, type=click.UNPROCESSED, metavar="-- SWEEP_OPTIONS...")
def sweep(
    folder, nodes, nodelist, partition, time, sbatch_args, gfxgate_exe, print_only, wait, parallel, sweep_args
) -> None:
    """The sweep as a job array: `gfxgate fleet sweep --dir DIR -- SWEEP_OPTIONS` submits one array task per cell of
    the plan SWEEP_OPTIONS make (sbatch --array=0-N%K; SLURM_ARRAY_TASK_ID picks the cell: `gfxgate sweep
    SWEEP_OPTIONS --cell INDEX`), each with its own worklog DIR/runs/cell-INDEX.jsonl whose runs carry their node.
    Run it again with the same options to resume: only the cells no worklog has finished are submitted.
    Then `gfxgate sweep report DIR/runs`.

    \b
    gfxgate fleet sweep --dir /shared/sweep --partition mi50 --parallel 4 -- \\
        --llama-server vulkan='llama-server --device Vulkan0' --model-file /shared/q.gguf --num-gpu 0,1,2,-1
    """
    from gfxgate.app.fleet import FleetSweepRequest, Where
    from gfxgate.app.fleet import sweep as run
    from gfxgate.cli.sweep import sweep as sweep_command

    args = list(sweep_args[1:]) if sweep_args[:1] == ("--",) else list(sweep_args)
    with sweep_command.make_context("gfxgate sweep", list(args)) as ctx:  # `gfxgate sweep`'s own parsing and errors
        options = dict(ctx.params)
    done = run(
        FleetSweepRequest(
            folder,
            tuple(args),
            options,
            Where(nodes, nodelist, partition, time, tuple(sbatch_args)),
            parallel,
            gfxgate_exe,
            print_only,
            wait,
        )
    )
    if not done.indices and done.job_id is None and not print_only:
        echo(
            f"gfxgate: fleet: all {done.cells} cells of the plan are in {folder}/runs; nothing to submit "
            f"(gfxgate sweep report {folder}/runs)",
            err=True,
        )
        return
    if done.job_id is not None:
        echo(f"gfxgate: fleet: {len(done.indices)} of {done.cells} cell(s) to run", err=True)
    _submitted(done, f"gfxgate sweep report {folder}/runs")
