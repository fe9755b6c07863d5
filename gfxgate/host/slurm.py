"""Slurm's client commands (``sbatch``, ``squeue``, ``scancel``), each run through :func:`gfxgate.host.proc.run_bounded`:
an argument list (never a shell), one timeout, one output budget. The cluster is whichever the environment names
(``SLURM_CONF``, or the machine's own ``/etc/slurm/slurm.conf``); gfxgate never changes a node's state."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from gfxgate.errors import InputError, UsageError
from gfxgate.host import proc
from gfxgate.records import dataclass

MAX_OUTPUT = 1 << 20
QUERY_TIMEOUT_S = 60.0
_JOB_ID = re.compile(r"^(\d+)(?:;\S+)?$")  # sbatch --parsable: "JOBID" or "JOBID;CLUSTER"


class SlurmError(InputError):
    """A Slurm command that is missing or refused (exit code 6: an input gfxgate cannot use, here the cluster)."""


@dataclass(frozen=True)
class Submitted:
    job_id: str
    stdout: str  # what sbatch said (with --wait: after the job ended)
    returncode: int  # sbatch's exit status (with --wait: the job's)


def _run(argv: Sequence[str], timeout: float) -> proc.Result:
    try:
        return proc.run_bounded(list(argv), timeout=timeout, max_output=MAX_OUTPUT)
    except FileNotFoundError:
        raise SlurmError(
            f"{argv[0]} is not installed here (Slurm's client commands: Debian's slurm-client)",
            hint="run this on a machine of the cluster (a login node), or use --print and submit elsewhere",
        ) from None
    except OSError as exc:
        raise SlurmError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _words(result: proc.Result) -> str:
    text = (result.stderr or result.stdout).decode("utf-8", "replace").strip()
    return " ".join(text.split())[:500] or f"exit status {result.returncode}"


def sbatch(
    script: Path, args: Sequence[str] = (), *, wait: bool = False, timeout: float = QUERY_TIMEOUT_S
) -> Submitted:
    """Submit ``script`` (``sbatch --parsable [--wait] ARGS SCRIPT``); returns the job id. With ``wait`` sbatch
    returns when the job ends, its exit status the job's (non-zero when a task failed)."""
    argv = ["sbatch", "--parsable", *(["--wait"] if wait else []), *args, str(script)]
    result = _run(argv, timeout)
    if result.timed_out:
        raise SlurmError(
            f"sbatch did not return within {timeout:.0f} s" + (" (the job is still running)" if wait else "")
        )
    out = result.stdout.decode("utf-8", "replace")
    first = next((line.strip() for line in out.splitlines() if line.strip()), "")
    found = _JOB_ID.match(first)
    if found is None:
        raise SlurmError(f"sbatch refused the job: {_words(result)}")
    return Submitted(found.group(1), out, result.returncode)


def active_tasks(job_id: str, timeout: float = QUERY_TIMEOUT_S) -> tuple[str, ...]:
    """The job's (or array's) tasks still pending or running, as squeue names them (``12_3``, ``12_[4-7]``)."""
    check_job_id(job_id)
    result = _run(["squeue", "-h", "-r", "-j", job_id, "-o", "%i %T"], timeout)
    if result.returncode != 0:
        words = _words(result)
        if "Invalid job id" in words:  # a job that ended a while ago is forgotten
            return ()
        raise SlurmError(f"squeue failed: {words}")
    return tuple(line.split()[0] for line in result.stdout.decode("utf-8", "replace").splitlines() if line.strip())


def scancel(job_id: str, timeout: float = QUERY_TIMEOUT_S) -> None:
    check_job_id(job_id)
    result = _run(["scancel", job_id], timeout)
    if result.returncode != 0:
        raise SlurmError(f"scancel {job_id} failed: {_words(result)}")


def check_job_id(job_id: str) -> str:
    if not re.fullmatch(r"\d+(_\d+)?", job_id):
        raise UsageError(f"{job_id!r} is not a Slurm job id (digits, or JOB_TASK for an array task)")
    return job_id


def environment() -> dict[str, str]:
    """What Slurm tells a task about itself (empty outside a job): the node, the job, the step, the array task."""
    names = {
        "node": "SLURMD_NODENAME",
        "job_id": "SLURM_JOB_ID",
        "step_id": "SLURM_STEP_ID",
        "procid": "SLURM_PROCID",
        "array_job_id": "SLURM_ARRAY_JOB_ID",
        "array_task_id": "SLURM_ARRAY_TASK_ID",
        "cluster": "SLURM_CLUSTER_NAME",
    }
    return {key: os.environ[var] for key, var in names.items() if os.environ.get(var)}


def node_name() -> str:
    """This node's Slurm name (SLURMD_NODENAME), which a task always has; an InputError outside one."""
    name = os.environ.get("SLURMD_NODENAME", "")
    if not name:
        raise InputError(
            "SLURMD_NODENAME is not set: `gfxgate fleet node` runs as a task of a Slurm job (srun)",
            hint="`gfxgate fleet doctor --print` shows the job that runs it",
        )
    return name
