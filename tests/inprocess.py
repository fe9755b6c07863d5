"""The gfxgate command line run in this process, as a test sees the installed script run (issue 40).

:func:`gfxgate` calls :func:`gfxgate.cli.main` (what the console script ``gfxgate.cli:run`` calls, less its garbage
collector tuning) and answers what :func:`subprocess.run` answers for ``[gfxgate, *args]`` with
``capture_output=True, text=True``: a :class:`subprocess.CompletedProcess` with the exit code, stdout and stderr.
Starting the script costs 0.12-0.4 s of CPU per call (an interpreter, its imports, the rules read again); in process
a call costs what the command computes.

What a new process would start from, each call starts from, and what the call changed is undone after it:

- the environment: ``env`` is the whole environment, as ``subprocess.run``'s ``env=`` (default: this process's);
  ``os.environ`` is restored afterwards, whatever the command set;
- the working folder (``cwd``), ``sys.argv``, ``sys.stdin`` (``input``, else empty), ``sys.stdout`` and
  ``sys.stderr`` (temporary files with a real file descriptor, not terminals, as the pipes of ``capture_output``),
  the handlers of every signal, the ``logging`` configuration, and the cli's ``--debug`` switch;
- every ``functools`` cache of gfxgate's modules is cleared before and after the call: several of them hold what
  the environment chose (the cache folder, ``GFXGATE_AMDGPU_IDS``, the prefilter); the rules are read again from
  gfxgate's rules cache, as a new process reads them.

The installed script stays for what needs a process: exit codes on signals, the console script itself, bounds that
need one (rlimits, a time or memory bound of the whole run) and tests whose point is the process (imports, start-up).
``tests/test_inprocess.py`` holds two calls in a row to the installed script's output.
"""

from __future__ import annotations

import contextlib
import functools
import io
import logging
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

# what CPython gives a process whose stdout and stderr are pipes, with LC_ALL=C.UTF-8 (the suite's locale)
_ENCODING = "utf-8"


def clear_caches() -> None:
    """Clear every ``functools.cache`` / ``lru_cache`` of the gfxgate modules imported so far."""
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "gfxgate" or name.startswith("gfxgate.")):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, functools._lru_cache_wrapper):  # noqa: SLF001 - the type of cache and lru_cache
                value.cache_clear()


@contextlib.contextmanager
def _restored_logging() -> Iterator[None]:
    loggers = [logging.getLogger()] + [
        logger for logger in logging.Logger.manager.loggerDict.values() if isinstance(logger, logging.Logger)
    ]
    saved = [(logger, list(logger.handlers), logger.level, logger.propagate, logger.disabled) for logger in loggers]
    disable = logging.root.manager.disable
    try:
        yield
    finally:
        for logger, handlers, level, propagate, disabled in saved:
            logger.handlers[:] = handlers
            logger.setLevel(level)
            logger.propagate, logger.disabled = propagate, disabled
        logging.disable(disable)


@contextlib.contextmanager
def _restored_signals() -> Iterator[None]:
    saved = {}
    for signum in signal.valid_signals():
        try:
            saved[signum] = signal.getsignal(signum)
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        for signum, handler in saved.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    signal.signal(signum, handler)


@contextlib.contextmanager
def _restored_environment(env: Mapping[str, str] | None) -> Iterator[None]:
    saved = dict(os.environ)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _exit_code(exc: SystemExit, stderr: io.TextIOBase) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=stderr)  # what the interpreter does with sys.exit("message")
    return 1


def _decode(data: bytes, text: bool) -> Any:
    if not text:
        return data
    # as subprocess.run(text=True) reads a pipe: the locale's encoding, universal newlines
    return io.TextIOWrapper(io.BytesIO(data), encoding=_ENCODING).read()


def gfxgate(
    *args: str | os.PathLike,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    input: str | bytes | None = None,
    text: bool = True,
    timeout: float | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess:
    """``gfxgate ARGS…`` in this process; what ``subprocess.run([gfxgate, *args], capture_output=True, text=text,
    env=env, cwd=cwd, input=input)`` answers. ``timeout`` is accepted and ignored (no wall-clock bound in process:
    bound CPU time or counted work instead)."""
    del timeout
    from gfxgate import cli

    argv = [os.fspath(a) for a in args]
    stdin_bytes = input.encode(_ENCODING) if isinstance(input, str) else (input or b"")
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_argv = list(sys.argv)
    saved_cwd = os.getcwd()
    debug = dict(cli._DEBUG)  # noqa: SLF001 - the --debug switch the group sets
    with (
        tempfile.TemporaryFile() as out_file,
        tempfile.TemporaryFile() as err_file,
        _restored_environment(env),
        _restored_signals(),
        _restored_logging(),
    ):
        stdout = io.TextIOWrapper(out_file, encoding=_ENCODING, errors="strict", newline="\n")
        stderr = io.TextIOWrapper(
            err_file, encoding=_ENCODING, errors="backslashreplace", newline="\n", line_buffering=True
        )
        stdin = io.TextIOWrapper(io.BytesIO(stdin_bytes), encoding=_ENCODING)
        clear_caches()
        try:
            if cwd is not None:
                os.chdir(cwd)
            sys.argv = ["gfxgate", *argv]
            sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
            try:
                cli.main(argv)
                code = 0  # main always exits; this is only reached if it one day returns
            except SystemExit as exc:
                code = _exit_code(exc, stderr)
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            sys.argv = saved_argv
            os.chdir(saved_cwd)
            cli._DEBUG.clear()  # noqa: SLF001
            cli._DEBUG.update(debug)  # noqa: SLF001
            clear_caches()
            for stream in (stdout, stderr):
                with contextlib.suppress(ValueError, OSError):
                    stream.flush()
        out_file.seek(0)
        err_file.seek(0)
        result = subprocess.CompletedProcess(
            ["gfxgate", *argv], code, _decode(out_file.read(), text), _decode(err_file.read(), text)
        )
        stdout.detach()  # the temporary files close with the block, not with these wrappers
        stderr.detach()
    if check:
        result.check_returncode()
    return result
