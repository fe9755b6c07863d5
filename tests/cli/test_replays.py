"""Issue 13, "Why" items 1–6: every reproduction replayed through the installed console script.

Each replay asserts what the issue's "Done when" asks: the documented exit code (README exit-code table), one
error line (``gfxgate: …``, at most a ``  hint:`` line after it) and no traceback, under 5 s of CPU time of the
gfxgate process and the processes it waited for (the issue's "5 s" as CPU time, which a busy machine does not
stretch; a run that waits instead of computing is stopped by a hang guard and fails: see ``replay``),
a peak RSS under 512 MB (``os.wait4`` on the gfxgate process itself: its own ``ru_maxrss``), and nothing in its
working folder changed except the named output (every entry's type, inode, mode, size, mtime, link target and
content hash compared before and after); ``/dev/null`` and ``/dev/full`` are checked to be the same devices
after each replay (the device cases write to private nodes with the same numbers, never the real ones).
``artifacts`` runs at the default ``-j`` and at its maximum (64).

With ``GFXGATE_ISSUE13_FIGURES=FILE`` each replay appends its figures (JSON lines) to FILE.

Where a reproduction is proven elsewhere in more depth, the test here replays the same input and the other test
is named in its docstring. Not replayed here: two cold ``scan --live`` sharing a cache and ``kill -9`` during a
clone (tests/sources/test_cache_concurrency.py, through the console script; a live clone is network time, not
the tool's CPU), ``artifacts --sha256`` of a file cut between the size check and the read
(tests/artifacts/test_artifacts_budgets.py::test_sha256_of_a_file_cut_during_the_scan_is_an_error_not_sigbus,
deterministic in a child; here a cut during a console-script scan is replayed too, with racy timing), and
``pins bump`` outside a checkout (tests/test_consistency.py::test_pins_bump_never_rewrites_the_installed_package:
an editable install has no installed copy to protect).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.artifacts.artifact_builders import Built, ccob_bomb, many_note_sections, many_sections_no_nul
from tests.conftest import require_tool, shared_build
from tests.cputime import cpu_time
from tests.upstream_fixtures import upstream  # noqa: F401 - fixture: small upstream-shaped git repositories
from tests.gate.test_hostile_rules import HOSTILE_YAML
from tests.sweep.test_sweep_faults import Hostile, hostile  # noqa: F401 - fixture: misbehaving Ollama-API servers

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "sweep" / "slow_llama_server.py"
TIME_LIMIT_S = 5.0  # CPU seconds of the gfxgate process and of the processes it waited for
# Wall seconds after which a replay is a hang: stopped (SIGKILL) and failed. Generous (60x the CPU bound): on a
# shared machine a run waits for a core longer than it computes (26 s of wall for 2.7 s of CPU at load 11; niced
# beside two CPU hogs, 60 s of wall for 1.2-1.4 s of CPU); the claim it holds is "no wait without end" (a FIFO, a
# lock, a hung child), not a number of wall seconds. Only a failing replay ever waits that long.
HANG_GUARD_S = 300.0
# The deadline (``sweep --timeout``) of a sweep that must succeed, and the tests' own waits for a sweep: a hang
# guard under HANG_GUARD_S, not a bound (a busy machine must not turn a run into a recorded timeout).
DEADLINE_S = 200
MEMORY_LIMIT_KB = 512 * 1024
MAX_JOBS = "64"  # artifacts --jobs: click.IntRange(1, 64)


# -- the harness --------------------------------------------------------------------------------------------
@dataclass
class Replay:
    name: str
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float
    max_rss_kb: int
    hung: bool = False  # stopped by the hang guard


# The gfxgate process is started by a small launcher, not by pytest: a child's ru_maxrss starts from the RSS
# of the process that forked it (Linux keeps the pre-exec high-water mark), and this test process holds
# hundreds of MB after building a CCOB bomb. ``os.wait4``'s usage is the process's and that of the children it
# waited for (the ``-j`` workers of ``artifacts``, a ``git`` it ran): the CPU time of the tree. It starts without
# ``site`` (``-S``: 33 ms of CPU instead of 55 ms, a replay).
_LAUNCH = textwrap.dedent("""
    import json, os, subprocess, sys, threading, time
    spec = json.loads(sys.argv[1])
    with open(spec["out"], "wb") as out, open(spec["err"], "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(spec["argv"], cwd=spec["cwd"], env=spec["env"], stdout=out, stderr=err)
        hung = threading.Event()
        def guard():
            hung.set()
            proc.kill()
        killer = threading.Timer(spec["timeout"], guard)
        killer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        killer.cancel()
        seconds = time.monotonic() - start
    print(json.dumps({"rc": os.waitstatus_to_exitcode(status), "seconds": seconds, "hung": hung.is_set(),
                      "cpu": usage.ru_utime + usage.ru_stime, "max_rss_kb": usage.ru_maxrss}))
""")


def _entries(folder: Path) -> dict[str, tuple]:
    """Everything under ``folder`` (links not followed, FIFOs and devices never opened)."""
    out: dict[str, tuple] = {}
    for parent, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(parent, name)
            st = os.lstat(path)
            digest = None
            if stat.S_ISREG(st.st_mode) and st.st_size <= 64 << 20:  # (larger: inode, size and mtime)
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
            link = os.readlink(path) if stat.S_ISLNK(st.st_mode) else None
            rdev = st.st_rdev if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else None
            if stat.S_ISDIR(st.st_mode):  # a folder's size and times follow its entries, which are compared
                out[str(path.relative_to(folder))] = (st.st_mode, st.st_ino)
            else:
                out[str(path.relative_to(folder))] = (
                    st.st_mode,
                    st.st_ino,
                    st.st_size,
                    st.st_mtime_ns,
                    link,
                    rdev,
                    digest,
                )
    return out


def _devices() -> list[tuple]:
    return [(os.lstat(d).st_mode, os.lstat(d).st_rdev, os.lstat(d).st_ino) for d in ("/dev/null", "/dev/full")]


def one_line(stderr: str) -> str:
    """The error line: one ``gfxgate:`` line, hints after it, no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert lines and lines[0].startswith("gfxgate: "), stderr
    assert all(line.startswith("  hint:") for line in lines[1:]), stderr
    return lines[0]


def replay(
    name: str,
    exe: str,
    args: list[str],
    *,
    cwd: Path,
    code: int,
    outputs: tuple[str, ...] = (),
    env: dict | None = None,
    stdin=None,
    during=None,
    error: str | None = None,
    timeout: float | None = None,
) -> Replay:
    """Run ``gfxgate ARGS`` in ``cwd`` and assert the issue's bounds; ``outputs``: the named outputs (relative
    to cwd; ``DIR/``: that folder and all under it) that may change; ``error``: a text the error line must hold;
    ``timeout``: the hang guard (``HANG_GUARD_S`` unless given).

    The time bound is CPU time (``TIME_LIMIT_S``): what the tool computes, which a busy machine does not stretch
    (wall time there was 5.9 s for 2.2 s of CPU, 26 s for 2.7 s). A tool that waits instead (a sleep, a lock, a
    FIFO, a hung child) spends no CPU: the hang guard stops it, and the replay fails saying so."""
    timeout = HANG_GUARD_S if timeout is None else timeout
    before, devices = _entries(cwd), _devices()
    io = cwd.parent / f".io-{cwd.name}"  # stdout/stderr outside the watched folder
    io.mkdir(exist_ok=True)
    spec = {
        "argv": [exe, *args],
        "cwd": str(cwd),
        "env": env if env is not None else dict(os.environ),
        "out": str(io / "out"),
        "err": str(io / "err"),
        "timeout": timeout,
    }
    launcher = subprocess.Popen(
        [sys.executable, "-S", "-c", _LAUNCH, json.dumps(spec)],  # -S: the standard library is all it needs
        stdout=subprocess.PIPE,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
    )
    if during is not None:
        during(launcher)
    measured = json.loads(launcher.communicate(timeout=timeout + 30)[0])
    run = Replay(
        name,
        measured["rc"],
        (io / "out").read_text("utf-8", "replace"),
        (io / "err").read_text("utf-8", "replace"),
        measured["seconds"],
        measured["cpu"],
        measured["max_rss_kb"],
        measured["hung"],
    )
    _record(run)
    assert not run.hung, f"{name}: still running after {timeout:g} s of wall time (a hang), stopped"
    assert run.returncode == code, (name, run.returncode, run.stderr)
    if code != 0:
        line = one_line(run.stderr)
        if error is not None:
            assert error in line, (name, line)
    else:
        assert "Traceback" not in run.stderr and all(
            line.startswith(("gfxgate: ", "  ")) for line in run.stderr.splitlines()
        ), (name, run.stderr)
    assert run.cpu_seconds < TIME_LIMIT_S, (name, run.cpu_seconds)
    assert run.max_rss_kb < MEMORY_LIMIT_KB, (name, run.max_rss_kb)
    after = _entries(cwd)
    changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
    unexpected = {
        p for p in changed if not any(p == o or (o.endswith("/") and (p + "/").startswith(o)) for o in outputs)
    }
    assert not unexpected, (name, sorted(unexpected))
    assert _devices() == devices, "the machine's /dev/null or /dev/full changed"
    return run


BUSY = "import time\nend = time.process_time() + 0.4\nwhile time.process_time() < end: pass"


def test_the_time_bound_fails_a_tool_that_waits_and_one_that_computes(tmp_path, monkeypatch):
    """The harness itself: under the (here lowered) CPU bound a run passes; a run that waits is stopped by the
    hang guard and fails saying so; a run that computes over the bound fails on its CPU time, also when the
    computing is done by a child it waited for (the CPU time of the tree)."""
    monkeypatch.setattr(sys.modules[__name__], "TIME_LIMIT_S", 0.25)
    work = tmp_path / "w"
    work.mkdir()
    quick = replay("quick", sys.executable, ["-c", "pass"], cwd=work, code=0)
    assert not quick.hung and quick.cpu_seconds < 0.25
    names: list[str] = []
    monkeypatch.setattr(sys.modules[__name__], "_record", lambda run: names.append(run.name))
    with pytest.raises(AssertionError) as waited:
        replay("waits", sys.executable, ["-c", "import time; time.sleep(60)"], cwd=work, code=0, timeout=1.0)
    assert names == ["waits"] and "waits: still running after 1 s of wall time (a hang)" in str(waited.value)
    names.clear()
    with pytest.raises(AssertionError) as computed:
        replay("computes", sys.executable, ["-c", BUSY], cwd=work, code=0)
    assert names == ["computes"] and "computes" in str(computed.value) and "hang" not in str(computed.value)
    grandchild = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {BUSY!r}], check=True)"
    with pytest.raises(AssertionError) as tree:
        replay("a child computes", sys.executable, ["-c", grandchild], cwd=work, code=0)
    assert "a child computes" in str(tree.value) and "hang" not in str(tree.value)


