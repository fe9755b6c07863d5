"""Benchmark: `gfxgate diagnose` on 200,000-line server logs vs. `rg -c -f` of the catalogue's own patterns.

Two logs, each read by both tools in the same run (alternately, medians of 5, the load average printed):

* representative (issue 31: real lines among server noise): one busy server's journal, four server starts with
  the test fixtures' runs (v0.12.3 CPU fallback, v0.17.5 Vulkan compute crash with a Go stack, v0.32.15 dropped
  devices, llama-server's HIP crash: two crashes) and, between them, what a busy Ollama writes per request with
  OLLAMA_DEBUG=1 (the GIN access line, the scheduler's debug lines of v0.12.3);
* crash loop (adversarial): the fixture blocks over and over with 160 lines of noise after each: 843 runs, 562 crash.

* gfxgate whole process: the `gfxgate` console script of a regular (non-editable) install of this checkout, as a
  user has it (`pip install` into a fresh virtual environment, bytecode compiled by pip; the dependencies are this
  interpreter's, through a .pth line), `gfxgate diagnose --no-upstream --format json LOG`; its rules cache is warm
  (the first run fills it, as a user's first run does);
* ripgrep: `rg -c -f PATTERNS LOG` with the catalogue's own patterns (group names dropped: Rust's regex refuses
  a name used twice in one alternation), whole process — the issue's yardstick; it only counts matching lines;
* for both: the median wall time and the median CPU time (user + system, from the children's rusage) — on shared
  cores the CPU time is the steadier figure;
* also: gfxgate in-process (read, match, analyse) and `grep -E -c -f` of the patterns as POSIX ERE.

    python benchmarks/bench_diagnose.py [LINES] [--sizes 50000,500000,1000000]

Also, first: what the console script costs before it reads a log (the interpreter, `import re, click`, a diagnosis
of an empty log), and with --sizes the representative log at other lengths.
"""

from __future__ import annotations

import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def to_ere(pattern: str) -> str:
    """An RE2 pattern of the catalogue as POSIX ERE for grep -E (same lines match for these patterns)."""
    out = re.sub(r"\(\?P<\w+>", "(", pattern)
    out = out.replace("(?:", "(").replace("+?", "+").replace("*?", "*")
    out = out.replace(r"\d", "[0-9]").replace(r"\S", "[^[:space:]]").replace(r"\s", "[[:space:]]").replace(r"\b", "")
    return out


def build_log(path: Path, lines: int) -> int:
    """The crash loop (adversarial): the fixture blocks over and over, each followed by 160 lines of request and
    loader noise, so about two thirds of the runs crash."""
    from tests.diagnose import logs

    blocks = [
        logs.journal(logs.ollama_0_12_3()),
        logs.journal(logs.ollama_0_17_5_crash()),
        logs.journal(logs.ollama_0_32()),
        logs.llama_server_hip(crash=True),
    ]
    filler = [
        'Oct 05 10:02:00 vega ollama[812]: [GIN] 2025/10/05 - 10:02:00 | 200 |  1.234567s |       127.0.0.1 | POST     "/api/chat"',
        'Oct 05 10:02:00 vega ollama[812]: time=2025-10-05T10:02:00.000+02:00 level=INFO source=server.go:624 msg="llama runner started" model=/m',
        "Oct 05 10:02:00 vega ollama[812]: llama_model_loader: - kv  19:                 general.file_type u32              = 15",
        "Oct 05 10:02:00 vega ollama[812]: print_info: n_embd           = 2048",
    ]
    out, i = [], 0
    while len(out) < lines:
        out += blocks[i % len(blocks)]
        out += filler * 40
        i += 1
    out = out[:lines]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return len(out)


def request_noise(n: int) -> list[str]:
    """What a busy Ollama server (OLLAMA_DEBUG=1) writes per request, in journal form: the GIN access line and the
    scheduler's debug lines (printing code of v0.12.3: server/sched.go:580, llm/server.go:1388, server/sched.go:490),
    each request with its own time, latency, client port and prompt size."""
    out = []
    for i in range(n):
        s, ms = i % 60, (i * 7919) % 1000
        stamp = f"Oct 05 11:{(i // 60) % 60:02d}:{s:02d} vega ollama[812]: "
        t = f"2025-10-05T11:{(i // 60) % 60:02d}:{s:02d}.{ms:03d}+02:00"
        out += [
            stamp
            + f'time={t} level=DEBUG source=sched.go:580 msg="evaluating already loaded" model=/var/lib/ollama/blobs/sha256-aa',
            stamp
            + f'time={t} level=DEBUG source=server.go:1388 msg="completion request" images=0 prompt={100 + i % 3000} format=""',
            stamp + f'time={t} level=DEBUG source=sched.go:490 msg="context for request finished"',
            stamp
            + f'[GIN] 2025/10/05 - 11:{(i // 60) % 60:02d}:{s:02d} | 200 | {1 + i % 9}.{ms:03d}{i % 1000:03d}s |  192.168.1.{10 + i % 40} | POST     "/api/chat"',
        ]
    return out


