"""NVIDIA fat binaries: gfxgate's header walk of ``.nv_fatbin`` against NVIDIA's ``cuobjdump --list-elf --list-ptx``,
measured in the same run on the same files (warm page cache: each file is listed once before timing).

    python benchmarks/bench_fatbin.py [--repeat 5]

Inputs (cached like the tests'): Debian sid contrib ``libggml0-backend-cuda`` (575 MB ``libggml-cuda.so``, 145
containers, 1,160 entries) and the cuRAND wheels of CUDA 12 and 13. Needs apt-get, dpkg, and cuobjdump from the
``nvidia-cuda-cuobjdump`` wheel ([test] extra). Prints per file: wall and CPU time of each, bytes gfxgate read, and
whether the two entry lists agree. Target: the 575 MB library in well under a second, reading < 0.1 % of it.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from gfxgate.artifacts.scan import scan_file  # noqa: E402
from tests import nvidia_packages as nv  # noqa: E402


def timed(fn, repeat: int):
    walls, cpus, result = [], [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus), result


def ours(report):
    counters = {"ELF": 0, "PTX": 0}
    out = []
    for code in report.cuda_code:
        kind = {"cubin": "ELF", "ptx": "PTX"}[code.kind]
        counters[kind] += 1
        out.append((kind, counters[kind], code.arch))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    tool = nv.cuobjdump()
    if tool is None:
        sys.exit("bench_fatbin: cuobjdump is not installed (pip install nvidia-cuda-cuobjdump)")
    apt, dpkg = shutil.which("apt-get"), shutil.which("dpkg")
    if not apt or not dpkg:
        sys.exit("bench_fatbin: apt-get and dpkg are needed for the Debian package")
    files = [nv.debian_ggml_cuda(apt, dpkg), nv.curand(nv.CURAND_12), nv.curand(nv.CURAND_13)]
    print("| file | size | entries | gfxgate wall / CPU | read | cuobjdump wall | speed-up | same entries |")
    print("|---|---|---|---|---|---|---|---|")
    for path in files:
        nv.list_entries(tool, path)  # warm the page cache for both
        wall, cpu, report = timed(lambda p=path: scan_file(p), args.repeat)
        ref_wall, _, listed = timed(lambda p=path: nv.list_entries(tool, p), args.repeat)
        print(
            f"| {path.name} | {report.size / 1e6:.0f} MB | {len(report.cuda_code)} | {wall * 1e3:.1f} / {cpu * 1e3:.1f} ms | "
            f"{report.bytes_read / 1e3:.0f} KB ({100 * report.bytes_read / report.size:.3f} %) | {ref_wall * 1e3:.0f} ms | "
            f"{ref_wall / wall:.0f}× | {ours(report) == listed} |"
        )


if __name__ == "__main__":
    main()
