"""Fuzzing at scale (opt-in, not part of the test suite): mutated real inputs, per container format.

    nice -n 19 python benchmarks/fuzz.py --cases 100000 [--format code-object-v5 ...] [--mem-mb 1024]

Every seed is a real file: code objects and a HIP shared object built by clang-19 (tests/artifacts/
artifact_builders.py), the offload bundle clang writes, CCOB v1/v2/v3 (zlib and zstd) around it, gfxgate's own
rules YAML, a worklog line written by the sweep's own writer. Each case is one seed mutated (bit flips, interesting
integers at random offsets, truncation, duplicated/removed chunks, splices with another seed) and fed to the
parser gfxgate uses on it. A *finding* is anything but the documented outcome: an exception escaping the parser,
an "internal error" entry in an artifact report, a case over the per-case time cap (SIGALRM), or MemoryError
under the address-space cap (resource.setrlimit). Per format the script prints the count run, findings, the
slowest case and the process's peak RSS; findings are written to --out for replay.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFF, 1 << 31, 1 << 40)


class CaseTimeout(Exception):
    pass


def _alarm(signum, frame):
    raise CaseTimeout()


def mutate(data: bytes, rng: random.Random, others: list[bytes]) -> bytes:
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 8))):
        op = rng.randrange(7)
        if not out:
            out = bytearray(rng.randbytes(16))
        pos = rng.randrange(len(out))
        if op == 0:  # bit flip
            out[pos] ^= 1 << rng.randrange(8)
        elif op == 1:  # an interesting integer, little-endian, 1-8 bytes
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice(INTERESTING) & ((1 << (8 * width)) - 1)
            out[pos:pos + width] = value.to_bytes(width, "little")
        elif op == 2:  # a small integer near a real one (sizes and offsets)
            width = rng.choice((2, 4, 8))
            old = int.from_bytes(out[pos:pos + width].ljust(width, b"\0"), "little")
            out[pos:pos + width] = ((old + rng.choice((-1, 1, 8, -8, 64, 4096))) % (1 << (8 * width))).to_bytes(width, "little")
        elif op == 3:  # truncate
            del out[rng.randrange(len(out)):]
        elif op == 4:  # duplicate a chunk
            end = min(len(out), pos + rng.randrange(1, 256))
            out[pos:pos] = out[pos:end]
        elif op == 5:  # remove a chunk
            del out[pos:pos + rng.randrange(1, 256)]
        else:  # splice another seed in
            other = rng.choice(others)
            if other:
                start = rng.randrange(len(other))
                out[pos:pos + 64] = other[start:start + rng.randrange(1, 512)]
    return bytes(out)


@dataclass
class Result:
    fmt: str
    cases: int = 0
    findings: list[dict] = field(default_factory=list)
    slowest_s: float = 0.0
    slowest_case: int = -1
    seconds: float = 0.0


# -- targets: bytes -> None, raising only for a finding ------------------------------------------------------


def artifact_target(name: str) -> Callable[[bytes], None]:
    from gfxgate.artifacts.scan import scan_bytes

    def run(data: bytes) -> None:
        report = scan_bytes(data, name, kernels=True)
        for error in report.errors:
            if error.message.startswith("internal error"):
                raise AssertionError(error.message)

    return run


def yaml_target(schema: str) -> Callable[[bytes], None]:
    from gfxgate.datafiles import _parse_yaml
    from gfxgate.errors import RuleError

    path = Path("fuzz.yaml")

    def run(data: bytes) -> None:
        try:
            _parse_yaml(path, data, schema)
        except RuleError:
            pass

    return run


def worklog_target() -> Callable[[bytes], None]:
    from gfxgate.errors import InputError
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render
    from gfxgate.sweep.worklog import Run, Worklog, _parse_line

    path = Path("fuzz.jsonl")

    def run(data: bytes) -> None:
        runs = []
        for number, line in enumerate(data.split(b"\n"), 1):
            if not line.strip():
                continue
            try:
                runs.append(Run(_parse_line(path, number, line), number))
            except InputError:
                return
        report = build_report(Worklog(path, tuple(runs)))
        render(report, "md")
        render(report, "json")

    return run


def diagnose_target() -> Callable[[bytes], None]:
    import io

    from gfxgate.diagnose.analyse import diagnose_log
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.reader import read_stream
    from gfxgate.diagnose.render import render_json, render_md, render_text

    catalogue = default_catalogue()

    def run(data: bytes) -> None:
        diagnosis = diagnose_log(read_stream("fuzz.log", io.BytesIO(data)), catalogue)
        for render in (render_md, render_text, render_json):
            render([diagnosis])

    return run


# -- seeds -------------------------------------------------------------------------------------------------


def seeds(work: Path) -> dict[str, tuple[list[bytes], Callable[[bytes], None]]]:
    import shutil

    from tests.artifacts.artifact_builders import Built, ccob

    clang = shutil.which("clang-19")
    out: dict[str, tuple[list[bytes], Callable[[bytes], None]]] = {}
    if clang:
        built = Built(work, clang)
        for version in (4, 5, 6):
            mcpu = "gfx9-generic" if version == 6 else "gfx900"
            obj = built.code_object(mcpu, f"-mcode-object-version={version}", name=f"v{version}.hsaco").read_bytes()
            out[f"code-object-v{version}"] = ([obj], artifact_target(f"v{version}.hsaco"))
        v2 = _v2_code_object()
        if v2 is not None:
            out["code-object-v2"] = ([v2], artifact_target("v2.hsaco"))
        host = built.hip_so("fuzz-host.so").read_bytes()
        out["host-elf-hip-fatbin"] = ([host], artifact_target("libfuzz.so"))
        packed = built.hip_so("fuzz-host-ccob.so", "--offload-compress").read_bytes()
        out["host-elf-compressed-fatbin"] = ([packed], artifact_target("libfuzzc.so"))
        bundle = built.device_bundle("fuzz-bundle.o").read_bytes()
        out["offload-bundle"] = ([bundle], artifact_target("bundle.o"))
        for version in (1, 2, 3):
            out[f"ccob-v{version}"] = ([ccob(bundle, version, "zlib"), ccob(bundle, version, "zstd")],
                                       artifact_target(f"ccob{version}.bin"))
    else:
        print("fuzz: clang-19 not found; ELF, bundle and CCOB formats skipped", file=sys.stderr)
    rules = ROOT / "rules"
    out["rules-yaml"] = ([(rules / "layers.yaml").read_bytes()] + [p.read_bytes() for p in sorted((rules / "gates").glob("*.yaml"))],
                         None)  # schema chosen per seed below
    out["worklog"] = ([_worklog_seed(work)], worklog_target())
    try:
        from tests.diagnose import logs

        journal = "\n".join(logs.journal(logs.ollama_0_12_3(override="9.0.0"))) + "\n"
        out["diagnose-log"] = ([("\n".join(make()) + "\n").encode() for make in (
            logs.ollama_0_12_3, logs.ollama_0_17_5_crash, logs.ollama_0_12_3_rocblas, logs.ollama_0_32,
            logs.llama_server_hip)] + [journal.encode()], diagnose_target())
    except ImportError as exc:  # gfxgate/diagnose or its log builders absent
        print(f"fuzz: diagnose logs skipped ({exc})", file=sys.stderr)
    return out


def _v2_code_object() -> bytes | None:
    """A real code object v2 (a blit kernel of Debian's libhsa-runtime64, as tests/artifacts uses); None when
    the package cannot be had (it is downloaded once with apt-get and cached)."""
    import shutil

    try:
        from gfxgate.artifacts.scan import scan_file
        from tests.artifacts.artifact_builders import debian_package, shared_object

        apt, dpkg = shutil.which("apt-get"), shutil.which("dpkg-deb")
        lib = shared_object(debian_package("libhsa-runtime64-1", apt, dpkg), "libhsa-runtime64")
    except Exception as exc:  # noqa: BLE001 - an optional seed
        print(f"fuzz: no code object v2 seed ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None
    data = lib.read_bytes()
    for c in scan_file(lib).code_objects:
        if c.code_object_version == 2:
            return data[c.offset:c.offset + c.size]
    return None


def _worklog_seed(work: Path) -> bytes:
    from gfxgate.sweep.worklog import KIND, SCHEMA_VERSION, WorklogWriter, cell_key

    path = work / "seed.jsonl"
    path.unlink(missing_ok=True)
    with WorklogWriter(path) as writer:
        for n, outcome in enumerate(("ok", "crash", "timeout")):
            writer.append({
                "schema_version": SCHEMA_VERSION, "kind": KIND, "run_id": f"r{n}",
                "cell": cell_key("vulkan", "m", n, 0), "endpoint": {"name": "vulkan", "url": "http://127.0.0.1:1"},
                "model": "m", "options": {"num_gpu": n, "num_predict": 8}, "outcome": outcome,
                "started_at": "2026-01-01T00:00:00.000+00:00", "ended_at": "2026-01-01T00:00:01.000+00:00",
                "error": "" if outcome == "ok" else "llama runner process has terminated: signal: segmentation fault",
                "gpu_target": "gfx900", "eval_count": 8, "eval_duration": 1000000,
            })
    return path.read_bytes()


def fuzz(fmt: str, seed_list: list[bytes], target, cases: int, cap_s: float, rng: random.Random, out: Path) -> Result:
    result = Result(fmt)
    targets = [target] * len(seed_list)
    if target is None:  # rules YAML: layers.yaml has its own schema, gates/*.yaml theirs
        targets = [yaml_target("layers")] + [yaml_target("gates")] * (len(seed_list) - 1)
    start = time.perf_counter()
    for case in range(cases):
        index = rng.randrange(len(seed_list))
        data = mutate(seed_list[index], rng, seed_list)
        t0 = time.perf_counter()
        problem = None
        signal.setitimer(signal.ITIMER_REAL, cap_s)
        try:
            targets[index](data)
        except CaseTimeout:
            problem = f"over the {cap_s:g} s per-case cap"
        except MemoryError:
            problem = "MemoryError under the address-space cap"
        except Exception as exc:  # noqa: BLE001 - a finding, recorded with the input
            problem = f"{type(exc).__name__}: {exc}"[:300]
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        spent = time.perf_counter() - t0
        if spent > result.slowest_s:
            result.slowest_s, result.slowest_case = spent, case
        if problem:
            name = f"{fmt}-{case}.bin"
            (out / name).write_bytes(data)
            result.findings.append({"case": case, "problem": problem, "input": name})
        result.cases += 1
    result.seconds = time.perf_counter() - start
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=100_000, help="mutated inputs per format")
    parser.add_argument("--format", dest="formats", action="append", help="only these formats (repeatable)")
    parser.add_argument("--cap-s", type=float, default=2.0, help="per-case time cap (seconds)")
    parser.add_argument("--mem-mb", type=int, default=1024, help="address-space cap of this process (MiB)")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "gfxgate-fuzz")
    parser.add_argument("--json", action="store_true", help="print the results as JSON lines")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGALRM, _alarm)
    work = Path(tempfile.mkdtemp(prefix="gfxgate-fuzz-seeds-"))
    all_seeds = seeds(work)  # built before the cap: clang runs as a child process
    cap = args.mem_mb << 20
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    failed = False
    for fmt, (seed_list, target) in all_seeds.items():
        if args.formats and fmt not in args.formats:
            continue
        rng = random.Random(f"{args.seed}-{fmt}")
        result = fuzz(fmt, seed_list, target, args.cases, args.cap_s, rng, args.out)
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        line = {"format": fmt, "cases": result.cases, "findings": len(result.findings),
                "slowest_ms": round(result.slowest_s * 1000, 1), "slowest_case": result.slowest_case,
                "peak_rss_mb": round(peak_mb, 1), "seconds": round(result.seconds, 1),
                "first_findings": result.findings[:3]}
        print(json.dumps(line) if args.json else
              f"{fmt:22} {result.cases:>7} cases  {len(result.findings):>3} findings  slowest {line['slowest_ms']:>7} ms "
              f"(case {result.slowest_case})  peak RSS {line['peak_rss_mb']} MB  {line['seconds']} s", flush=True)
        for finding in result.findings[:3]:
            print(f"    {finding}", flush=True)
        failed |= bool(result.findings)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
