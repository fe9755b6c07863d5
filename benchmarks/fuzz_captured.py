"""Coverage-guided fuzzing of what ``doctor --root`` and ``doctor --collect`` read and write (issue 41; opt-in, not
part of the test suite): atheris (libFuzzer's coverage guidance over Python bytecode) on three targets.

    pip install atheris   # a wheel for CPython 3.11 on x86-64 Linux
    nice -n 19 python benchmarks/fuzz_captured.py --target reader --seconds 120
    nice -n 19 python benchmarks/fuzz_captured.py --all --seconds 120    # each target in its own process

* ``reader``: a captured tree built from the input (files, links — relative, absolute, into ``..``, at a canary
  file outside the root —, FIFOs, folders at the paths doctor reads), then the whole host layer over it (sysfs
  GPUs, installs, the unit, the running server, device access). A finding: any exception, or the canary's text in
  anything the reader read (a read outside the root).
* ``unit``: the input as a unit file and an EnvironmentFile; a finding: any exception, or a setting of a variable
  that is not listed.
* ``collect``: the allow-list writer: what ``--collect`` keeps of the unit file and the EnvironmentFile. A finding:
  a kept line that is not one of the allowed forms (a section, ``#``, a listed ``NAME=VALUE``, User=, Group=,
  SupplementaryGroups=, ExecStart= reduced, EnvironmentFile=), a non-listed assignment in a kept ``Environment=``
  line, a kept file that does not read back to the same GPU settings, or an archive member name with ``..``.

libFuzzer stops at the first finding (its input is written as ``crash-*`` in the working folder) or after
``--seconds``; the script prints, per target, the runs, the coverage (libFuzzer's ``cov``/``ft``) and whether it found
anything. The figures of a run are in docs/hostile-input.md.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATHS = (
    "sys/class/kfd/kfd/topology/nodes/1/properties",
    "sys/class/kfd/kfd/topology/nodes/1",
    "sys/class/drm/renderD128/device/vendor",
    "sys/class/drm/renderD128/device/mem_info_vram_total",
    "sys/class/drm/renderD128",
    "etc/group",
    "etc/passwd",
    ".gfxgate-doctor/stat.json",
    ".gfxgate-doctor/logs/0-x",
    "etc/systemd/system/ollama.service",
    "etc/systemd/system/ollama.service.d/a.conf",
    "etc/ollama.env",
    "proc/7/comm",
    "proc/7/cmdline",
    "proc/7/environ",
    "usr/local/bin/ollama",
    "usr/local/lib/ollama/rocm",
    "usr/local/lib/ollama/rocm/libggml-hip.so",
    "usr/local/lib/ollama/rocm/rocblas/library",
    "usr/share/libdrm/amdgpu.ids",
    "opt/rocm/.info/version",
    "dev/kfd",
    "etc",
    "usr",
    "proc",
)
CANARY = b"CANARY-outside-the-root"


def _tree(data: bytes, top: Path) -> Path:
    """A captured tree under ``top/root`` from ``data``: records of (op, path, target/payload)."""
    root = top / "root"
    root.mkdir()
    (top / "outside").mkdir()
    (top / "outside/canary").write_bytes(CANARY)
    links = [
        "/",
        "..",
        "../..",
        "../../../outside/canary",
        str(top / "outside/canary"),
        "/etc/passwd",
        "/dev/zero",
        "loop",
        ".",
        "/sys/class/kfd/kfd/topology/nodes/1/properties",
        "../../../../../../outside",
    ]
    pos = 0
    while pos + 2 <= len(data) and pos < 4096:
        op, which = data[pos] % 5, data[pos + 1] % len(PATHS)
        size = data[pos + 2] if pos + 2 < len(data) else 0
        payload = data[pos + 3 : pos + 3 + size]
        pos += 3 + size
        path = root / PATHS[which]
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if os.path.lexists(path) and not (path.is_dir() and not path.is_symlink()):
                path.unlink()  # a file, a link or a FIFO (writing into a FIFO would wait for a reader)
            if op == 0:
                path.write_bytes(payload)
            elif op == 1:
                path.symlink_to(links[(payload[0] if payload else 0) % len(links)])
            elif op == 2:
                os.mkfifo(path)
            elif op == 3:
                path.mkdir(exist_ok=True)
            else:
                path.write_bytes(payload * 64)
        except OSError:
            continue
    return root


def reader(data: bytes) -> None:
    from gfxgate.host import access, install, sysfs, units
    from gfxgate.host.rootfs import RootFS, gpu_code

    with tempfile.TemporaryDirectory(prefix="fz-") as tmp:
        root = _tree(data, Path(tmp))
        fs = RootFS(root)
        gpus = sysfs.gpus(fs)
        installs = install.find(fs)
        unit = units.read_unit(fs)
        units.process_environment(fs)
        nodes = access.nodes(fs, [g.render_node for g in gpus if g.render_node])
        access.user_access(fs, unit.user if unit else "ollama", "service", nodes)
        fs.captured_logs()
        code = gpu_code(fs, installs.gpu_code_files())
        for blob in list(fs._cache.values()) + list(fs.read.values()):
            if CANARY in blob:
                raise AssertionError("a read outside the root")
        base = os.path.realpath(root)
        for real in code:
            if not str(real).startswith(base + "/"):
                raise AssertionError(f"GPU code outside the root: {real}")


def _unit_fs(data: bytes):
    from gfxgate.host.rootfs import RootFS

    text, _, envfile = data.partition(b"\0")
    tmp = tempfile.mkdtemp(prefix="fz-")
    root = Path(tmp)
    (root / "etc/systemd/system").mkdir(parents=True)
    (root / "etc/systemd/system/ollama.service").write_bytes(text)
    (root / "etc/ollama.env").write_bytes(envfile)
    return tmp, RootFS(root)


def unit(data: bytes) -> None:
    from gfxgate.host import units

    tmp, fs = _unit_fs(data)
    try:
        found = units.read_unit(fs)
        for setting in found.environment if found else ():
            if not units.listed(setting.name):
                raise AssertionError(f"a setting of {setting.name}")
    finally:
        shutil.rmtree(tmp)


_ALLOWED = re.compile(
    r"(|#|\[(Unit|Service|Install)\]|# \(gfxgate: withheld\)|Environment=.*|EnvironmentFile=.*|User=.*|"
    r"Group=.*|SupplementaryGroups=.*|ExecStart=.*)",
    re.S,
)


def collect(data: bytes) -> None:
    from gfxgate.doctor.collect import member
    from gfxgate.host import units
    from gfxgate.host.rootfs import RootFS

    tmp, fs = _unit_fs(data)
    try:
        first = units.read_unit(fs)
        unit_file = "/etc/systemd/system/ollama.service"
        kept = fs.read.get(unit_file, b"").decode("utf-8", "replace")
        for line in kept.split("\n"):
            if not _ALLOWED.fullmatch(line):
                raise AssertionError(f"kept line {line[:80]!r}")
            if line.startswith("Environment="):
                words, bad = units.split_words(line.removeprefix("Environment="))
                if bad or any(not units.listed(w.partition("=")[0]) for w in words):
                    raise AssertionError(f"kept assignment {line[:80]!r}")
        env_kept = fs.read.get("/etc/ollama.env")
        if env_kept is not None:
            for _, name, _, _ in units.env_file_assignments(env_kept.decode("utf-8", "replace")):
                if not units.listed(name):
                    raise AssertionError(f"kept EnvironmentFile assignment of {name[:40]!r}")
        again_root = Path(tmp) / "again"
        for path, blob in fs.read.items():
            target = again_root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob)
            if member(path) is None or ".." in (member(path) or "").split("/"):
                raise AssertionError(f"member name of {path!r}")
        if first is not None and (again_root / unit_file.lstrip("/")).exists():
            second = units.read_unit(RootFS(again_root))
            one = {s.name: s.value for s in first.environment}
            two = {s.name: s.value for s in second.environment} if second else {}
            if one != two:
                raise AssertionError(f"kept files read back as {two} instead of {one}")
    finally:
        shutil.rmtree(tmp)


TARGETS = {"reader": reader, "unit": unit, "collect": collect}
SEEDS = {
    "unit": [
        b"[Service]\nEnvironment=HSA_OVERRIDE_GFX_VERSION=10.3.0 OLLAMA_API_KEY=x \\\n  HIP_VISIBLE_DEVICES=0\n"
        b"EnvironmentFile=-/etc/ollama.env\nUser=ollama\nExecStart=/usr/bin/env A=1 /usr/bin/ollama serve\n"
        b"\0HSA_OVERRIDE_GFX_VERSION=\"9.0.0\"\nKEY='a\nb'\n# c \\\nX=1\n"
    ],
    "reader": [bytes([0, 0, 20]) + b"gfx_target_version 9" + bytes([1, 5, 1, 3, 0, 7, 4]) + b"x:x:" + bytes([2, 9, 0])],
}
SEEDS["collect"] = SEEDS["unit"]


def run_one(name: str, seconds: int) -> dict:
    """One target in a child process under libFuzzer for ``seconds``: its runs, coverage and outcome."""
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as work:
        corpus = Path(work) / "corpus"
        corpus.mkdir()
        for n, seed in enumerate(SEEDS[name]):
            (corpus / f"seed{n}").write_bytes(seed)
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                name,
                f"-max_total_time={seconds}",
                "-timeout=5",
                "-rss_limit_mb=1024",
                "-print_final_stats=1",
                str(corpus),
            ],
            cwd=work,
            capture_output=True,
            text=True,
        )
        log = done.stderr
        crashes = sorted(p.name for p in Path(work).glob("crash-*")) + sorted(
            p.name for p in Path(work).glob("timeout-*")
        )
        if crashes:
            keep = ROOT / "benchmarks" / f"fuzz-findings-{name}"
            keep.mkdir(exist_ok=True)
            for c in crashes:
                shutil.copy(Path(work) / c, keep / c)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    cov = re.findall(r"cov: (\d+) ft: (\d+)", log)
    return {
        "target": name,
        "seconds": seconds,
        "runs": int(runs[-1]) if runs else None,
        "cov": int(cov[-1][0]) if cov else None,
        "ft": int(cov[-1][1]) if cov else None,
        "findings": crashes,
        "rc": done.returncode,
        "tail": "" if not crashes else "\n".join(log.splitlines()[-25:]),
    }


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        import atheris

        name = sys.argv[2]
        with atheris.instrument_imports(include=["gfxgate"]):
            import gfxgate.doctor.collect  # noqa: F401
            import gfxgate.host.access  # noqa: F401
            import gfxgate.host.install  # noqa: F401
            import gfxgate.host.rootfs  # noqa: F401
            import gfxgate.host.sysfs  # noqa: F401
            import gfxgate.host.units  # noqa: F401
        atheris.Setup([sys.argv[0], *sys.argv[3:]], TARGETS[name])
        atheris.Fuzz()
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", action="append", choices=sorted(TARGETS))
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    names = sorted(TARGETS) if args.all or not args.target else args.target
    for name in names:
        result = run_one(name, args.seconds)
        print(
            f"{name:8} {result['seconds']} s: {result['runs']} runs, cov {result['cov']}, ft {result['ft']}, "
            f"findings {len(result['findings'])}" + (f"\n{result['tail']}" if result["tail"] else ""),
            flush=True,
        )


if __name__ == "__main__":
    main()