def _record(run: Replay) -> None:
    target = os.environ.get("GFXGATE_ISSUE13_FIGURES")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(
                json.dumps(
                    {
                        "name": run.name,
                        "rc": run.returncode,
                        "seconds": round(run.seconds, 3),
                        "hung": run.hung,
                        "cpu_seconds": round(run.cpu_seconds, 3),
                        "max_rss_mb": round(run.max_rss_kb / 1024, 1),
                    }
                )
                + "\n"
            )


@pytest.fixture()
def work(tmp_path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


@pytest.fixture()
def env(_isolated_cache) -> dict:
    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(_isolated_cache)  # the test's own (tests/conftest.py): nothing cloned or fetched
    out["NO_COLOR"] = "1"
    return out


@pytest.fixture(scope="module")
def built(clang19, tmp_path_factory) -> Built:
    return shared_build(tmp_path_factory, "issue13-built", lambda root: Built(root, clang19))


def private_device(folder: Path, name: str, real: str) -> Path:
    """As root, a private character device with the numbers of ``real`` (the real one is never written)."""
    if os.geteuid() != 0:
        pytest.skip("device nodes need root")
    node = folder / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.stat(real).st_rdev)
    return node


SCAN = ["scan", "--target", "gfx900", "--offline"]


# -- 1. the output writer ---------------------------------------------------------------------------------
def test_1_output_to_dev_null_stays_the_device(gfxgate_exe, work, env):
    """`-o /dev/null` as root replaced the node with a regular file (tests/fsio/test_output_writer.py)."""
    null = private_device(work, "null", "/dev/null")
    replay("1 -o /dev/null", gfxgate_exe, [*SCAN, "-o", str(null)], cwd=work, env=env, code=0, outputs=("null",))
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.lstat(null).st_rdev == os.stat("/dev/null").st_rdev


