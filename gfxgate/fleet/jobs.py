"""The batch scripts `gfxgate fleet` submits (pure text, reviewed with ``--print``): one task per node running
``gfxgate fleet node`` (doctor's JSON plus the node and the Slurm ids), and a job array whose task
``SLURM_ARRAY_TASK_ID`` runs one cell of a sweep plan with its own worklog file."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Sequence

from gfxgate.errors import UsageError
from gfxgate.records import dataclass

NODES_DIR = "nodes"  # DIR/nodes/NODE.json: what each node's task wrote
JOBS_DIR = "jobs"  # DIR/jobs/JOBID.nodes: the nodes a doctor job was given (scontrol show hostnames)
RUNS_DIR = "runs"  # DIR/runs/cell-INDEX.jsonl: one worklog per array task
PLAN_FILE = "plan.json"  # DIR/plan.json: the sweep's options and its cells, written at submission
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._,\[\]-]*")


@dataclass(frozen=True)
class Placement:
    """Where the job runs: Slurm's own options, checked for shape only (Slurm judges the names)."""

    nodes: int | None = None  # -N
    nodelist: str | None = None  # --nodelist (a hostlist: n[1-4],gpu7)
    partition: str | None = None
    time: str | None = None  # --time
    extra: tuple[str, ...] = ()  # more sbatch options, verbatim (--account=lab, --gres=gpu:1)

    def __post_init__(self) -> None:
        for label, value in (("--nodelist", self.nodelist), ("--partition", self.partition)):
            if value is not None and not _NAME.fullmatch(value):
                raise UsageError(
                    f"{label} {value!r}: a Slurm name or hostlist (letters, digits, '.', '_', '-', ',', '[]')"
                )
        if self.nodes is not None and self.nodes < 1:
            raise UsageError("--nodes must be at least 1")
        if self.time is not None and not re.fullmatch(r"[0-9:-]+", self.time):
            raise UsageError(f"--time {self.time!r}: Slurm's time (MINUTES, HH:MM:SS, D-HH)")
        for arg in self.extra:
            if not arg.startswith("--") or "\n" in arg:
                raise UsageError(f"--sbatch-arg {arg!r}: one sbatch option per --sbatch-arg, written --name=value")

    def directives(self) -> list[str]:
        out = []
        if self.nodes is not None:
            out.append(f"--nodes={self.nodes}")
        if self.nodelist:
            out.append(f"--nodelist={self.nodelist}")
        if self.partition:
            out.append(f"--partition={self.partition}")
        if self.time:
            out.append(f"--time={self.time}")
        out += list(self.extra)
        return [f"#SBATCH {d}" for d in out]


def _q(value: str | Path) -> str:
    return shlex.quote(str(value))


def doctor_script(folder: Path, gfxgate: str, place: Placement, node_args: Sequence[str]) -> str:
    """One task per node (``--ntasks-per-node=1``): ``gfxgate fleet node DIR …`` writes DIR/nodes/NODE.json;
    the batch step first records the nodes the job was given, so a node that never answers is listed as such."""
    folder = folder.absolute()
    lines = [
        "#!/bin/bash",
        "# gfxgate fleet doctor: `gfxgate doctor --format json` on every node of the job, one task per node, each",
        f"# writing its node's JSON (plus the node name and the Slurm job/step ids) to {folder}/{NODES_DIR}/NODE.json.",
        f"# Then: gfxgate fleet report {folder}",
        "#SBATCH --job-name=gfxgate-doctor",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --output={folder}/slurm-%j.out",
        *place.directives(),
        "set -u",
        f"mkdir -p {_q(folder / JOBS_DIR)} {_q(folder / NODES_DIR)}",
        f'scontrol show hostnames "$SLURM_JOB_NODELIST" > {_q(folder / JOBS_DIR)}/"$SLURM_JOB_ID.nodes"',
        "srun --ntasks-per-node=1 --kill-on-bad-exit=0 "
        + " ".join(_q(a) for a in [gfxgate, "fleet", "node", str(folder), *node_args]),
    ]
    return "\n".join(lines) + "\n"


def array_spec(indices: Sequence[int], parallel: int | None) -> str:
    """``--array`` for these cell indices: ``0-7%2`` when contiguous, else ``1,4,6%2``."""
    if not indices:
        raise ValueError("no cells")
    ordered = sorted(set(indices))
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        spec = f"{ordered[0]}-{ordered[-1]}" if len(ordered) > 1 else str(ordered[0])
    else:
        spec = ",".join(map(str, ordered))
    return spec + (f"%{parallel}" if parallel else "")


def sweep_script(
    folder: Path,
    gfxgate: str,
    place: Placement,
    sweep_args: Sequence[str],
    indices: Sequence[int],
    parallel: int | None,
) -> str:
    """A job array: task ``SLURM_ARRAY_TASK_ID`` runs cell INDEX of the plan (``gfxgate sweep … --cell INDEX``) into
    its own worklog DIR/runs/cell-INDEX.jsonl; the worklog lines carry the node (SLURMD_NODENAME)."""
    folder = folder.absolute()
    runs = folder / RUNS_DIR
    argv = " ".join(_q(a) for a in [gfxgate, "sweep", *sweep_args, "--progress", "plain"])
    lines = [
        "#!/bin/bash",
        "# gfxgate fleet sweep: one sweep cell per array task (SLURM_ARRAY_TASK_ID picks the cell of the plan),",
        f"# one worklog per task under {runs}. Then: gfxgate sweep report {runs}",
        "#SBATCH --job-name=gfxgate-sweep",
        f"#SBATCH --array={array_spec(indices, parallel)}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --output={folder}/slurm-%A_%a.out",
        *place.directives(),
        "set -u",
        f"mkdir -p {_q(runs)}",
        f'exec {argv} --cell "$SLURM_ARRAY_TASK_ID" --worklog {_q(runs)}/"cell-$SLURM_ARRAY_TASK_ID.jsonl"',
    ]
    return "\n".join(lines) + "\n"
