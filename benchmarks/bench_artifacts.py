"""Benchmarks of the artifact scanner against the naive baselines, measured in the same run.

    python benchmarks/bench_artifacts.py [--files 1000] [--repeat 5] [--skip-rocsparse]

1. Debian's librocsparse0 (.so of 1.3 GB, bundles for gfx803…gfx1030): gfxgate's header walk vs a
   full-read regex over the file (what ``strings | grep`` does). Targets: reads < 1 % of the file,
   ≥ 100× faster.
2. A folder of ~1,000 real code objects (clang-19, rocBLAS-style names): one ``scan_paths`` vs
   ``llvm-readelf-19 -h`` per file. Target: ≥ 20× faster.

Needs clang-19, llvm-readelf-19, apt-get and dpkg; the package is cached like the tests' (user cache dir).
Timings are warm page cache (each input is read once before timing).
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from gfxgate.artifacts.scan import scan_file, scan_paths  # noqa: E402
from tests.artifacts.artifact_builders import Built, debian_package, shared_object  # noqa: E402

ROCSPARSE_IDS = re.compile(rb"hipv4-amdgcn-amd-amdhsa--gfx[0-9a-f]+(?::xnack[+-])?")


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        sys.exit(f"bench_artifacts: {name} is not installed")
    return path


def timed(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def full_read_regex(path: Path) -> set[bytes]:
    with open(path, "rb") as handle:
        data = handle.read()
    return set(ROCSPARSE_IDS.findall(data))


def bench_rocsparse(repeat: int) -> list[tuple[str, str, str]]:
    so = shared_object(debian_package("librocsparse0", tool("apt-get"), tool("dpkg")), "librocsparse")
    full_read_regex(so)  # warm the page cache for both contenders
    ours_t, report = timed(lambda: scan_file(so), repeat)
    base_t, ids = timed(lambda: full_read_regex(so), max(1, repeat // 2))
    ours_targets = list(report.target_counts())  # in generation order
    base_targets = {i.decode().split("--")[1] for i in ids}
    assert set(ours_targets) == base_targets, (ours_targets, base_targets)
    frac = report.bytes_read / report.size
    return [
        (
            "librocsparse.so (%.2f GB), list bundle targets" % (report.size / 1e9),
            "gfxgate header walk",
            f"{ours_t * 1000:.1f} ms, {report.bytes_read / 1e6:.2f} MB read ({frac:.3%})",
        ),
        ("", "full read + regex (baseline)", f"{base_t * 1000:.0f} ms, {report.size / 1e6:.0f} MB read"),
        ("", "speed-up", f"{base_t / ours_t:.0f}× (targets: {', '.join(ours_targets)})"),
    ]


def bench_folder(n: int, repeat: int) -> list[tuple[str, str, str]]:
    readelf = tool("llvm-readelf-19")
    with tempfile.TemporaryDirectory(prefix="gfxgate-bench-") as tmp:
        tmp = Path(tmp)
        built = Built(tmp, tool("clang-19"))
        sources = {t: built.code_object(t) for t in ("gfx803", "gfx900", "gfx906:xnack-", "gfx90a:xnack+", "gfx1030")}
        lib = tmp / "library"
        lib.mkdir()
        names = list(sources)
        for i in range(n):
            target = names[i % len(names)]
            shutil.copy(sources[target], lib / f"Kernels.so-{i:03d}-{target.replace(':', '-')}.hsaco")
        files = sorted(lib.iterdir())
        scan_paths([lib])  # warm
        ours_t, report = timed(lambda: scan_paths([lib]), repeat)
        assert len(report.files) == n and sum(len(f.code_objects) for f in report.files) == n

        def readelf_each():
            for f in files:
                subprocess.run([readelf, "-h", str(f)], check=True, stdout=subprocess.DEVNULL)

        base_t, _ = timed(readelf_each, 1)
        cli_t, _ = timed(
            lambda: subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "gfxgate",
                    "artifacts",
                    str(lib),
                    "--format",
                    "json",
                    "-o",
                    str(tmp / "out.json"),
                ],
                check=True,
                stderr=subprocess.DEVNULL,
                cwd=ROOT,
            ),
            repeat,
        )
    return [
        (f"folder of {n} code objects", "gfxgate scan_paths (in process)", f"{ours_t * 1000:.0f} ms"),
        ("", "gfxgate CLI (python start-up included)", f"{cli_t * 1000:.0f} ms"),
        ("", "llvm-readelf-19 -h per file (baseline)", f"{base_t * 1000:.0f} ms"),
        ("", "speed-up", f"{base_t / ours_t:.0f}× in process, {base_t / cli_t:.0f}× via the CLI"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-rocsparse", action="store_true")
    args = parser.parse_args()
    rows = [] if args.skip_rocsparse else bench_rocsparse(args.repeat)
    rows += bench_folder(args.files, args.repeat)
    print("| input | method | result |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