def test_1_output_to_dev_full_is_exit_2_and_stays_the_device(gfxgate_exe, work, env):
    full = private_device(work, "full", "/dev/full")
    replay(
        "1 -o /dev/full",
        gfxgate_exe,
        [*SCAN, "-o", str(full)],
        cwd=work,
        env=env,
        code=2,
        error="No space left on device",
    )
    assert stat.S_ISCHR(os.lstat(full).st_mode)


def test_1_output_to_a_fifo_with_a_reader_is_written_in_place(gfxgate_exe, work, env):
    fifo = work / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        replay(
            "1 -o FIFO (reader)", gfxgate_exe, [*SCAN, "-o", str(fifo)], cwd=work, env=env, code=0, outputs=("pipe",)
        )
        got = os.read(reader, 1 << 20)
    finally:
        os.close(reader)
    assert got.startswith(b"# gfxgate gate matrix: gfx900") and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_1_output_to_a_fifo_without_reader_is_exit_2_not_a_hang(gfxgate_exe, work, env):
    os.mkfifo(work / "pipe")
    replay(
        "1 -o FIFO (no reader)",
        gfxgate_exe,
        [*SCAN, "-o", "pipe"],
        cwd=work,
        env=env,
        code=2,
        error="FIFO with no reader",
    )


def test_1_output_to_a_symlink_writes_its_file_and_keeps_the_link(gfxgate_exe, work, env):
    (work / "real.md").write_text("old\n")
    (work / "link.md").symlink_to("real.md")
    replay("1 -o symlink", gfxgate_exe, [*SCAN, "-o", "link.md"], cwd=work, env=env, code=0, outputs=("real.md",))
    assert os.readlink(work / "link.md") == "real.md"
    assert (work / "real.md").read_text().startswith("# gfxgate gate matrix: gfx900")


