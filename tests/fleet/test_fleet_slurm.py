"""`gfxgate fleet` on a real Slurm cluster (tests/fleet/conftest.py: Debian's slurmctld + one slurmd per node name on
this host): jobs really submitted with sbatch, the doctor tasks on captured machines (a --root per node, so each
node has other GPUs), the sweep array against the real llama-server (tests/reallama.py), cancelled with scancel and
resumed.

What Slurm runs (the batch scripts, ``gfxgate fleet node`` and ``gfxgate sweep --cell`` in each task, the prolog
recipe) is the installed script in real processes; the commands the test itself types (submissions, reports,
doctor alone) run in process (tests/inprocess.py: the exit code, stdout and stderr the script would give), which
spares an interpreter and its imports per call."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from gfxgate.fleet.jobs import array_spec
from gfxgate.fleet.model import doctor_rows
from tests.conftest import installed_gfxgate
from tests.doctor.machines import machine
from tests.inprocess import gfxgate as in_process
from tests.reallama import reallama  # noqa: F401 - session fixture

GFXGATE = installed_gfxgate()
JOB_MINUTES = 10  # every job's time limit (sbatch --time): Slurm ends a job that hangs, and sbatch --wait with it


def gfxgate(cluster, *args: str) -> subprocess.CompletedProcess:
    """``gfxgate ARGS`` as typed on the cluster's login node (SLURM_CONF names the test cluster), in process."""
    return in_process(*args, env=cluster.env())


# -- doctor on every node -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fleet_doctor(cluster, tmp_path_factory):
    """One `fleet doctor --wait` over the three nodes: n1 a Vega 56 box, n2 an RX 6700 XT box, n3 with no tree at its
    --root (doctor fails there: exit 6, and says so in its answer)."""
    trees = tmp_path_factory.mktemp("trees")
    machine(trees / "n1", "vega56", version="0.17.5")
    machine(trees / "n2", "rx6700xt", version="0.32.15", runner="rocm_v7_2", render_members="ollama")
    folder = tmp_path_factory.mktemp("fleet") / "doctor"
    root = f"{trees}/{{node}}"
    job = ("fleet", "doctor", "--dir", str(folder), "--nodes", "3", "--root", root, "--time", str(JOB_MINUTES))
    printed = gfxgate(cluster, *job, "--print")
    done = gfxgate(cluster, *job, "--wait")
    return trees, folder, printed, done


def test_print_shows_the_job_it_submits(fleet_doctor):
    _, folder, printed, done = fleet_doctor
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == (folder / "fleet-doctor.sbatch").read_text()
    assert "#SBATCH --ntasks-per-node=1" in printed.stdout and "#SBATCH --nodes=3" in printed.stdout
    assert re.search(r"^srun .* fleet node ", printed.stdout, re.M)
    # the job ran: n3's doctor failed, so the job (sbatch --wait) did not end 0
    assert done.returncode == 1, done.stderr
    assert re.search(r"submitted job \d+", done.stderr)


def test_each_nodes_rows_equal_doctor_run_on_that_node_alone(cluster, fleet_doctor):
    trees, folder, _, done = fleet_doctor
    job = re.search(r"submitted job (\d+)", done.stderr).group(1)
    rep = gfxgate(cluster, "fleet", "report", str(folder), "--format", "json")
    assert rep.returncode == 1, rep.stderr  # n3 failed
    report = json.loads(rep.stdout)
    _valid("fleet-report", report)
    assert report["jobs"] == [job]
    assert [n["node"] for n in report["nodes"]] == ["n1", "n2", "n3"]
    for name in ("n1", "n2"):
        alone = gfxgate(cluster, "doctor", "--root", str(trees / name), "--format", "json")
        assert alone.returncode == 0, alone.stderr
        envelope = json.loads((folder / "nodes" / f"{name}.json").read_text())
        _valid("fleet-node", envelope)
        _valid("doctor", envelope["doctor"])
        assert envelope["doctor"] == json.loads(alone.stdout)  # doctor's JSON contract, unchanged
        assert envelope["node"] == name and envelope["slurm"]["job_id"] == job and envelope["slurm"]["step_id"] == "0"
        rows = [r for r in report["rows"] if r["node"] == name]
        assert rows == [r.to_json() for r in doctor_rows(name, json.loads(alone.stdout))]
        assert rows
    gpus = {r["node"]: r["gpu"] for r in report["rows"]}
    assert gpus["n1"].startswith("gfx900 ") and gpus["n2"].startswith("gfx1031 ")
    vega = {r["backend"]: r for r in report["rows"] if r["node"] == "n1"}
    assert vega["vulkan"]["state"] == "needs steps" and vega["vulkan"]["blocking"] == ["vulkan", "access"]
    assert "OLLAMA_VULKAN=1" in vega["vulkan"]["fix"]
    # n3: doctor alone fails (exit 6), and the fleet says so with doctor's own words
    alone = gfxgate(cluster, "doctor", "--root", str(trees / "n3"), "--format", "json")
    assert alone.returncode == 6 and alone.stdout == ""
    n3 = [r for r in report["rows"] if r["node"] == "n3"]
    assert [r["state"] for r in n3] == ["error"]
    assert n3[0]["fix"] == alone.stderr.strip().removeprefix("gfxgate: error: ")
    assert report["nodes"][2] == {**report["nodes"][2], "answered": True, "exit_code": 6, "error": n3[0]["fix"]}


