"""Benchmark: `gfxgate diagnose` on 200,000-line server logs vs. `rg -c -f` of the catalogue's own patterns.

Two logs, each read by both tools in the same run (alternately, medians of 5, the load average printed):

* representative (issue 31: real lines among server noise): one busy server's journal, four server starts with
  the test fixtures' runs (v0.12.3 CPU fallback, v0.17.5 Vulkan compute crash with a Go stack, v0.32.15 dropped
  devices, llama-server's HIP crash: two crashes) and, between them, what a busy Ollama writes per request with
  OLLAMA_DEBUG=1 (the GIN access line, the scheduler's debug lines of v0.12.3);
* crash loop (adversarial): the fixture blocks over and over with 160 lines of noise after each: 843 runs, 562 crash.

* gfxgate whole process: `python -m gfxgate diagnose --no-upstream --format json LOG`, with a bytecode cache;
* ripgrep: `rg -c -f PATTERNS LOG` with the catalogue's own patterns (group names dropped: Rust's regex refuses
  a name used twice in one alternation), whole process — the issue's yardstick; it only counts matching lines;
* also: gfxgate in-process (read, match, analyse) and `grep -E -c -f` of the patterns as POSIX ERE.

    python benchmarks/bench_diagnose.py [LINES]
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

    blocks = [logs.journal(logs.ollama_0_12_3()), logs.journal(logs.ollama_0_17_5_crash()),
              logs.journal(logs.ollama_0_32()), logs.llama_server_hip(crash=True)]
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
            stamp + f'time={t} level=DEBUG source=sched.go:580 msg="evaluating already loaded" model=/var/lib/ollama/blobs/sha256-aa',
            stamp + f'time={t} level=DEBUG source=server.go:1388 msg="completion request" images=0 prompt={100 + i % 3000} format=""',
            stamp + f'time={t} level=DEBUG source=sched.go:490 msg="context for request finished"',
            stamp + f'[GIN] 2025/10/05 - 11:{(i // 60) % 60:02d}:{s:02d} | 200 | {1 + i % 9}.{ms:03d}{i % 1000:03d}s |  192.168.1.{10 + i % 40} | POST     "/api/chat"',
        ]
    return out


def build_representative(path: Path, lines: int) -> int:
    """The representative case (issue 31: real lines among server noise): one busy server's journal of ``lines``
    lines, four server starts with their runs (the v0.12.3 CPU fallback, the v0.17.5 Vulkan compute crash, the
    v0.32.15 dropped devices, llama-server's HIP crash): two crashes, the rest request noise."""
    from tests.diagnose import logs

    blocks = [logs.journal(logs.ollama_0_12_3()), logs.journal(logs.ollama_0_17_5_crash()),
              logs.journal(logs.ollama_0_32()), logs.journal(logs.llama_server_hip(crash=True))]
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
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_path
    from gfxgate.gate.workarounds import default_workarounds

    catalogue, workarounds = default_catalogue(), default_workarounds()
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
        proc = subprocess.run([grep, "-E", "-c", "-f", patterns, str(path)], capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        count = int(proc.stdout.strip() or 0)
    Path(patterns).unlink()
    return statistics.median(times), count


def whole_process(path: Path, rg_patterns: str, repeat: int = 5) -> tuple[float, float, int]:
    """Median wall time of `python -m gfxgate diagnose --no-upstream --format json LOG` and of `rg -c -f PATTERNS LOG`,
    run alternately (the same load for both), after one warm-up run of each. gfxgate runs with a bytecode cache (in a
    temporary PYTHONPYCACHEPREFIX, PYTHONDONTWRITEBYTECODE dropped), as a pip-installed package has one."""
    import os

    rg = shutil.which("rg")
    with tempfile.TemporaryDirectory() as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        ours = [sys.executable, "-m", "gfxgate", "diagnose", "--no-upstream", "--format", "json", str(path)]
        theirs = [rg, "-c", "-f", rg_patterns, str(path)]
        subprocess.run(ours, check=True, capture_output=True, env=env)
        count = int(subprocess.run(theirs, capture_output=True, text=True, check=False).stdout.strip() or 0)
        times: dict[str, list[float]] = {"gfxgate": [], "rg": []}
        for _ in range(repeat):
            for name, argv in (("gfxgate", ours), ("rg", theirs)):
                start = time.perf_counter()
                subprocess.run(argv, capture_output=True, env=env, check=name == "gfxgate")
                times[name].append(time.perf_counter() - start)
    return statistics.median(times["gfxgate"]), statistics.median(times["rg"]), count


def rg_pattern_file(folder: Path) -> Path:
    from gfxgate.diagnose.catalogue import default_catalogue

    path = folder / "patterns.rg"
    path.write_text("\n".join(re.sub(r"\(\?P<\w+>", "(", m.pattern) for m in default_catalogue().messages) + "\n")
    return path


def main() -> None:
    import os

    lines = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        patterns = rg_pattern_file(folder)
        cases = (("representative (4 server starts, 2 crashes, request noise)", build_representative),
                 ("crash loop (adversarial: 843 runs, 562 crash)", build_log))
        for title, build in cases:
            path = folder / "server.log"
            n = build(path, lines)
            size = path.stat().st_size
            seconds, recognised, findings = in_process(path)
            if shutil.which("rg") is None:
                print("rg -c -f: ripgrep is not installed (apt-get install ripgrep)")
                return
            ours, theirs, count = whole_process(path, str(patterns))
            grep_s, grep_count = grep_baseline(path)
            load = os.getloadavg()
            print(f"== {title}: {n} lines, {size / 1e6:.2f} MB, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
            print(f"gfxgate diagnose whole process: {ours * 1000:.0f} ms ({recognised} lines recognised, {findings} findings)")
            print(f"rg -c -f (the catalogue's patterns): {theirs * 1000:.0f} ms ({count} matching lines, no facts or verdicts)")
            print(f"ratio whole process / rg: {ours / theirs:.2f}x")
            print(f"gfxgate diagnose in-process: {seconds * 1000:.0f} ms; grep -E -c -f: {grep_s * 1000:.0f} ms ({grep_count} lines)")


if __name__ == "__main__":
    main()
