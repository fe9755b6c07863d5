"""The GPU tools a sweep asks for one-off host facts: one table of probes, each run bounded (``host.proc``).

A probe is a name, its argument list and whether it answers JSON. A missing tool, a failure or a tool past its
limit becomes a problem text, never an exception: a host without ROCm or Vulkan tools still sweeps.
"""

from __future__ import annotations

import shutil
from typing import Sequence

from gfxgate.host import proc
from gfxgate.records import dataclass

TOOL_TIMEOUT_S = 20.0
MAX_TOOL_OUTPUT = 1 << 20  # bytes of stdout (and of stderr) read from a tool; it is killed past them


@dataclass(frozen=True)
class Probe:
    name: str
    argv: tuple[str, ...]
    json: bool = False


PROBES: tuple[Probe, ...] = (
    Probe("rocm-smi", ("rocm-smi", "--showproductname", "--showmeminfo", "vram", "--json"), json=True),
    Probe("amd-smi", ("amd-smi", "static", "--asic", "--json"), json=True),
    Probe(
        "nvidia-smi",
        ("nvidia-smi", "--query-gpu=name,driver_version,memory.total,memory.used,compute_cap", "--format=csv"),
    ),
    Probe("vulkaninfo", ("vulkaninfo", "--summary")),
)


def run_tool(argv: Sequence[str], timeout: float = TOOL_TIMEOUT_S) -> tuple[int | None, str, str]:
    """Run a tool without a shell; (returncode, stdout, problem) with returncode None when it did not run or
    did not finish."""
    exe = shutil.which(argv[0])
    if exe is None:
        return None, "", f"{argv[0]} is not installed (not on PATH)"
    try:
        done = proc.run_bounded([exe, *argv[1:]], timeout=timeout, max_output=MAX_TOOL_OUTPUT)
    except OSError as exc:
        return None, "", f"{argv[0]} could not run: {exc.strerror or exc}"
    if done.timed_out:
        return None, "", f"{argv[0]} did not finish within {timeout:g} s"
    problem = ""
    if done.returncode != 0 and not done.over_budget:
        err = " ".join(_text(done.stderr).split())[:200]
        problem = f"{argv[0]} exited with status {done.returncode}" + (f": {err}" if err else "")
    return 0 if done.over_budget else done.returncode, _text(done.stdout), problem


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
