"""Shared fixtures: an isolated gfxgate cache, and a builder of real git repositories with tags."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import pytest

from tests.cacheseed import copy_into, files

T = TypeVar("T")

CHECKOUT = Path(__file__).resolve().parents[1]
# Files of this checkout that commands write when asked to (pins bump, snapshot build, samples, goldens): the tests
# write only temporary copies, and the session fails when one of these changed while it ran.
GUARDED = ("rules", "samples", "tests/prcheck/golden")
_GUARD = pytest.StashKey[dict]()


def _guarded_files() -> dict[str, tuple[int, int, int]]:
    found = {}
    for folder in GUARDED:
        for path in (CHECKOUT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                st = path.stat()
                found[path.relative_to(CHECKOUT).as_posix()] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return found


def pytest_sessionstart(session):
    if hasattr(session.config, "workerinput"):  # an xdist worker: the controlling session checks the whole run
        return
    session.config.stash[_GUARD] = _guarded_files()


def pytest_sessionfinish(session, exitstatus):
    before = session.config.stash.get(_GUARD, None)
    if before is None:
        return
    after = _guarded_files()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    if changed:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(
                f"checkout files written during the test run (tests must use temporary copies): {', '.join(changed)}",
                red=True,
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


# Unit and integration tests, marked apart here once instead of by hand in each file. An integration test runs real
# programs (the installed gfxgate script, clang-19, git, llama-server, chromium, a local HTTP server) or builds real
# git repositories: it is marked `integration` and `slow`. `pytest -m "not slow"` is the inner loop (under a minute);
# the whole suite, as CI runs it, is every test.
# 1. by the fixtures a test uses:
INTEGRATION_FIXTURES = frozenset(
    {
        "gfxgate_exe",
        "clang19",
        "built",
        "upstream",
        "source_env",
        "upstream_env",
        "trace_upstream",
        "trace_env",
        "sources",
        "history_upstream",
        "history_env",
        "timeline_upstream",
        "reallama",
        "reallama_vulkan",
        "ollama_server",
        "cluster",  # a real Slurm cluster on this host (tests/fleet/conftest.py)
    }
)
# 2. whole modules whose tests all do (through a helper, not a fixture), each with what it runs:
INTEGRATION_MODULES = {
    "tests/test_import_modes.py": "collects the suite again in a pytest subprocess",
    "tests/test_inert_outputs.py": "hostile text through every command of the installed script",
    "tests/cli/test_replays.py": "the reproductions, through the installed script under time and memory bounds",
    "tests/sweep/test_sweep_worklog_types.py": "every field of a worklog mutated, through the installed script",
    "tests/sweep/test_sweep_deadline.py": "a real HTTP server that drips its answer",
    "tests/host/test_proc.py": "real process groups, timeouts and output budgets",
    "tests/prcheck/test_golden.py": "gfxgate's outputs on real git repositories against the goldens",
    "tests/prcheck/test_sarif.py": "scans of real git repositories, through the installed script",
    "tests/prcheck/test_diff.py": "scans of real git repositories, through the installed script",
    "tests/artifacts/test_artifacts_fuzz.py": "thousands of mutated real code objects",
    "tests/test_suite_setup.py": "pytest sessions with and without xdist, in subprocesses",
    "tests/sweep/test_sweep_cli.py": "sweeps and bad options through the installed script",
    "tests/fleet/test_fleet_cli.py": "fleet's scripts, refusals and exit codes through the installed script",
}
# 2b. modules (or single tests) of command lines run in process (gfxgate_cli): whole commands, 0.3-2 s of CPU a test,
# ~110 s together (measured with per-test getrusage, issue 40); marked slow (not integration: they start no program)
# so that the inner loop stays under 30 s of CPU:
SLOW_IN_PROCESS = {
    "tests/answer/test_reproductions.py": "issue-24 reproductions: scans, diagnoses, workarounds at several releases",
    "tests/answer/test_invariants.py": "every target at every release through scan, workarounds and doctor",
    "tests/answer/test_answer_items.py": "workarounds and doctor against small clones",
    "tests/answer/test_views_agree.py": "scan and workarounds over every target of the timeline",
    "tests/gate/test_release_reproductions.py": "scans and timelines at old releases",
    "tests/doctor/test_doctor.py": "doctor on captured machines",
    "tests/doctor/test_vega.py": "doctor on captured machines, before and after following its steps",
    "tests/diagnose/test_vendors.py": "a diagnose per vendor's log line",
    "tests/diagnose/test_excerpts.py": "a diagnose per log excerpt",
    "tests/diagnose/test_fixture_advice.py": "a diagnose of every log file and of every catalogue failure",
    "tests/answer/test_why_items.py": "timelines and a scan at old releases",
    "tests/targets/test_card_names.py": "targets for every card name and PCI id",
    "tests/test_formats_everywhere.py": "every command in its three formats",
    "tests/diagnose/test_views.py": "scan, doctor and diagnose of one log",
    "tests/diagnose/test_diagnose.py::test_the_text_format_carries_what_the_markdown_says": "diagnose in two formats",
    "tests/timeline/test_timeline.py::test_the_shipped_snapshot_is_fresh_and_answers_gfx900": "the timeline, checked",
}
# 3. single tests that run a program or take seconds (measured: `pytest -m "not slow" --durations=20`):
SLOW_TESTS = {
    "tests/answer/test_every_cell.py::test_doctor_gives_the_stored_routes_steps_at_every_cell": "doctor, 9,310 cells",
    "tests/answer/test_every_cell.py::test_diagnose_cites_the_stored_routes_refusals_at_every_cell": "every cell",
    "tests/jsontext/test_jsontext.py::test_same_text_as_json_dumps": "hypothesis, thousands of documents",
    "tests/gate/test_rules.py::test_samples_are_not_stale": "regenerates every sample",
    "tests/timeline/test_timeline.py::test_the_shipped_snapshot_is_schema_checked_once_per_content": "two processes",
    "tests/timeline/test_timeline.py::test_svg_renders_in_a_real_browser": "headless chromium",
    "tests/gate/test_rules.py::test_h200_samples_are_not_stale_and_come_from_the_committed_worklog": "regenerates samples",
    "tests/datacache/test_datacache.py::test_a_scan_from_the_cache_never_imports_yaml_or_jsonschema": "a python subprocess",
    "tests/report/test_report.py::test_cli_needs_no_module_imported_by_someone_else": "python subprocesses",
    "tests/gate/test_hostile_rules.py::test_catastrophic_regex_cannot_hang_the_go_matcher": "a python subprocess",
    "tests/sweep/test_sweep_gpu.py::test_the_report_says_when_its_runs_ran_and_the_longest_pause": "the installed script",
    "tests/sweep/test_sweep_gpu.py::test_targets_command_explains_sm_90_and_refuses_an_unknown_one": "the installed script",
    "tests/sweep/test_sweep_llamaserver.py::test_cli_needs_a_model_file_for_a_llama_server": "the installed script",
}


def pytest_xdist_auto_num_workers(config):
    """How many workers pyproject's ``-n auto`` means: two more than the cores this process may run on.

    The whole suite waits as well as computes (real servers loading, timeouts firing, Slurm scheduling, subprocesses
    it reads): a third worker on the 2-core machine filled those waits, 286 s against 318 s of wall time for the same
    ~495 s of CPU (issue 40), and a fourth, once the suite's CPU had fallen to ~270 s, 144 s against 156 s on quiet
    cores and 210 s against 265 s beside two CPU hogs (2026-12-05, a clean clone). The inner loop (``-m "not slow"``) ran in one process while a worker's start (importing
    gfxgate, collecting the suite, the cache seed) cost more than it saved; since collection and the seed got cheaper,
    workers pay there too (2026-12-05, 2 quiet cores: 54 s in one process, 34 s with two or three workers)."""
    return len(os.sched_getaffinity(0)) + 2


# How the run is shared between the xdist workers (pyproject's `--dist loadscope`, refined here). pytest-xdist's
# loadscope keeps each module on one worker, so a module-scoped fixture (a worklog, a real sweep, a Slurm cluster) is
# built once; but then a worker that draws a long module last keeps the run going while the other idles. Here only the
# tests that share a module's setup (a fixture of module, class or package scope) stay together, one work unit per
# module; every other test is a unit of its own, so the workers end together. (xdist's own `--dist loadgroup` would
# say this with xdist_group marks, but with pytest 9 its node-id suffix is lost, xdist 3.8.0: every test ran alone.)
# The workers know the fixtures, the controller schedules: each worker writes its units beside the run's shared
# builds (XDIST_UNITS), and the scheduler reads them; without them it is loadscope itself.
SHARED_SCOPES = frozenset({"module", "class", "package"})
XDIST_UNITS = "xdist-units-{worker}.json"


def shares_setup(item) -> bool:
    """Whether ``item`` uses a fixture built once for several tests of its module (module, class or package scope)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(defs and defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values())