def test_1_planted_tmp_symlink_does_not_overwrite_its_victim(gfxgate_exe, work, env):
    """`ln -s victim .r.md.tmp; gfxgate scan -t gfx900 -o r.md` overwrote victim."""
    (work / "victim").write_text("precious\n")
    (work / ".r.md.tmp").symlink_to("victim")
    replay("1 planted .r.md.tmp", gfxgate_exe, [*SCAN, "-o", "r.md"], cwd=work, env=env, code=0, outputs=("r.md",))
    assert (work / "victim").read_text() == "precious\n"


def test_1_the_same_writer_for_other_files_samples(gfxgate_exe, work, env):
    """Pins, snapshots, samples and caches use the one writer (static proof:
    tests/fsio/test_output_writer.py::test_no_writer_in_the_tree_bypasses_fsio); `samples FOLDER` with a planted
    temporary symlink replays it for a writer that is not -o."""
    out = work / "samples"
    out.mkdir()
    (work / "victim").write_text("precious\n")
    (out / ".gfx900.md.tmp").symlink_to("../victim")
    run = replay(
        "1 samples (planted tmp link)",
        gfxgate_exe,
        ["samples", str(out)],
        cwd=work,
        env=env,
        code=0,
        outputs=("samples/",),
    )
    assert (work / "victim").read_text() == "precious\n" and (out / "gfx900.md").is_file(), run.stderr


# -- 2. CPU and memory from small files ---------------------------------------------------------------------
JOBS = pytest.mark.parametrize("jobs", [None, MAX_JOBS], ids=["j-default", "j-max"])


def _artifacts(name, exe, work, env, jobs, *paths) -> dict:
    args = ["artifacts", "--format", "json", *(["-j", jobs] if jobs else []), *paths]
    run = replay(f"{name} (-j {jobs or 'default'})", exe, args, cwd=work, env=env, code=0)
    return json.loads(run.stdout)


def _errors(report: dict) -> list[str]:
    return [e["message"] for f in report["files"] for e in f.get("errors", [])]


@JOBS
def test_2_code_object_v2_with_1000_note_sections(built, gfxgate_exe, work, env, jobs):
    """1.1 MB, 2 minutes before (tests/artifacts/test_artifacts_budgets.py)."""
    (work / "notes.hsaco").write_bytes(many_note_sections(built.code_object("gfx900").read_bytes(), 1000))
    report = _artifacts("2 v2 code object, 1,000 note sections", gfxgate_exe, work, env, jobs, "notes.hsaco")
    assert any("notes (a per-code-object limit)" in m for m in _errors(report)), _errors(report)


@JOBS
def test_2_code_object_v2_with_65535_sections(built, gfxgate_exe, work, env, jobs):
    (work / "s.hsaco").write_bytes(many_note_sections(built.code_object("gfx900").read_bytes(), 65534, 16 << 10))
    report = _artifacts("2 v2 code object, 65,535 sections", gfxgate_exe, work, env, jobs, "--kernels", "s.hsaco")
    assert _errors(report) and not report["files"][0].get("code_objects")


@JOBS
def test_2_host_elf_with_65535_sections_and_no_nul(built, gfxgate_exe, work, env, jobs):
    """20 MB, over 4 GB before."""
    (work / "many.so").write_bytes(many_sections_no_nul(built.hip_so("issue13-host.so").read_bytes()))
    assert (work / "many.so").stat().st_size > 16 << 20
    report = _artifacts("2 host ELF, 65,535 sections, name table without NUL", gfxgate_exe, work, env, jobs, "many.so")
    assert report["summary"]["by_kind"] == {"host-elf": 1}


@pytest.fixture(scope="module")
def bomb(built, tmp_path_factory) -> bytes:
    """The CCOB bomb, built once per run (hashing and compressing its 256 MB cost half a second of CPU); the
    budgets test builds small ones in process (tests/artifacts/test_artifacts_budgets.py)."""
    code_object = built.code_object("gfx900").read_bytes()

    def build(root: Path) -> Path:
        (root / "bomb.ccob").write_bytes(ccob_bomb(code_object))
        return root / "bomb.ccob"

    return shared_build(tmp_path_factory, "ccob-bomb", build).read_bytes()


@pytest.mark.parametrize("jobs", [None, "16", MAX_JOBS], ids=["j-default", "j16", "j-max"])
def test_2_sixteen_ccob_bombs(bomb, gfxgate_exe, work, env, jobs):
    """Sixteen 9.6 KB CCOBs that each inflate 256 MB: 4 GB with -j16 before; now one inflation total per scan
    (its sharing between files and threads: tests/artifacts/test_artifacts_budgets.py, in process)."""
    assert len(bomb) < 16 << 10
    for i in range(16):
        (work / f"bomb{i:02}.ccob").write_bytes(bomb)
    report = _artifacts("2 sixteen CCOB bombs", gfxgate_exe, work, env, jobs, ".")
    assert any(m.startswith("budget exhausted: inflated bytes over ") for m in _errors(report)), _errors(report)
    assert all(f["errors"] for f in report["files"] if not f.get("code_objects"))  # no file silently empty