def _valid(name: str, document) -> None:
    import jsonschema

    from gfxgate.datafiles import load_schema

    jsonschema.Draft202012Validator(load_schema(name)).validate(document)


def test_a_node_that_did_not_answer_is_listed_as_such(cluster, fleet_doctor):
    _, folder, _, _ = fleet_doctor
    for fmt in ("md", "text", "json"):
        rep = gfxgate(cluster, "fleet", "report", str(folder), "--expect", "n4", "--format", fmt)
        assert rep.returncode == 1
        assert "did not answer" in rep.stdout and "n4" in rep.stdout
        assert "did not answer: n4" in rep.stderr
    report = json.loads(rep.stdout)
    assert report["missing"] == ["n4"]
    assert [r for r in report["rows"] if r["node"] == "n4"][0]["state"] == "did not answer"


def test_the_prolog_recipe_drains_a_node_whose_backend_stopped(cluster, fleet_doctor, tmp_path):
    """docs/slurm.md's HealthCheckProgram recipe, run as it is written (GFXGATE_ROOT pointing at a captured tree):
    the Vega box's Vulkan needs steps, so --fail-on vulkan drains n1 with doctor's words as the reason; the
    RX 6700 XT's Vulkan runs and n2 stays up. gfxgate itself only exits 1."""
    trees, *_ = fleet_doctor
    script = tmp_path / "gfxgate-healthcheck.sh"
    script.write_text(_recipe("gfxgate-healthcheck.sh"))
    try:
        for node, drained in (("n1", True), ("n2", False)):
            env = {
                **cluster.env(),
                "SLURMD_NODENAME": node,
                "GFXGATE": GFXGATE,
                "GFXGATE_ROOT": str(trees / node),
                "GFXGATE_BACKEND": "vulkan",
            }
            done = subprocess.run(
                ["bash", str(script)], env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert done.returncode == 0, done.stderr
            state = cluster.run("sinfo", "-h", "-N", "-n", node, "-o", "%t|%E").stdout.strip()
            if drained:
                assert state.startswith("drain") and "gfxgate: vulkan does not run" in state, state
            else:
                assert state.startswith("idle"), state
    finally:
        cluster.run("scontrol", "update", "NodeName=n1", "State=RESUME")


def _recipe(name: str) -> str:
    """The shell block under the heading that names ``name`` in docs/slurm.md."""
    text = (Path(__file__).parents[2] / "docs" / "slurm.md").read_text()
    found = re.search(rf"`{re.escape(name)}`.*?```bash\n(.*?)```", text, re.S)
    assert found, f"docs/slurm.md has no bash block for {name}"
    return found.group(1)


# -- the sweep as a job array ---------------------------------------------------------------------------------------------
CELLS = 6  # 2 endpoints x 3 --num-gpu: 2 at a time, so a cancel after 2 cells leaves 2 running and 2 to come


def _sweep_args(reallama) -> list[str]:
    """The plan: 6 cells of the real llama-server (CPU set), each on one compute thread: ggml's default, a thread per
    core, spins at every barrier, seconds of CPU per run on shared cores; no claim here depends on the threads."""
    command = shlex.join([*reallama.command("cpu"), "-t", "1"])
    return [
        "--llama-server",
        f"a={command}",
        "--llama-server",
        f"b={command}",
        "--model-file",
        str(reallama.model),
        "--num-gpu",
        "0,1,-1",
        "--num-predict",
        "8",
        "--no-probe-gpu",
        "--gpu-target",
        "gfx900",
        "--timeout",
        "120",
    ]


def _runs(folder: Path) -> dict[str, list[dict]]:
    runs: dict[str, list[dict]] = {}
    for path in sorted(folder.glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            runs.setdefault(record["cell"], []).append(record)
    return runs


def _wait_idle(cluster, job: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not cluster.run("squeue", "-h", "-r", "-j", job, "-o", "%i").stdout.strip():
            return
        time.sleep(0.5)
    raise AssertionError(f"job {job} still in squeue after {timeout} s")


_TIMES = re.compile(r"\d+(\.\d+)? ?(s|ms|tokens/s)\b")


def _comparable(report: dict) -> dict:
    """A sweep report without what differs between two runs of the same plan: run ids, times, speeds, the node."""

    def norm(value):
        if isinstance(value, dict):
            return {
                k: norm(v)
                for k, v in value.items()
                if k
                not in (
                    "run",
                    "runs",
                    "run_ids",
                    "worklog",
                    "worklog_line",
                    "node",
                    "span",
                    "generator",
                    "details",
                    "hosts",
                    "superseded",
                )
            }
        if isinstance(value, list):
            return [norm(v) for v in value]
        return _TIMES.sub("T", value) if isinstance(value, str) else value

    out = norm(report)
    out["all_runs"] = sorted(
        (r["endpoint"], r["model"], r["num_gpu"], r["outcome"], r["phase"], r["vram"], _TIMES.sub("T", r["text"]))
        for r in report["runs"]
    )
    return out


def test_sweep_array_cancelled_and_resumed_equals_one_machine(cluster, reallama, tmp_path):  # noqa: F811
    args = _sweep_args(reallama)
    folder = tmp_path / "array"
    submit = ["fleet", "sweep", "--dir", str(folder), "--parallel", "2", "--time", str(JOB_MINUTES)]
    first = gfxgate(cluster, *submit, "--print", "--", *args)
    assert first.returncode == 0, first.stderr
    assert f"#SBATCH --array=0-{CELLS - 1}%2" in first.stdout and '--cell "$SLURM_ARRAY_TASK_ID"' in first.stdout
    done = gfxgate(cluster, *submit, "--", *args)
    assert done.returncode == 0, done.stderr
    job = re.search(r"submitted job (\d+)", done.stderr).group(1)
    # while the array has tasks queued or running, a resubmission would run their cells twice: refused (squeue)
    twice = gfxgate(cluster, *submit, "--", *args)
    assert twice.returncode == 2 and f"array job {job} still has" in twice.stderr
    # cancel once two cells are in (2 at a time: two more are running, the others still to come)
    deadline = time.monotonic() + 240
    while sum(map(len, _runs(folder / "runs").values())) < 2:
        assert time.monotonic() < deadline, "no cell finished"
        time.sleep(0.2)
    assert cluster.run("scancel", job).returncode == 0
    _wait_idle(cluster, job)
    before = _runs(folder / "runs")
    assert 2 <= len(before) < CELLS, before.keys()
    # a second submission while tasks are still queued would be refused; now: only the missing cells go
    again = gfxgate(cluster, *submit, "--wait", "--", *args)
    assert again.returncode == 0, again.stderr
    assert f"{CELLS - len(before)} of {CELLS} cell(s) to run" in again.stderr
    ran = {
        int(p.stem.split("-")[1])
        for p in (folder / "runs").glob("cell-*.jsonl")
        if p.read_text() and json.loads(p.read_text().splitlines()[0])["cell"] in before
    }
    assert len(ran) == len(before)
    missing = sorted(set(range(CELLS)) - ran)
    assert f"#SBATCH --array={array_spec(missing, 2)}\n" in (folder / "fleet-sweep.sbatch").read_text()
    after = _runs(folder / "runs")
    assert len(after) == CELLS
    assert all(len(runs) == 1 for runs in after.values()), {k: len(v) for k, v in after.items()}  # no cell ran twice
    assert {k: v[0]["run_id"] for k, v in before.items()} == {k: after[k][0]["run_id"] for k in before}
    keys = json.loads((folder / "plan.json").read_text())["cells"]
    for path in (folder / "runs").glob("cell-*.jsonl"):  # task INDEX ran cell INDEX of the plan (gfxgate sweep --cell)
        index = path.stem.split("-")[1]
        record = json.loads(path.read_text().splitlines()[0])
        assert record["cell"] == keys[int(index)] and record["slurm"]["array_task_id"] == index
    nodes = {r[0]["slurm"]["node"] for r in after.values()}
    assert len(nodes) >= 2 and nodes <= set(cluster.nodes)
    # a third time: nothing left to submit
    idle = gfxgate(cluster, *submit, "--", *args)
    assert idle.returncode == 0 and "nothing to submit" in idle.stderr
    # the same sweep on one machine, and the two reports
    alone = tmp_path / "alone.jsonl"
    one = gfxgate(cluster, "sweep", *args, "--worklog", str(alone), "--progress", "none")
    assert one.returncode == 0, one.stderr
    merged = json.loads(gfxgate(cluster, "sweep", "report", str(folder / "runs"), "--format", "json").stdout)
    single = json.loads(gfxgate(cluster, "sweep", "report", str(alone), "--format", "json").stdout)
    assert _comparable(merged) == _comparable(single)
    assert {r["node"] for r in merged["runs"]} == nodes and {r.get("node") for r in single["runs"]} == {None}
    md = gfxgate(cluster, "sweep", "report", str(folder / "runs"), "--format", "md").stdout
    assert "| offload (ps / log) | node |" in md
