"""The speed budget (issue 40): four commands a user waits for, whole process, warm, against `python -c pass`.

    python benchmarks/bench_budget.py [--repeat 11] [--install fresh|current] [--against CHECKOUT]

| command | budget |
|---|---|
| ``gfxgate scan -t gfx900`` (the embedded snapshot, Markdown to a pipe) | ≤ 150 ms |
| ``gfxgate diagnose --no-upstream LOG`` of a 1,000-line server journal | ≤ 150 ms |
| ``gfxgate doctor --root MACHINE`` of a captured machine (tests/doctor/machines.py: the Vega 56 with Ollama 0.17.5) | ≤ 300 ms |
| ``gfxgate --help`` | ≤ 100 ms |

What is timed is what a user runs: by default (``--install fresh``) a regular, non-editable ``pip install`` of this
checkout into a throw-away virtual environment (its dependencies are this interpreter's, through a .pth line:
bench_diagnose.py's ``installed_script``), and that environment's ``python -c pass`` as the baseline;
``--install current`` times the ``gfxgate`` next to this Python instead (an editable install pays its import hook
on every start). Every command runs once untimed first (filling the rules cache in a private cache folder, as a
user's first run does), then ``--repeat`` rounds, one run of each command per round (load from other processes falls
on all of them alike). Printed per command: the median wall time, the same minus the baseline's median (what gfxgate
itself costs), the median CPU time (user + system of the child: on shared cores the steadier figure) and whether each is within
the budget; a last line states the verdict: PASS or FAIL on wall time and on CPU time, naming the commands over
(on a loaded machine the wall time is mostly waiting for a core, so the CPU verdict is the one that says what the
product costs; the wall verdict is to be judged at a load below the number of cores). ``--against CHECKOUT`` installs another checkout (``git worktree add`` or
``git archive REF | tar -x``) the same way and times its commands in the same rounds: a change's before and after
under the same load. A benchmark, not a test: it reports, it does not fail (exit 0), and the
figures go into benchmarks/README.md with the load average they were taken at.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

BUDGET_MS = {"--help": 100, "scan -t gfx900": 150, "diagnose (1,000 lines)": 150, "doctor --root (captured)": 300}
LOG_LINES = 1000


def _child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def log_of(path: Path, lines: int = LOG_LINES) -> int:
    """A 1,000-line journal of a busy server: bench_diagnose.py's representative log (real lines of four server
    starts among request noise) at this length."""
    from bench_diagnose import build_representative

    return build_representative(path, lines)


def captured_machine(folder: Path) -> Path:
    """The captured Vega 56 of the doctor tests: gfx900, Ollama 0.17.5, an HSA override in a drop-in."""
    from tests.doctor.machines import machine

    return machine(
        folder / "vega56",
        "vega56",
        version="0.17.5",
        dropin='[Service]\nEnvironment="HSA_OVERRIDE_GFX_VERSION=9.0.6"\n',
    )


def measure(
    commands: dict[str, list[str]], env: dict[str, str], repeat: int, envs: dict[str, dict[str, str]] | None = None
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command, after one untimed run of each, round-robin (``envs``: a
    command's own environment instead of ``env``)."""
    envs = envs or {}
    for name, argv in commands.items():
        subprocess.run(argv, capture_output=True, env=envs.get(name, env), check=False)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, argv in commands.items():
            cpu, start = _child_cpu(), time.perf_counter()
            done = subprocess.run(argv, capture_output=True, env=envs.get(name, env), check=False)
            walls[name].append(time.perf_counter() - start)
            cpus[name].append(_child_cpu() - cpu)
            if done.returncode != 0:
                raise SystemExit(f"{name}: exit {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in commands}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("--install", choices=("fresh", "current"), default="fresh")
    parser.add_argument(
        "--against",
        type=Path,
        default=None,
        metavar="CHECKOUT",
        help="also time another checkout's install in the same rounds (before/after a change)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gfxgate-budget-") as tmp:
        folder = Path(tmp)
        if args.install == "fresh":
            from bench_diagnose import installed_script

            script = installed_script(folder)
            python = script.parent / "python"
        else:
            script, python = Path(sys.executable).parent / "gfxgate", Path(sys.executable)
        log = folder / "server.log"
        lines = log_of(log)
        root = captured_machine(folder)
        env = {
            k: v
            for k, v in os.environ.items()
            if k != "PYTHONDONTWRITEBYTECODE" and not k.startswith(("GFXGATE_", "XDG_"))
        }
        env.update({"GFXGATE_CACHE_DIR": str(folder / "cache"), "GFXGATE_NO_PROGRESS": "1"})

        def of(script: Path) -> dict[str, list[str]]:
            return {
                "--help": [str(script), "--help"],
                "scan -t gfx900": [str(script), "scan", "-t", "gfx900"],
                "diagnose (1,000 lines)": [str(script), "diagnose", "--no-upstream", str(log)],
                "doctor --root (captured)": [str(script), "doctor", "--root", str(root), "--format", "md"],
            }

        commands = {"python -c pass": [str(python), "-c", "pass"], **of(script)}
        envs: dict[str, dict[str, str]] = {}
        if args.against is not None:
            from bench_diagnose import installed_script

            (folder / "against").mkdir()
            other = installed_script(folder / "against", args.against.resolve())
            commands.update({f"{name} (against)": argv for name, argv in of(other).items()})
            envs = {
                f"{name} (against)": {**env, "GFXGATE_CACHE_DIR": str(folder / "against" / "cache")}
                for name in of(other)
            }  # each install its own rules cache
        load = os.getloadavg()
        results = measure(commands, env, args.repeat, envs)
    base = results["python -c pass"][0]
    print(
        f"gfxgate speed budget: {args.install} install, {args.repeat} rounds, {os.cpu_count()} cores, "
        f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; the log has {lines:,} lines"
    )
    print()
    print(
        "| command | budget | wall (median) | wall − `python -c pass` | CPU (median) | within (wall) | within (CPU) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, (wall_s, cpu_s) in results.items():
        budget = BUDGET_MS.get(name.removesuffix(" (against)"))
        within = "" if budget is None else _yes(wall_s * 1000 <= budget)
        within_cpu = "" if budget is None else _yes(cpu_s * 1000 <= budget)
        extra = "" if budget is None else f"{(wall_s - base) * 1000:.0f} ms"
        print(
            f"| `{name}` | {f'≤ {budget} ms' if budget else 'baseline'} | {wall_s * 1000:.0f} ms | {extra} | "
            f"{cpu_s * 1000:.0f} ms | {within} | {within_cpu} |"
        )
    print()
    print(verdict(results, load[0]))


def _yes(ok: bool) -> str:
    return "yes" if ok else "**no**"


def verdict(results: dict[str, tuple[float, float]], load: float) -> str:
    """The budget's verdict for this checkout's commands (not ``--against``'s): PASS or FAIL on the median wall time
    and on the median CPU time, each naming the commands over their budget."""
    parts = []
    for label, index in (("wall", 0), ("CPU", 1)):
        over = [name for name, budget in BUDGET_MS.items() if results[name][index] * 1000 > budget]
        parts.append(f"{'FAIL' if over else 'PASS'} on {label} time" + (f" ({', '.join(over)} over)" if over else ""))
    cores = os.cpu_count() or 1
    note = "" if load < cores else f"; load {load:.1f} on {cores} cores: the wall verdict waits on other processes"
    return "Budget verdict: " + ", ".join(parts) + note


if __name__ == "__main__":
    main()