def _rules(work: Path, layers: bytes | None = None) -> Path:
    from gfxgate.resources import rules_dir

    rules = work / "rules"
    shutil.copytree(rules_dir(), rules, ignore=shutil.ignore_patterns("snapshots", "__pycache__"))
    if layers is not None:
        (rules / "layers.yaml").write_bytes(layers)
    return rules


def test_2_billion_laughs_rules_yaml(gfxgate_exe, work, env):
    """600 bytes, 3 GB before (tests/gate/test_hostile_rules.py)."""
    content, needle = HOSTILE_YAML["billion-laughs"]
    _rules(work, content)
    replay(
        "2 billion laughs (scan --rules)",
        gfxgate_exe,
        [*SCAN, "--rules", "rules"],
        cwd=work,
        env=env,
        code=3,
        error=needle,
    )


def test_2_billion_laughs_through_check(gfxgate_exe, work, env):
    """A pull request that edits rules reaches the loader through `check`: the base ref has the shipped rules,
    the working tree the bomb."""
    git = lambda *a: subprocess.run(["git", "-C", str(work), *a], check=True, capture_output=True)  # noqa: E731
    git("init", "-q")
    _rules(work)
    git("add", "rules")
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "base")
    (work / "rules" / "layers.yaml").write_bytes(HOSTILE_YAML["billion-laughs"][0])
    replay(
        "2 billion laughs (check)",
        gfxgate_exe,
        ["check", "--base-ref", "HEAD", "-t", "gfx900", "--offline", "--rules", "rules", "--pins", "rules/pins.toml"],
        cwd=work,
        env=env,
        code=3,
        error="expands to more than",
    )


def test_2_catastrophic_rule_regex_in_the_go_source_matcher(gfxgate_exe, work, env, upstream):
    r"""`^(\w+\s?)*$` over a long Go string: exponential with Python's re. A rules folder whose go-source rule
    has that pattern, scanned live against a folder of Go code (tests/gate/test_hostile_rules.py runs the
    matcher alone)."""
    rules = _rules(work)
    gates = rules / "gates" / "discovery.yaml"
    text = gates.read_text()
    rule = "    title: '\"amdgpu is not supported\" rejection'\n    repo: ollama\n"
    versions = re.compile(re.escape(rule) + r"    versions: [^\n]*\n")
    pattern = re.compile(r"pattern: '[^'\n]*is not supported[^'\n]*'")
    assert versions.search(text) and len(pattern.findall(text)) == 1
    text = versions.sub(lambda m: rule, text)  # a folder has no version: the rule applies to it
    gates.write_text(pattern.sub(lambda m: r"pattern: '^(\w+\s?)*$'", text))
    go = work / "ollama" / "discover"
    go.mkdir(parents=True)
    (go / "amd.go").write_text('package discover\n\nfunc F() string { return "' + "word " * 3000 + '!" }\n')
    sources = {
        "GFXGATE_SOURCE_LLAMA_CPP": str(upstream / "llama.cpp"),
        "GFXGATE_SOURCE_ROCM_DOCS": str(upstream / "rocm"),
        "GFXGATE_SOURCE_CLR": str(upstream / "clr"),
        "GFXGATE_SOURCE_ROCBLAS": str(upstream / "rocblas"),
    }
    run = replay(
        "2 catastrophic regex (go-source)",
        gfxgate_exe,
        [*SCAN, "--live", "--rules", "rules", "--source", "ollama=ollama", "--format", "json"],
        cwd=work,
        env={**env, **sources},
        code=0,
    )
    [discovery] = [layer for layer in json.loads(run.stdout)["layers"] if layer["id"] == "discovery"]
    # the rule ran over the 3,000-word string (Python's re needs minutes for 30 words) and did not match
    assert "rule did not match at ollama@worktree: no Go string matching" in discovery["cells"][0]["reason"]


# -- 3. sweep faults -----------------------------------------------------------------------------------------
def _sweep(url: str, *extra: str) -> list[str]:
    return [
        "sweep",
        "--endpoint",
        f"x={url}",
        "--model",
        "m",
        "--num-gpu",
        "0",
        "--timeout",
        "1",
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        "w.jsonl",
        *extra,
    ]


