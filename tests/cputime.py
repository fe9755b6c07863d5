"""CPU time, not wall-clock time, for the suite's speed bounds (issue 40): a busy neighbour (another xdist worker, a
second job on the machine) stretches wall time, not the CPU seconds a computation takes.

    with cpu_time() as spent:
        work()
    assert spent.seconds < 2.0

``seconds`` is the user + system time of this process (all its threads) and of the child processes it waited for
while the block ran (``resource.getrusage(RUSAGE_CHILDREN)``: a subprocess counts once it has exited)."""

from __future__ import annotations

import contextlib
import resource
from collections.abc import Iterator
from dataclasses import dataclass


def _now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class Spent:
    seconds: float = 0.0


@contextlib.contextmanager
def cpu_time() -> Iterator[Spent]:
    spent = Spent()
    start = _now()
    try:
        yield spent
    finally:
        spent.seconds = _now() - start