def _shared_folder(basetemp: Path) -> Path:
    """The run's folder for what its workers share (a worker's basetemp is the run's basetemp/popen-gwN)."""
    return basetemp / "shared"


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    shared = _shared_folder(config._tmp_path_factory.getbasetemp())

    class SetupScopeScheduling(LoadScopeScheduling):
        units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.units is None:
                self.units = {}
                for path in sorted(shared.glob(XDIST_UNITS.format(worker="*"))):
                    self.units.update(json.loads(path.read_text(encoding="utf-8")))
            if not self.units:  # no worker said: loadscope's module
                return super()._split_scope(nodeid)
            return self.units.get(nodeid, nodeid)

    return SetupScopeScheduling(config, log)


def _write_units(config, items) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        return
    units = {item.nodeid: item.nodeid.split("::", 1)[0] for item in items if shares_setup(item)}
    shared = _shared_folder(config._tmp_path_factory.getbasetemp().parent)
    shared.mkdir(exist_ok=True)
    path = shared / XDIST_UNITS.format(worker=worker)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(units), encoding="utf-8")
    temporary.replace(path)


def pytest_collection_modifyitems(config, items):
    _write_units(config, items)
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if (
            INTEGRATION_FIXTURES.intersection(getattr(item, "fixturenames", ()))
            or module in INTEGRATION_MODULES
            or item.get_closest_marker("integration")
        ):
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        elif item.nodeid.split("[", 1)[0] in SLOW_TESTS:
            item.add_marker(pytest.mark.integration)
            item.add_marker(pytest.mark.slow)
        elif module in SLOW_IN_PROCESS or item.nodeid.split("[", 1)[0] in SLOW_IN_PROCESS:  # slow, not integration
            item.add_marker(pytest.mark.slow)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # The scheduler hands out units of one size in collection order: the slow tests first and the unit tests
        # last, so that the run ends with short tests on every worker, not one long test on one (longest first). The
        # sort is stable and the same on every worker; in one process the order stays the modules' own.
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)