def _runs(work: Path) -> list[dict]:
    return [json.loads(line) for line in (work / "w.jsonl").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(
    "mode, stream", [("drip", "--no-stream"), ("drip-status", "--no-stream"), ("drip-status", "--stream")]
)
def test_3_a_dripping_answer_is_a_recorded_timeout(gfxgate_exe, work, env, hostile, mode, stream):
    replay(
        f"3 drip ({mode}, {stream})",
        gfxgate_exe,
        _sweep(hostile(mode), stream),
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl",),
    )
    assert [r["outcome"] for r in _runs(work)] == ["timeout"]


@pytest.mark.parametrize("mode", ["drip-body", "drip-headers", "silent", "health-drip"])
def test_3_a_slow_llama_server_is_a_recorded_timeout(gfxgate_exe, work, env, mode):
    (work / "m.gguf").write_bytes(b"GGUF")
    command = shlex.join([sys.executable, str(PEER), mode])
    args = [
        "sweep",
        "--llama-server",
        f"x={command}",
        "--model-file",
        "m.gguf",
        "--num-gpu",
        "0",
        "--timeout",
        "1",
        "--no-probe-gpu",
        "--progress",
        "none",
        "--worklog",
        "w.jsonl",
    ]
    replay(f"3 llama-server {mode}", gfxgate_exe, args, cwd=work, env=env, code=0, outputs=("w.jsonl", "w.jsonl.logs/"))
    assert [r["outcome"] for r in _runs(work)] == ["timeout"]


@pytest.mark.parametrize(
    "mode, needle",
    [("error-200", "200 answer with an error"), ("list", "malformed response"), ("string", "malformed response")],
)
def test_3_answers_that_are_not_a_finished_generation_are_recorded_failures(
    gfxgate_exe, work, env, hostile, mode, needle
):
    replay(
        f"3 /api/generate answers {mode}",
        gfxgate_exe,
        _sweep(hostile(mode)),
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl",),
    )
    [run] = _runs(work)
    assert run["outcome"] != "ok" and needle in run["error"]


def test_3_version_answering_a_list_is_exit_5(gfxgate_exe, work, env, hostile):
    replay(
        "3 /api/version answers a list",
        gfxgate_exe,
        _sweep(hostile("version-list")),
        cwd=work,
        env=env,
        code=5,
        error="JSON list, not an object",
    )
    assert not (work / "w.jsonl").exists()


@contextlib.contextmanager
def _serving(handler: type[Hostile]) -> Iterator[str]:
    """The URL of an Ollama API on 127.0.0.1 answering with ``handler`` while the block runs."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def healthy_line(gfxgate_exe, tmp_path_factory) -> bytes:
    """The worklog line of one healthy sweep (``_sweep`` against a healthy server), made once for the module: the
    tests that damage a worklog start from it."""
    folder = tmp_path_factory.mktemp("healthy-sweep")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    env["GFXGATE_CACHE_DIR"] = str(folder / "cache")
    with _serving(Hostile) as url:
        argv = [gfxgate_exe, *_sweep(url)]
        done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, timeout=HANG_GUARD_S)
    assert done.returncode == 0, done.stderr
    [line] = (folder / "w.jsonl").read_bytes().splitlines(keepends=True)
    assert line.endswith(b"\n")
    return line


class _Held(Hostile):
    """A healthy Ollama API whose first /api/version answers only once ``release`` is set (or after HANG_GUARD_S)."""

    release: threading.Event
    first: threading.Lock

    def do_GET(self):
        if self.path == "/api/version" and self.first.acquire(blocking=False):
            self.release.wait(HANG_GUARD_S)
        super().do_GET()


@pytest.fixture()
def held():
    """The URL of a ``_Held`` server and its ``release`` event (set, and the server stopped, after the test)."""
    release = threading.Event()
    with _serving(type("H", (_Held,), {"release": release, "first": threading.Lock()})) as url:
        yield url, release
        release.set()


def test_3_a_second_sweep_that_starts_late_does_not_duplicate_cells(gfxgate_exe, work, env, held):
    """The first sweep holds the worklog's lock from before it reads it (tests/sweep/test_sweep_faults.py): its
    preflight (/api/version) is held until the second sweep has been refused, however long that one takes to start."""
    url, release = held
    first = subprocess.Popen(
        [gfxgate_exe, *_sweep(url), "--timeout", str(DEADLINE_S)],
        cwd=work,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + DEADLINE_S  # a hang guard
        while not (work / "w.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        replay(
            "3 second sweep while the first holds the worklog",
            gfxgate_exe,
            _sweep(url),
            cwd=work,
            env=env,
            code=6,
            error="is in use by another gfxgate sweep",
        )
    finally:
        release.set()
        _, err = first.communicate(timeout=HANG_GUARD_S)
    assert first.returncode == 0, err
    assert len(_runs(work)) == 1


def test_3_complete_last_line_without_newline_is_kept(gfxgate_exe, work, env, hostile, healthy_line):
    url = hostile("healthy")
    (work / "w.jsonl").write_bytes(healthy_line.rstrip(b"\n"))
    replay(
        "3 last line without newline",
        gfxgate_exe,
        _sweep(url, "--num-gpu", "1"),
        cwd=work,
        env=env,
        code=0,
        outputs=("w.jsonl",),
    )
    assert [r["options"]["num_gpu"] for r in _runs(work)] == [0, 1] and not (work / "w.jsonl.torn").exists()


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_3_server_log_that_is_not_a_file_is_exit_6(gfxgate_exe, work, env, hostile, kind):
    (work / "log").mkdir() if kind == "folder" else os.mkfifo(work / "log")
    replay(
        f"3 --server-log {kind}",
        gfxgate_exe,
        _sweep(hostile("healthy"), "--server-log", "x=log"),
        cwd=work,
        env=env,
        code=6,
        error=f"is a {'folder' if kind == 'folder' else 'FIFO'}",
    )


# -- 5. tracebacks and wrong exit codes -----------------------------------------------------------------------
@pytest.mark.parametrize("case", ["latin-1", "deep-flow", "deep-block"])
def test_5_non_utf8_or_deeply_nested_rules_yaml_is_exit_3(gfxgate_exe, work, env, case):
    content, needle = HOSTILE_YAML[case]
    _rules(work, content)
    replay(f"5 rules YAML {case}", gfxgate_exe, [*SCAN, "--rules", "rules"], cwd=work, env=env, code=3, error=needle)


def test_5_output_into_a_missing_folder_is_exit_2(gfxgate_exe, work, env):
    replay(
        "5 -o into a missing folder",
        gfxgate_exe,
        [*SCAN, "-o", "no/such/r.md"],
        cwd=work,
        env=env,
        code=2,
        error="does not exist",
    )


def test_5_prompt_file_not_utf8_is_exit_6(gfxgate_exe, work, env, hostile):
    (work / "p.txt").write_bytes("caf\xe9".encode("latin-1"))
    replay(
        "5 --prompt @file not UTF-8",
        gfxgate_exe,
        _sweep(hostile("healthy"), "--prompt", "@p.txt"),
        cwd=work,
        env=env,
        code=6,
        error="is not UTF-8 (byte 0xe9",
    )


@pytest.mark.parametrize(
    "field, value",
    [
        ("options", {"num_gpu": "x"}),
        ("outcome", 3),
        ("started_at", 5),
        ("evidence", "no"),
        ("timeout_s", None),
        ("ps_after", {"ok": "yes"}),
        ("overhead", {"server_exit": []}),
    ],
)
@pytest.mark.parametrize("command", ["sweep report", "scan --runtime"])
def test_5_worklog_with_a_wrong_field_type_is_exit_6(gfxgate_exe, work, env, healthy_line, field, value, command):
    """Dozens of distinct tracebacks before; every field and nested field: tests/sweep/test_sweep_worklog_types.py."""
    run = json.loads(healthy_line)
    (work / "w.jsonl").write_text(json.dumps({**run, field: value}) + "\n")
    args = ["sweep", "report", "w.jsonl"] if command == "sweep report" else [*SCAN, "--runtime", "w.jsonl"]
    run = replay(
        f"5 worklog {field} wrong type ({command})", gfxgate_exe, args, cwd=work, env=env, code=6, error="w.jsonl:1: "
    )
    assert field in one_line(run.stderr)


def test_5_sha256_of_a_file_cut_during_the_scan_is_not_sigbus(built, gfxgate_exe, work, env):
    """The file shrinks while `artifacts --sha256` reads it (mmap: SIGBUS, no output). The timing is racy here;
    the deterministic cut is tests/artifacts/test_artifacts_budgets.py. Either way: exit 0, a report."""
    big = work / "big.hsaco"
    head = built.code_object("gfx900").read_bytes()
    with open(big, "wb") as handle:  # a real code object, then a sparse 16 GiB: a minute of hashing, cut mid-read
        handle.write(head)
        handle.truncate(16 << 30)

    def cut(proc):
        time.sleep(0.4)
        os.truncate(big, 4096)

    run = replay(
        "5 artifacts --sha256, file cut mid-scan",
        gfxgate_exe,
        ["artifacts", "--sha256", "--format", "json", "big.hsaco"],
        cwd=work,
        env=env,
        code=0,
        during=cut,
        outputs=("big.hsaco",),
    )
    [entry] = json.loads(run.stdout)["files"]
    if entry["sha256"] != hashlib.sha256(big.read_bytes()).hexdigest():  # (cut before the hashing started: its hash)
        assert entry["sha256"] is None
        assert any("changed size during the scan" in e["message"] for e in entry["errors"]), entry


FAULT = textwrap.dedent("""
    import gfxgate.targets as _targets

    def catalog(*args, **kwargs):
        raise RuntimeError("injected fault")

    _targets.catalog = catalog
""")


def test_5_an_unexpected_exception_is_exit_70_not_1(gfxgate_exe, work, env, tmp_path):
    """Any bug exited 1, the code of `check` finding a regression (tests/test_exit_codes.py)."""
    faults = tmp_path / "faults"
    faults.mkdir()
    (faults / "sitecustomize.py").write_text(FAULT)
    replay(
        "5 unexpected exception",
        gfxgate_exe,
        ["targets", "gfx900"],
        cwd=work,
        env={**env, "PYTHONPATH": str(faults)},
        code=70,
        error="gfxgate: internal error: RuntimeError: injected fault",
    )


def test_5_targets_into_head_is_quiet(gfxgate_exe, work, env):
    """`gfxgate targets | head -1` exited 1 with a traceback; the reader gone before the first write: 141."""
    read, write = os.pipe()
    os.close(read)
    with cpu_time() as spent:  # the process's CPU time, counted once it is waited for
        try:
            proc = subprocess.Popen([gfxgate_exe, "targets"], cwd=work, env=env, stdout=write, stderr=subprocess.PIPE)
        finally:
            os.close(write)
        _, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode == 141 and err == b"" and spent.seconds < TIME_LIMIT_S
    shell = f"{shlex.quote(gfxgate_exe)} targets | head -1; echo rc=${{PIPESTATUS[0]}}"
    bash = ["bash", "-c", shell]
    done = subprocess.run(bash, cwd=work, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S)
    assert done.stdout.splitlines()[-1] in ("rc=0", "rc=141") and done.stderr == ""


# -- 6. inconsistent answers ---------------------------------------------------------------------------------
def test_6_scan_installed_missing_path_is_6_like_artifacts(gfxgate_exe, work, env):
    replay(
        "6 scan --installed /nonexistent",
        gfxgate_exe,
        [*SCAN, "--installed", "/nonexistent"],
        cwd=work,
        env=env,
        code=6,
        error="no such file or folder",
    )
    replay("6 artifacts /nonexistent", gfxgate_exe, ["artifacts", "/nonexistent"], cwd=work, env=env, code=6)


def test_6_live_offline_with_an_empty_cache_is_5_like_ref(gfxgate_exe, work, env):
    replay(
        "6 scan --live --offline, empty cache",
        gfxgate_exe,
        [*SCAN, "--live"],
        cwd=work,
        env=env,
        code=5,
        error="this run is offline (it clones nothing)",
    )
    replay(
        "6 scan --ref --offline, empty cache",
        gfxgate_exe,
        [*SCAN, "--ref", "ollama=v0.12.3"],
        cwd=work,
        env=env,
        code=5,
        error="this run is offline (it clones nothing)",
    )


def test_6_rules_folder_alone_stays_on_the_snapshot(gfxgate_exe, work, env):
    """--rules switched to live mode and reached for the network; without --offline here, an empty cache:
    a live read would clone (tests/test_consistency.py compares the cells with the shipped rules')."""
    _rules(work)
    run = replay(
        "6 --rules alone",
        gfxgate_exe,
        ["scan", "-t", "gfx900", "--format", "json", "--rules", "rules"],
        cwd=work,
        env=env,
        code=0,
    )
    assert any("evaluated against the embedded snapshot" in n for n in json.loads(run.stdout)["notes"])


def test_6_a_local_file_as_source_is_a_usage_error(gfxgate_exe, work, env):
    (work / "notes.txt").write_text("not a repository\n")
    replay(
        "6 --source NAME=FILE",
        gfxgate_exe,
        [*SCAN, "--source", "ollama=notes.txt"],
        cwd=work,
        env=env,
        code=2,
        error="is a file",
    )


def test_6_a_ref_that_looks_like_an_option_is_refused(gfxgate_exe, work, env):
    replay(
        "6 --ref ollama=--output=x",
        gfxgate_exe,
        [*SCAN, "--ref", "ollama=--output=x"],
        cwd=work,
        env=env,
        code=2,
        error="is not a tag or branch name",
    )
    assert not (work / "x").exists()


@JOBS
def test_6_truncated_code_object_is_an_error_not_a_target(built, gfxgate_exe, work, env, jobs):
    whole = built.code_object("gfx900").read_bytes()
    (work / "cut.hsaco").write_bytes(whole[: len(whole) // 2])
    report = _artifacts("6 truncated code object", gfxgate_exe, work, env, jobs, "cut.hsaco")
    assert not report["files"][0].get("code_objects")
    assert any(m.startswith("truncated code object") for m in _errors(report)), _errors(report)


def test_the_device_nodes_need_root_here():
    """The device reproductions need root (CI runs as root in a container); say so instead of skipping silently."""
    if os.geteuid() != 0 and os.environ.get("CI"):
        pytest.fail("issue 13's /dev/null and /dev/full reproductions need root")
    require_tool("git")
