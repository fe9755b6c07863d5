"""The README's first command, as a person types it on a fresh Debian machine (issue 29): Debian's own python3
refuses `pip install .` (PEP 668), so the README installs into a virtual environment; this runs its lines with
Debian's /usr/bin/python3 in an empty HOME, from a copy of the checkout.

Where pip takes the packages from is the environment's business, as a mirror would be (issue 40: resolving against
the index was most of this test's 14 s of pip CPU): the README's line, unchanged, runs with ``PIP_NO_INDEX=1`` and
``PIP_FIND_LINKS`` naming a wheelhouse of every dependency and build requirement, downloaded from the index (the
environment's ``PIP_INDEX*``/``PIP_FIND*``, as before) at most once a day into the tests' user cache. pip still
resolves pyproject's requirements, builds the wheel in an isolated build environment and installs it; a
requirement the index cannot satisfy with wheels fails the download, and the test then installs from the index as
the README's reader would. ``PIP_COMPILE=0`` (pip's ``--no-compile``): the packages are not byte-compiled ahead of
their first import, which changes no behaviour of what is installed."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import CHECKOUT, file_lock

DEBIAN_PYTHON = Path("/usr/bin/python3")
WHEELS_MAX_AGE_S = 24 * 3600  # the wheelhouse is downloaded again after a day: new releases reach the test


def _run_it_lines() -> list[str]:
    readme = (CHECKOUT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Run it") :]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _debian_python() -> Path:
    managed = (
        subprocess.run(
            [str(DEBIAN_PYTHON), "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"],
            capture_output=True,
            text=True,
        )
        if DEBIAN_PYTHON.exists()
        else None
    )
    if managed is None or not (Path(managed.stdout.strip()) / "EXTERNALLY-MANAGED").exists():
        if os.environ.get("CI") == "true":
            pytest.fail("CI runs on Debian: /usr/bin/python3 should be Debian's externally managed python")
        pytest.skip("no Debian system python here")
    return DEBIAN_PYTHON


def _requirements() -> list[str]:
    """What `pip install .` needs from an index: the project's dependencies and its build requirements."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    data = tomllib.loads((CHECKOUT / "pyproject.toml").read_text(encoding="utf-8"))
    return [*data["project"]["dependencies"], *data["build-system"]["requires"]]


def _wheelhouse(env: dict[str, str]) -> Path | None:
    """A folder of wheels for every requirement (``pip download``, in the tests' user cache, by the requirements and
    this Python's version; again when a day old); None when the index cannot give them all as wheels."""
    import platformdirs

    requirements = _requirements()
    key = hashlib.sha256(json.dumps([list(sys.version_info[:2]), sorted(requirements)]).encode()).hexdigest()[:16]
    root = Path(platformdirs.user_cache_dir("gfxgate-tests")) / "readme-wheels"
    folder = root / key
    with file_lock(root / f"{key}.lock"):
        stamp = folder / ".complete"
        if stamp.exists() and time.time() - stamp.stat().st_mtime < WHEELS_MAX_AGE_S:
            return folder
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=root))
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--dest", str(staging)]
            + requirements,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            return None
        (staging / ".complete").write_text("\n".join(requirements) + "\n")
        shutil.rmtree(folder, ignore_errors=True)
        staging.rename(folder)
    return folder


@pytest.mark.slow
def test_the_readme_first_command_works_with_debians_python(tmp_path):
    python = _debian_python()
    lines = _run_it_lines()
    assert lines[0] == "sudo apt-get install -y python3-venv"  # what it needs from the system, said first
    assert subprocess.run([str(python), "-c", "import ensurepip"], capture_output=True).returncode == 0, (
        "python3-venv is not installed (.ci/run installs it)"
    )
    source = tmp_path / "gfxgate"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=CHECKOUT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (CHECKOUT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(CHECKOUT / name, source / name)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(python)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
    }
    env.update(
        {k: v for k, v in os.environ.items() if k.startswith(("PIP_INDEX", "PIP_EXTRA", "PIP_TRUSTED", "PIP_FIND"))}
    )
    wheels = _wheelhouse(env)
    if wheels is not None:
        env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)})
    env["PIP_COMPILE"] = "0"
    # what the README warns about: Debian's python refuses a plain pip install
    refused = subprocess.run(
        ["python3", "-m", "pip", "install", "."], cwd=source, env=env, capture_output=True, text=True, timeout=300
    )
    assert refused.returncode != 0 and "externally-managed-environment" in refused.stderr + refused.stdout
    done = subprocess.run(["bash", "-c", lines[1]], cwd=source, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    report = done.stdout[done.stdout.index("# gfxgate gate matrix: gfx900") :]  # after pip's own lines; piped: Markdown
    assert "**The answer**" in report
    assert (home / ".local" / "share" / "gfxgate" / "bin" / "gfxgate").exists()
