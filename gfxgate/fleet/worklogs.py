"""A sweep spread over a job array: each array task writes its own worklog (DIR/runs/cell-INDEX.jsonl); here they
are read back as one worklog (``sweep/worklog.py``'s reader on each file, the files in natural order: plan order),
and the cells of a plan that no worklog has finished are the ones a resumed array submits again."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable, Sequence

from gfxgate.errors import InputError
from gfxgate.sweep.worklog import Run, Worklog, read_worklog

MAX_FILES = 10_000


def worklog_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder of worklogs")
    files = sorted((p for p in folder.glob("*.jsonl") if p.is_file()), key=lambda p: _natural(p.name))
    if len(files) > MAX_FILES:
        raise InputError(f"{folder} holds {len(files)} worklogs; more than {MAX_FILES} is not a sweep gfxgate wrote")
    return files


def read_worklog_set(folder: Path, *, missing_ok: bool = False) -> Worklog:
    """Every ``*.jsonl`` worklog in ``folder`` as one :class:`Worklog` (its path the folder): the files in natural
    order (cell-2 before cell-10: an array's worklogs in plan order, so the report's rows and columns come in the
    order one machine's sweep gives them), each file's runs in its order (a cell run again supersedes its earlier
    run, as in one worklog); each run keeps the line of its own file. A folder without worklogs is an InputError
    unless ``missing_ok``."""
    files = worklog_files(folder) if folder.exists() or not missing_ok else []
    if not files and not missing_ok:
        raise InputError(
            f"{folder} holds no worklogs (*.jsonl)", hint="the runs folder of `gfxgate fleet sweep --dir DIR`"
        )
    runs: list[Run] = []
    warnings: list[str] = []
    for path in files:
        log = read_worklog(path)
        warnings += log.warnings
        runs += log.runs
    seen: set[str] = set()
    for run in runs:
        if run.run_id in seen:
            warnings.append(f"{folder}: run {run.run_id} is in more than one worklog")
        seen.add(run.run_id)
    return Worklog(folder, tuple(runs), tuple(warnings))


def _natural(name: str) -> list:
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def missing_cells(keys: Sequence[str], log: Worklog, retry: Iterable[str] = ()) -> list[int]:
    """The indices of the plan's cells (``keys`` in plan order) that ``log`` has not finished."""
    finished = log.finished_cells(retry)
    return [i for i, key in enumerate(keys) if key not in finished]
