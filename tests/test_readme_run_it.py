"""The README's first command, as a person types it on a fresh Debian machine (issue 29): Debian's own python3
refuses `pip install .` (PEP 668), so the README installs into a virtual environment; this runs its lines with
Debian's /usr/bin/python3 in an empty HOME, from a copy of the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import CHECKOUT

DEBIAN_PYTHON = Path("/usr/bin/python3")


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
