"""`gfxgate fleet`: doctor on every node of a Slurm cluster and the sweep as a job array — Slurm schedules, gfxgate
writes the job and reads what the nodes wrote.

* ``doctor(FleetDoctorRequest)``: the batch script (one task per node, ``srun gfxgate fleet node DIR``), printed
  for review or submitted with ``sbatch``;
* ``node(NodeRequest)``: one node's task — ``gfxgate doctor --format json`` on this node, written to DIR/nodes/NODE.json
  with the node name and the Slurm job/step ids;
* ``report(FleetReportRequest)``: the node x GPU x backend table over the folder;
* ``sweep(FleetSweepRequest)``: the sweep plan's cells as a job array (``--array=0-N%K``), only the cells its
  worklogs have not finished (a cancelled or failed array resumes without repeating a cell).

gfxgate never changes a node's state (no drain, no scontrol update): the prolog recipe in docs/slurm.md does that."""

from __future__ import annotations

import json
import sys
from dataclasses import field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.errors import InputError, UsageError
from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only: the pipelines are imported when a command runs
    from gfxgate.fleet.jobs import Placement
    from gfxgate.fleet.model import FleetReport

SUBMIT_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Where:
    """Where the job runs (Slurm's options; see fleet.jobs.Placement)."""

    nodes: int | None = None
    nodelist: str | None = None
    partition: str | None = None
    time: str | None = None
    sbatch_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class SubmitResult:
    script: str  # the batch script's text
    script_path: Path | None  # where it was written (None with --print)
    job_id: str | None  # None with --print (or nothing to submit)
    returncode: int | None = None  # with --wait: the job's exit status (sbatch --wait)
    cells: int = 0  # a sweep: the plan's cells
    indices: tuple[int, ...] = ()  # a sweep: the cells this array runs


def _placement(where: Where) -> Placement:
    from gfxgate.fleet.jobs import Placement

    return Placement(where.nodes, where.nodelist, where.partition, where.time, where.sbatch_args)


def _gfxgate(given: str | None) -> str:
    """The gfxgate the tasks run: --gfxgate, else the console script beside this interpreter, else `gfxgate` on PATH."""
    if given:
        return given
    beside = Path(sys.executable).parent / "gfxgate"
    return str(beside) if beside.is_file() else "gfxgate"


def _submit(folder: Path, name: str, script: str, print_only: bool, wait: bool, timeout: float) -> SubmitResult:
    if print_only:
        return SubmitResult(script, None, None)
    from gfxgate.fsio import write_text_atomic
    from gfxgate.host.slurm import sbatch

    _make(folder)
    path = write_text_atomic(folder / name, script)
    done = sbatch(path, wait=wait, timeout=timeout if wait else SUBMIT_TIMEOUT_S)
    return SubmitResult(script, path, done.job_id, done.returncode if wait else None)


