"""The rules cache a test starts with (issue 40: the suite's time).

Every test gets a cache folder of its own (``_isolated_cache`` in tests/conftest.py), so no test sees what another
left. An empty folder, though, made every gfxgate process and in-process command of every test read, parse and
schema-check the shipped rules again (about 0.3 s of CPU each, several hundred times a run). The files a new user's
first run writes are the same for every test: the run builds them once, in a process of its own
(``python -m tests.cacheseed FOLDER``, with nothing but the seed folder as its cache), and each test's folder starts
as a copy of them — what a user's second run sees. A test about the cache itself (a first run, a cache that is
missing, damaged or foreign) asks for an empty folder with ``@pytest.mark.empty_cache``.

The seed holds only the cache's own files (``rules-N.msgpack`` and its side files, the console script's
``records.marshal``), never clones (``repos/``) or locks; an entry is the data of the very bytes its key hashes (gfxgate/datacache.py), so a copy cannot serve a test
anything the shipped files would not give it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[1]

# What a user's first runs read: each command's rules, messages, snapshots and timelines (AMD, NVIDIA, Windows).
COMMANDS: tuple[tuple[str, ...], ...] = (
    ("scan", "-t", "gfx900"),
    ("scan", "-t", "gfx900", "--format", "json"),
    ("scan", "-t", "sm_61", "--format", "md"),
    ("scan", "-t", "gfx1031", "--os", "windows"),
    ("timeline", "-t", "gfx900,sm_61"),
    ("timeline", "-t", "gfx1031", "--os", "windows"),
    ("workarounds", "-t", "gfx900"),
    ("workarounds", "-t", "gfx1031", "--os", "windows"),
    ("targets",),
    ("diagnose", "samples/logs/ollama-0.12.3-override-rocblas.log"),
    ("diagnose", "samples/logs/llama-server-11669-vulkan-device-none.log", "--format", "json"),
    ("doctor", "--root", "tests/doctor/fixtures"),
)
CONSOLE_COMMANDS = COMMANDS[0], COMMANDS[9], COMMANDS[-1]  # scan, diagnose, doctor


def build(folder: Path) -> None:
    """Run :data:`COMMANDS` in this process with ``folder`` as the only cache: what they store is the seed."""
    from tests.inprocess import gfxgate

    env = {k: v for k, v in os.environ.items() if not k.startswith("GFXGATE_")}
    env.update(GFXGATE_CACHE_DIR=str(folder), GFXGATE_NO_PROGRESS="1", LC_ALL="C.UTF-8")
    for args in COMMANDS:
        done = gfxgate(*args, env=env, cwd=str(CHECKOUT))
        if done.returncode not in (0, 1):  # 1: a verdict (diagnose's failure found, doctor's backend down)
            raise SystemExit(f"seeding the cache: gfxgate {' '.join(args)} exited {done.returncode}: {done.stderr}")
    # The console script keeps its records' compiled code in the cache (gfxgate/records.py, records.marshal), which
    # ``main`` in process never writes: the installed script's three start-up commands write it, so each test's
    # console-script process loads that code instead of compiling it (~35 M instructions a process).
    script = Path(sys.executable).with_name("gfxgate")
    for args in CONSOLE_COMMANDS:
        done = subprocess.run([str(script), *args], env=env, cwd=str(CHECKOUT), capture_output=True, text=True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"seeding the cache: gfxgate {' '.join(args)} exited {done.returncode}: {done.stderr}")


def files(seed: Path) -> list[Path]:
    """The seed's files that a test's cache folder gets: the cache's own files, not clones or locks."""
    return sorted(p for p in seed.iterdir() if p.is_file() and p.suffix in (".msgpack", ".marshal"))


def copy_into(seed_files: list[Path], cache: Path) -> None:
    for path in seed_files:
        shutil.copyfile(path, cache / path.name)


if __name__ == "__main__":
    build(Path(sys.argv[1]))
