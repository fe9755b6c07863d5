"""The ``gfxgate`` command line: one module per sub-command, imported only when it runs.

Errors derived from :class:`gfxgate.errors.GfxgateError` become one message on stderr and the
exit code the error carries (see the README's exit-code table); Ctrl-C exits 130; a closed stdout
(``gfxgate targets | head -1``) exits 141 quietly; any other exception is a bug: one line
``gfxgate: internal error: …`` and exit 70, the traceback only with ``--debug`` (or GFXGATE_DEBUG=1).

``main`` builds the click group (:mod:`gfxgate.cli.group`), which parses, validates and explains every command
line; each command's module is imported only when that command runs.
"""

from __future__ import annotations

import os
import sys

# command name -> (module, attribute, one-line help shown by `gfxgate --help` without importing it)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "scan": ("gfxgate.cli.scan", "scan", "The gate matrix: per layer and target, status + evidence + remedy."),
    "targets": ("gfxgate.cli.targets", "targets", "List known GPU targets, or explain one."),
    "snapshot": ("gfxgate.cli.snapshot", "snapshot", "Build or inspect the embedded evidence snapshot."),
    "schema": ("gfxgate.cli.schema", "schema", "Print the JSON Schema of gfxgate's JSON output."),
    "samples": ("gfxgate.cli.samples", "samples", "Regenerate the sample reports under samples/."),
    "artifacts": ("gfxgate.cli.artifacts", "artifacts", "Which GPU code is really installed (ELF, bundles, rocBLAS)."),
    "trace": ("gfxgate.cli.trace", "trace", "Follow an option from the Python client into llama.cpp."),
    "sweep": ("gfxgate.cli.sweep", "sweep", "Backend x num_gpu runtime sweep against Ollama servers."),
    "diff": (
        "gfxgate.cli.diff",
        "diff",
        "What flipped between two gate matrices (exit 1 on a --fail-on-target regression).",
    ),
    "history": ("gfxgate.cli.history", "history", "The release tags at which each layer's status changed."),
    "check": (
        "gfxgate.cli.check",
        "check",
        "PR check: gate-matrix diff of the pins at a git ref vs. the working tree.",
    ),
    "pins": ("gfxgate.cli.pins", "pins", "Show the upstream pins, or bump one and rebuild the snapshot."),
    "workarounds": (
        "gfxgate.cli.workarounds",
        "workarounds",
        "Documented workarounds, each checked against the pinned sources.",
    ),
    "timeline": (
        "gfxgate.cli.timeline",
        "timeline",
        "Every target × every release: the route at each (table, JSON, SVG, PNG).",
    ),
    "diagnose": ("gfxgate.cli.diagnose", "diagnose", "Which layer stopped this GPU, from your Ollama / llama.cpp log."),
    "doctor": (
        "gfxgate.cli.doctor",
        "doctor",
        "This machine: GPUs, installs, the service's environment, access, and the fix.",
    ),
    "fleet": (
        "gfxgate.cli.fleet",
        "fleet",
        "A Slurm cluster: doctor on every node in one table; the sweep as a job array.",
    ),
    "messages": (
        "gfxgate.cli.messages",
        "messages",
        "The log messages diagnose knows, each checked against the pinned sources.",
    ),
}


_DEBUG = {"on": False}  # set by the group's --debug option


def __getattr__(name: str):
    if name == "cli":  # ``from gfxgate.cli import cli``: the click group, built on first use
        from gfxgate.cli.group import cli

        return cli
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> None:
    from gfxgate.cli.io import echo
    from gfxgate.errors import ExitCode, GfxgateError

    try:
        try:
            args = list(sys.argv[1:] if argv is None else argv)
            from gfxgate.cli.group import cli

            # not cli.main(): it turns a closed pipe into exit 1, the code for "a check found something"
            with cli.make_context("gfxgate", args) as ctx:
                cli.invoke(ctx)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's shutdown
    except GfxgateError as exc:
        echo(f"gfxgate: error: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", None)  # errors.Terminated: SIGTERM / SIGHUP during a sweep
        if signum is not None:
            import signal

            echo(f"gfxgate: interrupted by {signal.Signals(signum).name}", err=True)
            sys.exit(128 + signum)
        echo("gfxgate: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(int(ExitCode.BROKEN_PIPE))
    except Exception as exc:  # noqa: BLE001 - the one place a bug becomes a line and exit code 70
        click = sys.modules.get("click")  # click's own exceptions exist only once click parsed the command line
        if click is not None and isinstance(exc, click.exceptions.Abort):
            echo("gfxgate: interrupted", err=True)
            sys.exit(int(ExitCode.INTERRUPTED))
        if click is not None and isinstance(exc, click.exceptions.Exit):
            sys.exit(exc.exit_code)
        if click is not None and isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if _DEBUG["on"] or os.environ.get("GFXGATE_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split()) or "(no message)"
        echo(
            f"gfxgate: internal error: {type(exc).__name__}: {message[:500]} "
            "(a bug: please report it; `gfxgate --debug …` shows the traceback)",
            err=True,
        )
        sys.exit(int(ExitCode.INTERNAL))
    sys.exit(0)


GC_GEN0 = 50_000  # the console script's first-generation threshold (CPython's default is 700)


def run() -> None:
    """The ``gfxgate`` console script: :func:`main`, with the cyclic garbage collector out of the way of a short
    process. Start-up allocates ~300,000 objects that all live until exit (modules, classes, the rules); collecting
    every 700 allocations walks them again and again, and the interpreter's last collection walks them all once more
    just to free memory the operating system is about to take back: together ~25 ms of a 150 ms ``diagnose``. So
    the first generation is collected every 50,000 allocations (garbage cycles are still found: memory stays
    bounded), and at exit every object is frozen (``gc.freeze``: left to the process's end). ``main`` itself, which
    the tests call in process, leaves the collector as it is.

    Kept because the speed budget needs it (issue 40 item 4; benchmarks/README.md): measured 2026-12-05 10:25 UTC,
    load 7.1, 11 interleaved rounds, median CPU (user + system) of the whole process, with / without this tuning:
    ``diagnose`` of the budget's 1,000-line log 162 / 185 ms, ``scan -t gfx900`` 132 / 149 ms (budget 150 ms each);
    instructions (valgrind) 780 / 824 M and 560 / 599 M: the rest of the difference is the collector walking memory.
    Measured again after the records' cheaper definition (gfxgate/records.py), 2026-12-05 12:40 UTC, instructions with /
    without: ``diagnose`` 552 / 600 M, ``scan -t gfx900`` 443 / 486 M (~45 M each, ~15 ms at ~3 M a millisecond,
    where ``diagnose`` is still above the budget's ~450 M): kept.

    It also marks the process as the console script (``gfxgate.console_script``): the records' compiled ``__init__``
    is then taken from the cache folder (gfxgate/records.py: ``keep_compiled_code``).
    """
    import gc

    import gfxgate

    gc.set_threshold(GC_GEN0, *gc.get_threshold()[1:])
    gfxgate.console_script = True  # type: ignore[attr-defined]  # records' compiled code kept (gfxgate/records.py)
    try:
        main()
    finally:
        gc.freeze()


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
