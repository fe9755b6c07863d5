"""The ``gfxgate`` command line: one module per sub-command, imported only when it runs.

Errors derived from :class:`gfxgate.errors.GfxgateError` become one message on stderr and the
exit code the error carries (see the README's exit-code table); Ctrl-C exits 130; a closed stdout
(``gfxgate targets | head -1``) exits 141 quietly; any other exception is a bug: one line
``gfxgate: internal error: …`` and exit 70, the traceback only with ``--debug`` (or GFXGATE_DEBUG=1).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import click

from gfxgate import __version__

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
    "diff": ("gfxgate.cli.diff", "diff", "What flipped between two gate matrices (exit 1 on a --fail-on regression)."),
    "history": ("gfxgate.cli.history", "history", "The release tags at which each layer's status changed."),
    "check": ("gfxgate.cli.check", "check", "PR check: gate-matrix diff of the pins at a git ref vs. the working tree."),
    "pins": ("gfxgate.cli.pins", "pins", "Bump a pin in rules/pins.toml and regenerate the snapshot."),
    "workarounds": ("gfxgate.cli.workarounds", "workarounds", "Documented workarounds, each checked against the pinned sources."),
    "timeline": ("gfxgate.cli.timeline", "timeline", "Every target × every release: the route at each (table, JSON, SVG, PNG)."),
    "diagnose": ("gfxgate.cli.diagnose", "diagnose", "Which layer stopped this GPU, from your Ollama / llama.cpp log."),
    "messages": ("gfxgate.cli.messages", "messages", "The log messages diagnose knows, each checked against the pinned sources."),
}


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use, so `--help` stays instant."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name, (module, _, _) in COMMANDS.items() if _module_exists(module))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS or not _module_exists(COMMANDS[name][0]):
            return None
        module, attr, _ = COMMANDS[name]
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][2]) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _module_exists(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


_DEBUG = {"on": False}


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    _DEBUG["on"] = bool(value)
    return value


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gfxgate")
@click.option("--debug", is_flag=True, envvar="GFXGATE_DEBUG", is_eager=True, expose_value=False,
              callback=_set_debug, help="Show the traceback of an internal error (exit code 70).")
def cli() -> None:
    """gfxgate: what really stands between an AMD GPU target and a working local LLM.

    Every claim carries its evidence (repo@tag:path:line, file@offset, or a sweep run id);
    "unknown" is an honest answer.
    """


def main(argv: list[str] | None = None) -> None:
    from gfxgate.errors import ExitCode, GfxgateError

    try:
        try:
            # not cli.main(): it turns a closed pipe into exit 1, the code for "a check found something"
            args = list(sys.argv[1:] if argv is None else argv)
            with cli.make_context("gfxgate", args) as ctx:
                cli.invoke(ctx)
        finally:
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's shutdown
    except GfxgateError as exc:
        click.echo(f"gfxgate: error: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("gfxgate: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        _silence_stdout()
        sys.exit(int(ExitCode.BROKEN_PIPE))
    except Exception as exc:  # noqa: BLE001 - the one place a bug becomes a line and exit code 70
        if _DEBUG["on"] or os.environ.get("GFXGATE_DEBUG", "") not in ("", "0"):
            import traceback

            traceback.print_exc()
        message = " ".join(str(exc).split()) or "(no message)"
        click.echo(f"gfxgate: internal error: {type(exc).__name__}: {message[:500]} "
                   "(a bug: please report it; `gfxgate --debug …` shows the traceback)", err=True)
        sys.exit(int(ExitCode.INTERNAL))
    sys.exit(0)


def _silence_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot raise again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