# The environment a test runs in is the suite's, not the shell's that started pytest: a user whose shell exports
# GFXGATE_NO_PROGRESS=1, NO_COLOR=1 or TERM=dumb gets the same results as CI (issue 40). Removed: every GFXGATE_*
# but the suite's own opt-ins (kept: they choose which tests run, not how gfxgate behaves), how a terminal looks
# (NO_COLOR, FORCE_COLOR, CLICOLOR*, TERM, COLUMNS, LINES) and the XDG folders (the cache location; not
# XDG_RUNTIME_DIR, the session's sockets, which a browser or journalctl may need); the messages of
# the programs the tests start (git, journalctl) are in English whatever the user's locale (LC_ALL=C.UTF-8).
# The process's environment is cleaned once, before any test or session fixture runs (and so for every subprocess
# and xdist worker); the autouse fixture below holds each test to it, whatever an earlier test left behind.
KEPT_GFXGATE = ("GFXGATE_TEST_", "GFXGATE_ISSUE13_FIGURES", "GFXGATE_SLOW_FACTOR", "GFXGATE_BENCH_")
REMOVED = frozenset(
    {"NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "TERM", "COLUMNS", "LINES", "LANGUAGE", "LC_MESSAGES"}
)
SET = {"LC_ALL": "C.UTF-8"}


def inherited(name: str) -> bool:
    """Whether ``name`` is a variable of the caller's environment that a test must not see."""
    if name.startswith("GFXGATE_"):
        return not name.startswith(KEPT_GFXGATE)
    return name in REMOVED or (name.startswith("XDG_") and name != "XDG_RUNTIME_DIR")  # the session's sockets


def clean_environment(environ=None) -> dict[str, str]:
    """``environ`` (default: a copy of ``os.environ``) without what :func:`inherited` names, with ``SET``: the
    environment for a subprocess that a test starts with an environment of its own making."""
    out = {k: v for k, v in (os.environ if environ is None else environ).items() if not inherited(k)}
    out.update(SET)
    return out


def bytecode_folder() -> Path:
    """Where the run's Python processes keep their bytecode: one folder per user under the temporary folder (the
    prefix mirrors each source's absolute path, so two checkouts never share a file, and the standard library's and
    site-packages' bytecode is compiled once, not once per checkout)."""
    return Path(tempfile.gettempdir()) / f"gfxgate-tests-pycache-{os.getuid()}"


def _collected_marker() -> Path:
    tag = hashlib.blake2b(str(CHECKOUT).encode(), digest_size=8).hexdigest()
    return Path(tempfile.gettempdir()) / f"gfxgate-tests-collected-{os.getuid()}-{tag}"


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection(session):
    """On a checkout never collected here, the xdist workers collect one at a time until the first has finished: the
    first compiles the bytecode and rewrites the test modules, the others then read them (issue 40: a cold
    collection costs 7-14 s of CPU, a warm one under 3 s)."""
    marker = _collected_marker()
    if os.environ.get("PYTEST_XDIST_WORKER") is None or marker.exists():
        yield
        return
    shared = _shared_folder(session.config._tmp_path_factory.getbasetemp().parent)
    with file_lock(shared / "collect.lock"):
        if marker.exists():  # another worker finished while this one waited: collect beside the others
            held = False
        else:
            held = True
            yield
            marker.touch()
    if not held:
        yield


def pytest_configure(config):
    for name in [name for name in os.environ if inherited(name)]:
        del os.environ[name]
    os.environ.update(SET)
    # Bytecode (issue 40: the suite's time). The suite starts hundreds of Python processes (the installed script,
    # nested sessions); with PYTHONDONTWRITEBYTECODE=1 in the caller's shell each one compiled every module it
    # imported again (about 0.1 s of CPU a process), and each xdist worker rewrote every test module's asserts
    # again (about 5 s). They now write and share their bytecode, under the temporary folder only (sys.pycache_prefix
    # / PYTHONPYCACHEPREFIX, which pytest's assertion rewriting also follows): nothing is written beside the sources.
    if sys.dont_write_bytecode or os.environ.get("PYTHONDONTWRITEBYTECODE"):
        folder = bytecode_folder()
        folder.mkdir(mode=0o700, exist_ok=True)
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        os.environ["PYTHONPYCACHEPREFIX"] = str(folder)
        sys.pycache_prefix = str(folder)
        sys.dont_write_bytecode = False


@pytest.fixture(autouse=True)
def _suite_environment(monkeypatch):
    """Each test starts from the suite's environment (what a test sets with monkeypatch is undone after it)."""
    for name in [name for name in os.environ if inherited(name)]:
        monkeypatch.delenv(name)
    for name, value in SET.items():
        monkeypatch.setenv(name, value)


def _build_cache_seed(folder: Path) -> list[str]:
    import subprocess
    import sys

    env = clean_environment()
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(CHECKOUT), env.get("PYTHONPATH"))))
    done = subprocess.run(
        [sys.executable, "-m", "tests.cacheseed", str(folder)],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )
    if done.returncode != 0:
        raise RuntimeError(f"seeding the gfxgate cache failed ({done.returncode}): {done.stderr[-2000:]}")
    return [str(path) for path in files(folder)]


