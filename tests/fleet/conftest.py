"""A real one-host Slurm cluster (Debian's slurm-wlm: munged, slurmctld, one slurmd per node name) for the fleet
tests, started by tests/fleet/slurm_cluster.sh into a temporary folder and stopped after the module."""

from __future__ import annotations

import os
import random
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import require_tool

HERE = Path(__file__).parent
SCRIPT = HERE / "slurm_cluster.sh"
NODES = ("n1", "n2", "n3")


@dataclass(frozen=True)
class Cluster:
    folder: Path
    conf: Path
    nodes: tuple[str, ...]

    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf), "NO_COLOR": "1"}

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env(), timeout=timeout, check=False)


def _free_ports(count: int) -> int:
    """A base port with ``count`` free ports from it (127.0.0.1)."""
    for _ in range(200):
        base = random.randrange(20000, 60000 - count)
        socks = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                socks.append(sock)
                sock.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise RuntimeError("no free ports")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    for tool in ("munged", "slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo"):
        require_tool(tool)
    if os.geteuid() != 0:  # slurmd starts jobs as their user: a cluster of one user needs root for SlurmdUser
        message = "the test cluster's slurmd runs as root (SlurmdUser=root)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    folder = tmp_path_factory.mktemp("slurm")
    base = _free_ports(len(NODES) + 1)
    done = subprocess.run(
        ["bash", str(SCRIPT), "start", str(folder), str(len(NODES)), str(base)],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0:
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], check=False, timeout=60)
        pytest.fail(f"the test cluster did not start: {done.stdout}{done.stderr}")
    cluster = Cluster(folder, folder / "slurm.conf", NODES)
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = str(cluster.conf)  # gfxgate in this process and the ones it starts
    try:
        yield cluster
    finally:
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old
        subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], check=False, timeout=60)
