"""Every row of the README's exit-code table, produced by the installed console script (not CliRunner).

The scenarios are real: a bad target, an invalid rules file, a real git repository without the asked tag, an
empty cache with --offline, a missing input file, a pipe closed by its reader. Two need a fault injected into the
real process: an unexpected exception (exit 70) and a real SIGINT (exit 130); a `sitecustomize` module on
PYTHONPATH does that before gfxgate starts, so the console script, `main()` and the signal are the real ones.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.signals import default_interrupts

ROOT = Path(__file__).resolve().parents[1]

FAULTS = textwrap.dedent("""
    import os, signal
    fault = os.environ.get("GFXGATE_TEST_FAULT")
    if fault:
        import gfxgate.targets as _targets

        def catalog(*args, **kwargs):
            if fault == "crash":
                raise RuntimeError("injected fault\\nsecond line")
            os.kill(os.getpid(), signal.SIGINT)
            raise AssertionError("SIGINT did not interrupt")

        _targets.catalog = catalog
""")


def readme_exit_codes() -> dict[int, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1].split("\n\n", 2)[1]
    return {int(m[1]): m[2] for m in re.finditer(r"^\| (\d+) \| (.+?) \|$", table, re.M)}


@pytest.fixture()
def env(tmp_path, _isolated_cache):
    """The caller's environment without GFXGATE_* settings; the test's own cache folder (tests/conftest.py
    ``_isolated_cache``, with what the session seeds in it); the fault injector on PYTHONPATH."""
    faults = tmp_path / "faults"
    faults.mkdir()
    (faults / "sitecustomize.py").write_text(FAULTS)
    out = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    out["GFXGATE_CACHE_DIR"] = str(_isolated_cache)
    out["PYTHONPATH"] = str(faults)
    return out


def git_repo_with_tag(path: Path) -> Path:
    run = lambda *a: subprocess.run(["git", "-C", str(path), *a], check=True, capture_output=True)  # noqa: E731
    path.mkdir()
    run("init", "-q")
    run("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "one")
    run("tag", "v1")
    return path


def scenario(code: int, tmp_path: Path, env: dict) -> tuple[list[str], dict]:
    """The command line (after `gfxgate`) and extra environment that must exit with ``code``."""
    if code == 0:
        return ["targets", "gfx900"], {}
    if code == 1:
        (tmp_path / "empty").mkdir()
        return ["samples", "--check", str(tmp_path / "empty")], {}
    if code == 2:
        return ["scan", "--target", "gfx9999"], {}
    if code == 3:
        (tmp_path / "rules").mkdir()
        (tmp_path / "rules" / "layers.yaml").write_text("a: [\n")
        return ["scan", "--target", "gfx900", "--offline", "--rules", str(tmp_path / "rules")], {}
    if code == 4:
        repo = git_repo_with_tag(tmp_path / "repo")
        return ["scan", "--target", "gfx900", "--offline", "--source", f"ollama={repo}", "--ref", "ollama=v9"], {}
    if code == 5:
        return ["scan", "--target", "gfx900", "--live", "--offline", "--ref", "ollama=v0.12.3"], {}
    if code == 6:
        return ["artifacts", str(tmp_path / "no-such-file")], {}
    if code == 70:
        return ["targets", "gfx900"], {"GFXGATE_TEST_FAULT": "crash"}
    if code == 130:
        return ["targets", "gfx900"], {"GFXGATE_TEST_FAULT": "sigint"}
    raise AssertionError(f"no scenario for exit code {code}: add one")


EXPECTED_STDERR = {
    0: None,
    1: "stale samples",
    2: "unknown GPU target",
    3: "layers.yaml:2: invalid YAML",
    4: "unknown tag or ref 'v9'",
    5: "this run is offline (it clones nothing)",
    6: "no such file",
    70: "gfxgate: internal error: RuntimeError",
    130: "gfxgate: interrupted",
}


def test_the_table_has_the_codes_the_program_uses():
    from gfxgate.errors import ExitCode

    assert sorted(readme_exit_codes()) == sorted({int(c) for c in ExitCode} | {1})


# 129 and 143 need a sweep signalled mid-run: tests/sweep/test_hostile_processes.py::test_6_sigterm_or_sighup_during_a_sweep_stops_it_like_ctrl_c
@pytest.mark.parametrize("code", sorted(c for c in readme_exit_codes() if c not in (129, 141, 143)))
def test_every_row_of_the_exit_code_table(code, gfxgate_exe, tmp_path, env):
    args, extra = scenario(code, tmp_path, env)
    proc = subprocess.run(
        [gfxgate_exe, *args],
        env={**env, **extra},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=default_interrupts,
    )  # Ctrl-C as from a terminal
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    if EXPECTED_STDERR[code]:
        assert EXPECTED_STDERR[code] in proc.stderr, proc.stderr
    if code == 70:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr  # one line, message flattened


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e9", "99999999999999999999"])
def test_a_bad_git_timeout_is_a_usage_error(value, gfxgate_exe, tmp_path, env):
    """GFXGATE_GIT_TIMEOUT that is not a whole number of seconds (or overflows the poll timeout) is exit 2, one line."""
    repo = git_repo_with_tag(tmp_path / "repo")
    proc = subprocess.run(
        [gfxgate_exe, "scan", "--target", "gfx900", "--offline", "--source", f"ollama={repo}"],
        env={**env, "GFXGATE_GIT_TIMEOUT": value},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert f"GFXGATE_GIT_TIMEOUT={value!r}" in proc.stderr.splitlines()[0], proc.stderr


def test_internal_error_traceback_only_with_debug(gfxgate_exe, tmp_path, env):
    env = {**env, "GFXGATE_TEST_FAULT": "crash"}
    for argv, extra in ((["--debug", "targets", "gfx900"], {}), (["targets", "gfx900"], {"GFXGATE_DEBUG": "1"})):
        proc = subprocess.run([gfxgate_exe, *argv], env={**env, **extra}, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 70
        assert "Traceback" in proc.stderr and "injected fault" in proc.stderr
        assert proc.stderr.rstrip().splitlines()[-1].startswith("gfxgate: internal error: RuntimeError")


def test_closed_pipe_is_quiet_141(gfxgate_exe, tmp_path, env):
    """`gfxgate targets | head -1` where the reader is gone before gfxgate writes: 141 and no traceback."""
    assert 141 in readme_exit_codes()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before gfxgate writes a byte
    try:
        proc = subprocess.run(
            [gfxgate_exe, "targets"], env=env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60
        )
    finally:
        os.close(write)
    assert proc.returncode == 141, proc.stderr
    assert proc.stderr == ""


def test_head_reads_one_line_and_gfxgate_exits_0_or_141(gfxgate_exe, env):
    shell = f"'{gfxgate_exe}' targets | head -1; echo \"rc=${{PIPESTATUS[0]}}\""
    proc = subprocess.run(["bash", "-c", shell], env=env, capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and lines[1] in ("rc=0", "rc=141"), proc
    assert proc.stderr == ""


def test_console_script_is_this_tree():
    """The installed script must run this checkout (an editable install), or the tests above prove nothing."""
    probe = subprocess.run(
        [sys.executable, "-c", "import gfxgate; print(gfxgate.__file__)"], capture_output=True, text=True, check=True
    )
    assert Path(probe.stdout.strip()).resolve().is_relative_to(ROOT)