@pytest.fixture(scope="session")
def _cache_seed(tmp_path_factory) -> list[Path]:
    """The rules cache a user's second run has, built once per run (tests/cacheseed.py)."""
    return [Path(name) for name in shared_build(tmp_path_factory, "gfxgate-cache-seed", _build_cache_seed)]


@pytest.fixture(autouse=True)
def _isolated_cache(_suite_environment, _cache_seed, request, tmp_path_factory, monkeypatch):
    """Every test gets its own cache folder; nothing touches the user's real cache or network. The folder starts as
    a copy of the run's seed (tests/cacheseed.py), or empty for a test marked ``empty_cache``."""
    cache = tmp_path_factory.mktemp("gfxgate-cache")
    if request.node.get_closest_marker("empty_cache") is None:
        copy_into(_cache_seed, cache)
    monkeypatch.setenv("GFXGATE_CACHE_DIR", str(cache))
    for name in list(os.environ):
        if name.startswith("GFXGATE_SOURCE_"):
            monkeypatch.delenv(name)
    yield cache
    # the folder goes with the test: a copy of the seed is 3 MB, ~6 GB over a run's 2,000 tests if they were kept
    shutil.rmtree(cache, ignore_errors=True)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (xdist workers, two sessions sharing the user cache): fcntl.flock on
    ``path``, released when the file is closed, also when its process dies."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@functools.cache
