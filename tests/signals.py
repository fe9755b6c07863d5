"""Children that must feel a Ctrl-C: started with SIGINT and SIGQUIT at their defaults, as from a terminal.

A shell that runs the test suite as a background job (`pytest … &` in a script: no job control) starts it with
SIGINT and SIGQUIT ignored, and every child inherits that; Python then installs no KeyboardInterrupt handler and
a SIGINT does nothing (the child's /proc status shows SigIgn 0x1001006, SigCgt 0). gfxgate itself keeps an ignored
SIGINT ignored, as `nohup` and background jobs expect; the tests that check what Ctrl-C does start their child as
an interactive shell would.
"""

from __future__ import annotations

import contextlib
import signal


def default_interrupts() -> None:
    """``preexec_fn`` for subprocess: SIGINT and SIGQUIT back to their defaults in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@contextlib.contextmanager
def inherited_default(sig: int):
    """While the block runs, children started from this process get ``sig`` at its default even if this process
    ignores it (``nohup pytest``: SIGHUP ignored, and an ignored signal is inherited through fork and exec)."""
    previous = signal.getsignal(sig)
    if previous is not signal.SIG_IGN:
        yield
        return
    signal.signal(sig, signal.SIG_DFL)
    try:
        yield
    finally:
        signal.signal(sig, previous)
