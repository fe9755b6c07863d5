"""The test suite's own machinery (issue 25 item 10): under pytest-xdist a big session fixture is built once per run
and shared by the workers (tests/conftest.py shared_build); the marks keep the inner loop to unit tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# The nested sessions below load only the plugins their claim is about: no entry-point plugin but pytest-xdist
# (hypothesis's alone imported hypothesis, 1.5 s a process) and plain asserts (no rewriting of every test module
# that tests/conftest.py imports: 1.4 s a process where PYTHONDONTWRITEBYTECODE keeps no rewritten copy); what
# they show (one build per run, the exclusive lock, the marks) is about neither.
XDIST = ("-p", "xdist.plugin")
LEAN = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

SESSION = """
import os, time
import pytest
from tests.conftest import shared_build

@pytest.fixture(scope="session")
def thing(tmp_path_factory):
    def build(root):
        with open(os.environ["BUILD_LOG"], "a") as log:
            log.write(f"{os.getpid()}\\n")
        time.sleep(0.5)  # a slow build: the other worker asks meanwhile and must wait, not build again
        (root / "made").write_text("once")
        return {"root": root}
    return shared_build(tmp_path_factory, "thing", build)

@pytest.mark.parametrize("n", range(8))
def test_uses_it(thing, n):
    assert (thing["root"] / "made").read_text() == "once"
    with open(os.environ["BUILD_LOG"] + ".users", "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "none") + "\\n")
    time.sleep(0.1)
"""


def _nested(tmp_path: Path, module: str, source: str, *options: str) -> subprocess.CompletedProcess:
    """``pytest OPTIONS MODULE`` in ``tmp_path`` with ``source`` as the module (not this repository's addopts, not this
    session's worker id); the module's notes go to ``tmp_path/builds.log`` (BUILD_LOG)."""
    (tmp_path / module).write_text(source)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    log = tmp_path / "builds.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--assert=plain", "-q", *options, module],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")},
            **LEAN,
            "BUILD_LOG": str(log),
            "PYTHONPATH": str(REPO),
        },
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def _session(tmp_path: Path, *options: str) -> tuple[list[str], set[str]]:
    done = _nested(tmp_path, "test_session.py", SESSION, *options)
    assert "8 passed" in done.stdout, done.stdout[-1000:]
    return (tmp_path / "builds.log").read_text().split(), set((tmp_path / "builds.log.users").read_text().split())


def test_under_xdist_the_workers_share_one_build(tmp_path):
    builds, users = _session(tmp_path, *XDIST, "-n", "2")
    assert len(builds) == 1, builds  # two workers, one build
    assert users == {"gw0", "gw1"}  # both workers did use it


def test_without_xdist_it_is_built_in_the_session(tmp_path):
    builds, users = _session(tmp_path, "-p", "no:xdist")
    assert len(builds) == 1 and users == {"none"}


# Each mark expression's collection in one nested process: pytest.main once per expression (each a session of its own,
# with its own items and marks; the test modules are imported once), one interpreter instead of three.
COLLECT = """
import sys
import pytest

for expr in sys.argv[1:]:
    print("== -m " + expr, flush=True)
    code = pytest.main(
        ["--collect-only", "-q", "-p", "no:cacheprovider", "--assert=plain", "-p", "xdist.plugin", "-n", "0",
         "-m", expr, "tests/test_inprocess.py", "tests/test_formats_everywhere.py"]
    )
    print(f"== exit {int(code)}", flush=True)
"""


def _collected(*exprs: str) -> list[set[str]]:
    """The test names ``pytest --collect-only -m EXPR`` selects, for each of ``exprs``."""
    done = subprocess.run(
        [sys.executable, "-c", COLLECT, *exprs],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}, **LEAN},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    found: list[set[str]] = []
    for expr in exprs:
        section = done.stdout.split(f"== -m {expr}\n", 1)[1].split("\n== exit ", 1)
        assert section[1].split("\n", 1)[0] in ("0", "5"), done.stdout[-2000:]  # 5: none selected
        found.append({line.split("::")[1].split("[")[0] for line in section[0].splitlines() if "::" in line})
    return found


def test_the_inner_loop_is_the_unit_tests():
    """A test that starts the installed script is integration and slow: `-m "not slow"` leaves it out; a module of
    whole commands run in process (conftest's SLOW_IN_PROCESS) is slow, not integration; the rest is the inner loop."""
    inner, integration, slow = _collected("not slow", "integration", "slow")
    assert "test_two_calls_in_a_row_answer_what_the_installed_script_answers" in integration - inner  # gfxgate_exe
    assert "test_the_three_formats_of_one_result_agree" in slow - integration - inner  # gfxgate_cli, whole commands
    assert "test_input_is_stdin_and_bytes_come_back_as_bytes" in inner - integration  # gfxgate_cli, in process


def test_the_inner_loop_and_the_suite_run_on_every_core_and_two_more():
    from types import SimpleNamespace

    from tests.conftest import pytest_xdist_auto_num_workers as workers

    def config(markexpr):
        return SimpleNamespace(option=SimpleNamespace(markexpr=markexpr))

    cores = len(os.sched_getaffinity(0))
    for markexpr in ("", "integration", "not slow", "not slow and not upstream"):
        assert workers(config(markexpr)) == cores + 2, markexpr


UNITS = """
import os, time
import pytest

def _note(kind):
    with open(os.environ["BUILD_LOG"] + ".users", "a") as log:
        log.write(f"{kind} {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.fixture(scope="module")
def setup_once():
    with open(os.environ["BUILD_LOG"], "a") as log:
        log.write("built\\n")

@pytest.mark.parametrize("n", range(4))
def test_shares(setup_once, n):
    _note("shares")

@pytest.mark.parametrize("n", range(8))
def test_alone(n):
    time.sleep(0.2)
    _note("alone")
"""


def test_under_xdist_only_tests_that_share_a_modules_setup_stay_together(tmp_path):
    """tests/conftest.py's scheduler: loadscope would run this whole module on one worker; the tests of its module
    fixture stay together (one build), the others spread over both workers."""
    (tmp_path / "conftest.py").write_text(
        "from tests.conftest import pytest_collection_modifyitems, pytest_xdist_make_scheduler  # noqa: F401\n"
    )
    done = _nested(tmp_path, "test_units.py", UNITS, *XDIST, "-n", "2", "--dist", "loadscope")
    assert "12 passed" in done.stdout, done.stdout[-2000:]
    assert (tmp_path / "builds.log").read_text().split() == ["built"]
    runs = [line.split() for line in (tmp_path / "builds.log.users").read_text().splitlines()]
    assert len({worker for kind, worker in runs if kind == "shares"}) == 1  # one worker, one build
    assert {worker for kind, worker in runs if kind == "alone"} == {"gw0", "gw1"}
