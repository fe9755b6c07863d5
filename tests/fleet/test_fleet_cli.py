"""`gfxgate fleet` without a cluster: the scripts it would submit (--print), its refusals and exit codes, the worklog
set the sweep report reads, and `gfxgate sweep --cell` (tests/fleet/test_fleet_slurm.py runs them on a real cluster)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gfxgate.fleet.jobs import array_spec
from gfxgate.fleet.worklogs import missing_cells, read_worklog_set
from gfxgate.sweep.worklog import cell_key
from tests.conftest import installed_gfxgate

GFXGATE = installed_gfxgate()


def gfxgate(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SLURM")}
    return subprocess.run(
        [GFXGATE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**base, "NO_COLOR": "1", **(env or {})},
    )


def _server(tmp_path: Path) -> list[str]:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    return [
        "--llama-server",
        f"cpu={shutil.which('env')}",
        "--model-file",
        str(model),
        "--num-gpu",
        "0,1,2",
        "--repeat",
        "2",
    ]


def _record(cell: str, run_id: str, outcome: str = "ok") -> str:
    endpoint, model, num_gpu, _ = cell.split("|")
    return (
        json.dumps(
            {
                "schema_version": 1,
                "kind": "gfxgate-sweep-run",
                "run_id": run_id,
                "cell": cell,
                "endpoint": {"name": endpoint, "url": "http://127.0.0.1:1", "kind": "llama-server"},
                "model": model,
                "options": {"num_gpu": int(num_gpu.split("=")[1])},
                "outcome": outcome,
                "started_at": "2026-01-01T00:00:00.000+00:00",
                "ended_at": "2026-01-01T00:00:01.000+00:00",
            }
        )
        + "\n"
    )


def test_array_spec():
    assert array_spec([0, 1, 2, 3], 2) == "0-3%2"
    assert array_spec([5], None) == "5"
    assert array_spec([7, 1, 4, 1], 3) == "1,4,7%3"


def test_sweep_print_is_one_array_over_the_plans_cells(tmp_path):
    done = gfxgate(
        "fleet",
        "sweep",
        "--dir",
        str(tmp_path / "d"),
        "--parallel",
        "3",
        "--nodelist",
        "n[1-2]",
        "--print",
        "--",
        *_server(tmp_path),
    )
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --array=0-5%3" in done.stdout  # 1 endpoint x 3 num_gpu x 2 repeats
    assert "#SBATCH --nodelist=n[1-2]" in done.stdout
    assert '--cell "$SLURM_ARRAY_TASK_ID" --worklog' in done.stdout
    assert not (tmp_path / "d").exists()  # --print writes nothing


def test_resume_submits_only_the_cells_no_worklog_finished(tmp_path):
    runs = tmp_path / "d" / "runs"
    runs.mkdir(parents=True)
    keys = [cell_key("cpu", "m.gguf", g, r) for g in (0, 1, 2) for r in (0, 1)]
    (runs / "cell-0.jsonl").write_text(_record(keys[0], "r0"))
    (runs / "cell-3.jsonl").write_text(_record(keys[3], "r3", "crash"))  # a failed run is a finished cell (as in sweep)
    done = gfxgate("fleet", "sweep", "--dir", str(tmp_path / "d"), "--print", "--", *_server(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "#SBATCH --array=1,2,4,5\n" in done.stdout
    log = read_worklog_set(runs)
    assert missing_cells(keys, log) == [1, 2, 4, 5] and missing_cells(keys, log, ("crash",)) == [1, 2, 3, 4, 5]


def test_worklog_set_is_in_natural_file_order(tmp_path):
    keys = [cell_key("cpu", "m", g, 0) for g in range(12)]
    for i in (10, 2, 11, 0):
        (tmp_path / f"cell-{i}.jsonl").write_text(_record(keys[i], f"r{i}"))
    assert [r.run_id for r in read_worklog_set(tmp_path).runs] == ["r0", "r2", "r10", "r11"]
    from gfxgate.errors import InputError

    with pytest.raises(InputError, match="is not a folder of worklogs"):
        read_worklog_set(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no worklogs"):
        read_worklog_set(tmp_path / "empty")
    assert read_worklog_set(tmp_path / "none", missing_ok=True).runs == ()


@pytest.mark.parametrize("own", ["--worklog=x.jsonl", "--cell", "--progress"])
def test_sweep_refuses_the_options_the_array_sets(tmp_path, own):
    done = gfxgate(
        "fleet",
        "sweep",
        "--dir",
        str(tmp_path),
        "--print",
        "--",
        *_server(tmp_path),
        *own.split(" "),
        *(["0"] if own == "--cell" else ["plain"] if own == "--progress" else []),
    )
    assert done.returncode == 2 and "is set by the array" in done.stderr


def test_sweep_options_are_checked_as_sweep_checks_them(tmp_path):
    done = gfxgate("fleet", "sweep", "--dir", str(tmp_path), "--print", "--", "--num-gpu", "x", *_server(tmp_path)[:4])
    assert done.returncode == 2 and "--num-gpu" in done.stderr
    done = gfxgate("fleet", "sweep", "--dir", str(tmp_path), "--print", "--", "--no-such-option")
    assert done.returncode == 2 and "no-such-option" in done.stderr


def test_another_plan_in_the_same_folder_is_refused(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps({"kind": "gfxgate-fleet-sweep", "cells": ["x"], "jobs": []}))
    done = gfxgate("fleet", "sweep", "--dir", str(tmp_path), "--print", "--", *_server(tmp_path))
    assert done.returncode == 2 and "holds another sweep plan" in done.stderr


def test_sweep_cell_out_of_the_plan_is_a_usage_error(tmp_path):
    done = gfxgate("sweep", *_server(tmp_path), "--cell", "6", "--worklog", str(tmp_path / "w.jsonl"))
    assert done.returncode == 2 and "--cell 6: the plan has 6 cell(s), numbered 0 to 5" in done.stderr


def test_doctor_print_and_bad_placement(tmp_path):
    done = gfxgate(
        "fleet",
        "doctor",
        "--dir",
        str(tmp_path / "d"),
        "--nodelist",
        "gpu[01-04]",
        "--time",
        "10",
        "--sbatch-arg=--account=lab",
        "--fail-on-backend",
        "rocm",
        "--print",
    )
    assert done.returncode == 0, done.stderr
    for line in (
        "#SBATCH --nodelist=gpu[01-04]",
        "#SBATCH --time=10",
        "#SBATCH --account=lab",
        "#SBATCH --ntasks-per-node=1",
    ):
        assert line in done.stdout.splitlines()
    assert "fleet node" in done.stdout and "--fail-on-backend rocm" in done.stdout
    bad = gfxgate("fleet", "doctor", "--dir", str(tmp_path), "--nodelist", "n1;reboot", "--print")
    assert bad.returncode == 2 and "--nodelist" in bad.stderr
    bad = gfxgate("fleet", "doctor", "--dir", str(tmp_path), "--sbatch-arg", "-N2", "--print")
    assert bad.returncode == 2


def test_without_slurm_commands_the_submission_says_so(tmp_path):
    done = gfxgate("fleet", "doctor", "--dir", str(tmp_path), "--nodes", "2", env={"PATH": str(tmp_path)})
    assert done.returncode == 6 and "sbatch is not installed here" in done.stderr


def test_node_outside_a_job_and_report_of_an_empty_folder(tmp_path):
    done = gfxgate("fleet", "node", str(tmp_path))
    assert done.returncode == 6 and "SLURMD_NODENAME is not set" in done.stderr
    done = gfxgate("fleet", "report", str(tmp_path))
    assert done.returncode == 6 and "holds no node answers" in done.stderr
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "n1.json").write_text('{"kind": "something else"}')
    done = gfxgate("fleet", "report", str(tmp_path))
    assert done.returncode == 6 and "not a gfxgate fleet node answer" in done.stderr


def _answer(folder: Path, node: str, job: str) -> None:
    from gfxgate.fleet.model import envelope

    (folder / "nodes").mkdir(parents=True, exist_ok=True)
    (folder / "nodes" / f"{node}.json").write_text(
        envelope(
            node, {"node": node, "job_id": job, "step_id": "0"}, None, exit_code=6, error="--root /x: not a folder"
        )
    )


def test_an_answer_older_than_the_latest_job_given_that_node_is_no_answer(tmp_path):
    """A second `fleet doctor` into the same folder: n1 was in job 7 too but its file is job 5's."""
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "5.nodes").write_text("n1\nn2\n")
    (tmp_path / "jobs" / "7.nodes").write_text("n1\n")
    _answer(tmp_path, "n1", "5")
    _answer(tmp_path, "n2", "5")
    done = gfxgate("fleet", "report", str(tmp_path), "--format", "json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["jobs"] == ["5", "7"] and report["missing"] == ["n1"]
    rows = {r["node"]: r for r in report["rows"]}
    assert (
        rows["n1"]["state"] == "did not answer"
        and "no answer from job 7" in rows["n1"]["fix"]
        and "(job 5)" in rows["n1"]["fix"]
    )
    assert rows["n2"]["state"] == "error" and rows["n2"]["fix"] == "--root /x: not a folder"