def build_representative(path: Path, lines: int) -> int:
    """The representative case (issue 31: real lines among server noise): one busy server's journal of ``lines``
    lines, four server starts with their runs (the v0.12.3 CPU fallback, the v0.17.5 Vulkan compute crash, the
    v0.32.15 dropped devices, llama-server's HIP crash): two crashes, the rest request noise."""
    from tests.diagnose import logs

    blocks = [
        logs.journal(logs.ollama_0_12_3()),
        logs.journal(logs.ollama_0_17_5_crash()),
        logs.journal(logs.ollama_0_32()),
        logs.journal(logs.llama_server_hip(crash=True)),
    ]
    real = sum(map(len, blocks))
    per = max(0, (lines - real) // len(blocks) // 4)
    out: list[str] = []
    for block in blocks:
        out += block
        out += request_noise(per)
    out += request_noise((lines - len(out) + 3) // 4)
    out = out[:lines]
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return len(out)


def in_process(path: Path, repeat: int = 5) -> tuple[float, int, int]:
    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue, default_workaround_records
    from gfxgate.diagnose.reader import read_path

    catalogue, workarounds = default_catalogue(), default_workaround_records()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        d = diagnose_log(read_path(str(path)), catalogue, workarounds=workarounds)
        times.append(time.perf_counter() - start)
    return statistics.median(times), d.recognised, len(d.findings)


def grep_baseline(path: Path, repeat: int = 5) -> tuple[float, int]:
    from gfxgate.diagnose.catalogue import default_catalogue

    grep = shutil.which("grep")
    with tempfile.NamedTemporaryFile("w", suffix=".ere", delete=False) as handle:
        handle.write("\n".join(to_ere(m.pattern) for m in default_catalogue().messages) + "\n")
        patterns = handle.name
    times, count = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(
            [grep, "-E", "-c", "-f", patterns, str(path)], capture_output=True, text=True, check=False
        )
        times.append(time.perf_counter() - start)
        count = int(proc.stdout.strip() or 0)
    Path(patterns).unlink()
    return statistics.median(times), count


def installed_script(folder: Path, root: Path = ROOT) -> Path:
    """gfxgate as a user installs it: this checkout's package (pyproject.toml, README.md, gfxgate/, rules/ copied, so
    the build writes nothing into the checkout) installed regularly, not editable, into a new virtual environment
    whose dependencies are this interpreter's site-packages (a .pth line); its `gfxgate` console script. ``root``:
    another checkout to install instead (bench_budget.py --against)."""
    import site
    import sysconfig

    source = folder / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, source / name)
    for name in ("gfxgate", "rules"):
        shutil.copytree(root / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = [p for p in dict.fromkeys(site.getsitepackages() + [sysconfig.get_paths()["purelib"]]) if Path(p).is_dir()]
    Path(purelib, "_bench_dependencies.pth").write_text("\n".join(ours) + "\n", encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps", str(source)],
        check=True,
        capture_output=True,
    )
    script = venv / "bin" / "gfxgate"
    if not script.is_file():
        raise SystemExit(f"pip installed no console script at {script}")
    return script


def _child_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whole_process(script: Path, path: Path, rg_patterns: str, repeat: int = 9) -> dict[str, tuple[float, float]]:
    """Median wall and CPU time of the installed `gfxgate diagnose --no-upstream --format json LOG` and of
    `rg -c -f PATTERNS LOG`, run alternately (the same load for both), after one warm-up run of each (which also
    fills gfxgate's rules cache, in a temporary cache folder)."""
    import os

    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["GFXGATE_CACHE_DIR"] = cache
        commands = {
            "gfxgate": [str(script), "diagnose", "--no-upstream", "--format", "json", str(path)],
            "rg": [rg, "-c", "-f", rg_patterns, str(path)],
        }
        for argv in commands.values():
            subprocess.run(argv, capture_output=True, env=env, check=False)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        cpus: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, argv in commands.items():
                cpu, start = _child_cpu(), time.perf_counter()
                subprocess.run(argv, capture_output=True, env=env, check=name == "gfxgate")
                walls[name].append(time.perf_counter() - start)
                cpus[name].append(_child_cpu() - cpu)
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in commands}


def rg_count(path: Path, rg_patterns: str) -> int:
    out = subprocess.run(
        [shutil.which("rg"), "-c", "-f", rg_patterns, str(path)], capture_output=True, text=True, check=False
    )
    return int(out.stdout.strip() or 0)


def rg_pattern_file(folder: Path) -> Path:
    from gfxgate.diagnose.catalogue import default_catalogue

    path = folder / "patterns.rg"
    path.write_text("\n".join(re.sub(r"\(\?P<\w+>", "(", m.pattern) for m in default_catalogue().messages) + "\n")
    return path


def floor(script: Path, folder: Path, repeat: int = 11) -> dict[str, float]:
    """What every run of the console script pays before it reads a log, measured with the same interpreter: the
    interpreter alone, the interpreter with what the console script (pip's wrapper: ``import re``) and the command
    line (click) import, and ``gfxgate diagnose`` of an empty log (every import and start-up cache of a diagnosis,
    nothing read). Median wall times."""
    import os

    python = script.parent / "python"
    empty = folder / "empty.log"
    empty.write_bytes(b"")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["GFXGATE_CACHE_DIR"] = cache
        commands = {
            "python -c pass": [str(python), "-c", "pass"],
            "python -c 'import re, click'": [str(python), "-c", "import re, click"],
            "gfxgate diagnose EMPTY": [str(script), "diagnose", "--no-upstream", "--format", "json", str(empty)],
        }
        for argv in commands.values():
            subprocess.run(argv, capture_output=True, env=env, check=False)
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(repeat):
            for name, argv in commands.items():
                start = time.perf_counter()
                subprocess.run(argv, capture_output=True, env=env, check=False)
                walls[name].append(time.perf_counter() - start)
    return {name: statistics.median(w) for name, w in walls.items()}


def main() -> None:
    import argparse
    import os

    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("lines", nargs="?", type=int, default=200_000)
    parser.add_argument(
        "--sizes",
        default="",
        help="also the representative log at these line counts (comma-separated): "
        "where gfxgate's fixed start-up stops mattering",
    )
    args = parser.parse_args()
    lines = args.lines
    if shutil.which("rg") is None:
        print("rg -c -f: ripgrep is not installed (apt-get install ripgrep)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        patterns = rg_pattern_file(folder)
        script = installed_script(folder)
        fixed = floor(script, folder)
        print(
            "== before a log is read (median wall): "
            + "; ".join(f"{name} {t * 1000:.0f} ms" for name, t in fixed.items())
        )
        cases = [
            ("representative (4 server starts, 2 crashes, request noise)", build_representative, lines),
            ("crash loop (adversarial: 843 runs, 562 crash)", build_log, lines),
        ]
        cases += [
            (f"representative at {n:,} lines", build_representative, n)
            for n in map(int, filter(None, args.sizes.split(",")))
        ]
        for title, build, count in cases:
            path = folder / "server.log"
            n = build(path, count)
            size = path.stat().st_size
            seconds, recognised, findings = in_process(path)
            before = os.getloadavg()
            times = whole_process(script, path, str(patterns))
            after = os.getloadavg()
            grep_s, grep_count = grep_baseline(path)
            (ours, ours_cpu), (theirs, theirs_cpu) = times["gfxgate"], times["rg"]
            print(
                f"== {title}: {n} lines, {size / 1e6:.2f} MB, load average {before[0]:.1f} before, {after[0]:.1f} after"
            )
            print(
                f"gfxgate diagnose, installed script, whole process: {ours * 1000:.0f} ms wall, {ours_cpu * 1000:.0f} ms CPU "
                f"({recognised} lines recognised, {findings} findings)"
            )
            print(
                f"rg -c -f (the catalogue's patterns): {theirs * 1000:.0f} ms wall, {theirs_cpu * 1000:.0f} ms CPU "
                f"({rg_count(path, str(patterns))} matching lines, no facts or verdicts)"
            )
            print(f"ratio gfxgate / rg: {ours / theirs:.2f}x wall, {ours_cpu / max(theirs_cpu, 1e-9):.2f}x CPU")
            print(
                f"gfxgate diagnose in-process: {seconds * 1000:.0f} ms; grep -E -c -f: {grep_s * 1000:.0f} ms ({grep_count} lines)"
            )


if __name__ == "__main__":
    main()