def schema_validator(name: str):
    """What ``jsonschema.validate(data, schema)`` builds at every call (the schema's own check, 50 ms): built once per
    process, for the tests that check many outputs against one of gfxgate's schemas."""
    import jsonschema

    from gfxgate.datafiles import load_schema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def shared_build(tmp_path_factory, name: str, build: Callable[[Path], T]) -> T:
    """``build(folder)`` once per test run: a session fixture that builds something big (git repositories, clang-19
    code objects, a 1 GiB blob) calls this instead of building into its own temporary folder.

    Without pytest-xdist it is exactly that (a fresh temporary folder). Under xdist every worker is its own session
    and would build it again: the first worker to ask builds it in the run's base temporary folder (shared by the
    run's workers, never by two runs) under an exclusive lock, and keeps what ``build`` returned beside it; the
    others wait on the lock and reuse both. A build that failed leaves no result, and the next worker builds again."""
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return build(tmp_path_factory.mktemp(name))
    import pickle

    shared = _shared_folder(tmp_path_factory.getbasetemp().parent)  # each worker has popen-gwN/ in the run's basetemp
    shared.mkdir(exist_ok=True)
    folder, result = shared / name, shared / f"{name}.pickle"
    with file_lock(shared / f"{name}.lock"):
        if result.exists():
            return pickle.loads(result.read_bytes())
        shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
        folder.mkdir()
        value = build(folder)
        result.write_bytes(pickle.dumps(value))
        return value


def require_tool(name: str) -> str:
    """Path of a system tool the tests need; in CI (CI=true) its absence is a failure, not a skip."""
    path = shutil.which(name)
    if path is None:
        message = f"{name} is not installed (.ci/run installs it with apt-get)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def clang19() -> str:
    return require_tool("clang-19")


def installed_gfxgate() -> str:
    """The console script installed with this interpreter (`pip install -e .` put it next to python)."""
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "gfxgate"
    if beside.is_file():
        return str(beside)
    found = shutil.which("gfxgate")
    if found is None:
        pytest.fail("the gfxgate console script is not installed (python3 -m pip install -e '.[test]')")
    return found


@pytest.fixture(scope="session")
def gfxgate_exe() -> str:
    return installed_gfxgate()


@pytest.fixture
def gfxgate_cli():
    """``gfxgate_cli(*args, env=None, cwd=None, input=None)``: the command line run in this process, answering the
    :class:`subprocess.CompletedProcess` (``returncode``, ``stdout``, ``stderr``) the installed script would
    (``tests/inprocess.py``: the environment, folder, streams, signal handlers, logging and gfxgate's caches are
    restored after each call). The default way a test runs a command; ``gfxgate_exe`` is for what needs a process."""
    from tests.inprocess import gfxgate

    return gfxgate
