"""Error classes and the documented exit codes.

The CLI catches only :class:`GfxgateError` and turns it into one clear line on stderr and the
exit code the error class carries. Everything else is a bug: one line `gfxgate: internal error: …` and exit
code 70 (the traceback with `gfxgate --debug …` or GFXGATE_DEBUG=1).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1  # a check found what it was asked to fail on (e.g. `diff --fail-on-target`)
    USAGE = 2  # click's own code for bad options; also unknown targets, bad --ref syntax
    RULES = 3  # a rule, pin or schema file is invalid
    SOURCE = 4  # a source cannot be read: unknown tag, missing file, broken repository
    NETWORK = 5  # a remote cannot be reached (or --offline forbids it)
    INPUT = 6  # an input file (worklog, JSON report, binary) is unreadable or invalid
    INTERNAL = 70  # a bug: an unexpected exception (sysexits EX_SOFTWARE); `--debug` shows the traceback
    HANGUP = 129  # SIGHUP during a sweep (128 + SIGHUP), handled like Ctrl-C
    INTERRUPTED = 130  # Ctrl-C
    TERMINATED = 143  # SIGTERM during a sweep (128 + SIGTERM), handled like Ctrl-C
    BROKEN_PIPE = 141  # the reader of stdout went away (128 + SIGPIPE, what `set -o pipefail` sees from git or grep)


class GfxgateError(Exception):
    """Base class of every error the CLI reports without a traceback."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n  hint: {self.hint}"


class UsageError(GfxgateError):
    exit_code = ExitCode.USAGE


class TargetError(UsageError):
    """An unknown or malformed GPU target id."""


class RuleError(GfxgateError):
    """A rule, pin, target or schema file is invalid (carries file:line where known)."""

    exit_code = ExitCode.RULES


class SourceError(GfxgateError):
    """A source cannot give what was asked: unknown tag, missing file, broken cache.

    ``source`` names the source that could not be read when it is known (``llama-cpp`` when the tag ollama's
    LLAMA_CPP_VERSION names cannot be read), so a report can say once per source how to supply it.
    """

    exit_code = ExitCode.SOURCE

    def __init__(self, message: str, *, hint: str | None = None, source: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.source = source


class NetworkError(SourceError):
    """A remote could not be reached, or `--offline` forbids reaching it."""

    exit_code = ExitCode.NETWORK


class InputError(GfxgateError):
    """A user-supplied input file is unreadable or invalid."""

    exit_code = ExitCode.INPUT


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP while a sweep runs: it stops like on Ctrl-C (the cell's server stopped, the worklog
    kept), then gfxgate exits 128 + the signal, as a shell reports a process that signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