def _make(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        from gfxgate.fsio import OutputError

        raise OutputError(
            f"cannot create {folder}: {exc.strerror or exc}", hint="--dir must be a folder every node can write"
        ) from None


# -- doctor on every node ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FleetDoctorRequest:
    folder: Path  # shared by every node (NFS, Lustre …): DIR/nodes/NODE.json
    where: Where = Where()
    root: str | None = None  # doctor's --root on every node; "{node}" becomes the node's name (captured trees)
    fail_on: tuple[str, ...] = ()
    gfxgate: str | None = None
    print_only: bool = False
    wait: bool = False
    timeout: float = 3600.0


def doctor(req: FleetDoctorRequest) -> SubmitResult:
    from gfxgate.fleet.jobs import doctor_script

    args: list[str] = []
    if req.root:
        args += ["--root", req.root]
    for backend in req.fail_on:
        args += ["--fail-on-backend", backend]
    script = doctor_script(req.folder, _gfxgate(req.gfxgate), _placement(req.where), args)
    return _submit(req.folder, "fleet-doctor.sbatch", script, req.print_only, req.wait, req.timeout)


@dataclass(frozen=True)
class NodeRequest:
    folder: Path
    root: str | None = None  # "{node}" becomes SLURMD_NODENAME
    fail_on: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeResult:
    node: str
    path: Path
    exit_code: int  # doctor's: 0, 1 (a --fail-on-backend backend does not run), or an error's
    failing: tuple[str, ...]
    error: str | None


def node(req: NodeRequest) -> NodeResult:
    """doctor on this node, written to DIR/nodes/NODE.json (atomically: a reader never sees half a file); an error
    of doctor's (an unreadable --root) is written as the node's answer too, with its exit code."""
    from gfxgate.app.doctor import DoctorRequest, examine
    from gfxgate.doctor.render import render
    from gfxgate.errors import ExitCode, GfxgateError
    from gfxgate.fleet.jobs import NODES_DIR
    from gfxgate.fleet.model import check_node_name, envelope
    from gfxgate.fsio import write_text_atomic
    from gfxgate.host.slurm import environment, node_name

    name = check_node_name(node_name())
    root = Path((req.root or "/").replace("{node}", name))
    doctor_json: str | None = None
    error: str | None = None
    failing: tuple[str, ...] = ()
    code = 0
    try:
        result = examine(DoctorRequest(root=root, fail_on=req.fail_on))
        doctor_json = render(result.report, "json")
        failing = result.failing
        code = int(ExitCode.FINDINGS) if failing else 0
    except GfxgateError as exc:
        error, code = " ".join(str(exc).split()), int(exc.exit_code)
    folder = req.folder / NODES_DIR
    _make(folder)
    path = write_text_atomic(
        folder / f"{name}.json",
        envelope(name, environment(), doctor_json, exit_code=code, error=error, failing=failing),
    )
    return NodeResult(name, path, code, failing, error)


@dataclass(frozen=True)
class FleetReportRequest:
    folder: Path
    expect: tuple[str, ...] = ()  # node names that must have answered besides the job's


def report(req: FleetReportRequest) -> FleetReport:
    from gfxgate.fleet.model import build_report

    return build_report(req.folder, req.expect)


# -- the sweep as a job array -----------------------------------------------------------------------------------------
PLAN_KIND = "gfxgate-fleet-sweep"
_OWN_OPTIONS = ("--worklog", "--cell", "--progress")  # the array task sets them


@dataclass(frozen=True)
class FleetSweepRequest:
    folder: Path
    sweep_args: tuple[str, ...]  # `gfxgate sweep` options, as typed (the array task runs them)
    sweep_options: Mapping[str, Any] = field(default_factory=dict)  # the same, parsed (`gfxgate sweep`'s option names)
    where: Where = Where()
    parallel: int | None = None  # %K: at most K tasks at once
    gfxgate: str | None = None
    print_only: bool = False
    wait: bool = False
    timeout: float = 24 * 3600.0


def _plan_keys(options: Mapping[str, Any]) -> list[str]:
    """The cell keys of the plan `gfxgate sweep` makes of these options (its own checks and errors), in plan order."""
    from gfxgate.app.sweep import SweepRequest
    from gfxgate.app.sweep import sweep as plan_sweep

    names = {f.name for f in fields(SweepRequest)} - {"progress", "warn", "cells", "worklog", "planned"}
    plans: list[Any] = []
    plan_sweep(SweepRequest(**{k: v for k, v in options.items() if k in names}, planned=plans.append))
    return [c.key for c in plans[0].cells()]


def sweep(req: FleetSweepRequest) -> SubmitResult:
    from gfxgate.fleet.jobs import PLAN_FILE, RUNS_DIR, sweep_script
    from gfxgate.fleet.worklogs import missing_cells, read_worklog_set

    for arg in req.sweep_args:
        if arg.split("=", 1)[0] in _OWN_OPTIONS:
            raise UsageError(
                f"{arg.split('=', 1)[0]} is set by the array (each task: its own cell and worklog under DIR/{RUNS_DIR})"
            )
    if req.parallel is not None and req.parallel < 1:
        raise UsageError("--parallel must be at least 1")
    keys = _plan_keys(req.sweep_options)
    plan_path = req.folder / PLAN_FILE
    saved = _read_plan(plan_path)
    if saved is not None and saved.get("cells") != keys:
        raise UsageError(
            f"{plan_path} holds another sweep plan ({len(saved.get('cells') or [])} cells; these options make {len(keys)})",
            hint="resume with the same sweep options, or give another --dir",
        )
    jobs = list(saved.get("jobs") or []) if saved else []
    if jobs and not req.print_only:
        from gfxgate.host.slurm import active_tasks

        active = active_tasks(str(jobs[-1]))
        if active:
            raise UsageError(
                f"array job {jobs[-1]} still has {len(active)} task(s) pending or running: wait, or scancel {jobs[-1]}",
                hint="resuming now would run those cells twice",
            )
    log = read_worklog_set(req.folder / RUNS_DIR, missing_ok=True)
    todo = missing_cells(keys, log)
    script = sweep_script(
        req.folder, _gfxgate(req.gfxgate), _placement(req.where), req.sweep_args, todo or [0], req.parallel
    )
    if not todo:
        return SubmitResult(script, None, None, cells=len(keys))
    done = _submit(req.folder, "fleet-sweep.sbatch", script, req.print_only, req.wait, req.timeout)
    if done.job_id is not None:
        from gfxgate.fsio import write_text_atomic

        body = {
            "kind": PLAN_KIND,
            "schema_version": 1,
            "sweep_args": list(req.sweep_args),
            "cells": keys,
            "jobs": [*jobs, done.job_id],
        }
        write_text_atomic(plan_path, json.dumps(body, indent=1, ensure_ascii=True) + "\n")
    return SubmitResult(done.script, done.script_path, done.job_id, done.returncode, len(keys), tuple(todo))


def _read_plan(path: Path) -> dict[str, Any] | None:
    from gfxgate.fsio import read_input
    from gfxgate.jsontext import loads_input

    try:
        data = loads_input(read_input(path, "sweep plan ", limit=16 << 20))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise InputError(f"{path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("kind") != PLAN_KIND or not isinstance(data.get("cells"), list):
        raise InputError(f"{path}: not a gfxgate fleet sweep plan")
    return data
