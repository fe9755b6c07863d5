"""The ``gfxgate`` command line: one module per sub-command, imported only when it runs.

Errors derived from :class:`gfxgate.errors.GfxgateError` become one message on stderr and the
exit code the error carries (see the README's exit-code table); Ctrl-C exits 130.
"""

from __future__ import annotations

import importlib
import importlib.util
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


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gfxgate")
def cli() -> None:
    """gfxgate: what really stands between an AMD GPU target and a working local LLM.

    Every claim carries its evidence (repo@tag:path:line, file@offset, or a sweep run id);
    "unknown" is an honest answer.
    """


def main(argv: list[str] | None = None) -> None:
    from gfxgate.errors import ExitCode, GfxgateError

    try:
        cli.main(args=argv, prog_name="gfxgate", standalone_mode=False)
    except GfxgateError as exc:
        click.echo(f"gfxgate: error: {exc}", err=True)
        sys.exit(int(exc.exit_code))
    except click.exceptions.Abort:
        click.echo("gfxgate: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except KeyboardInterrupt:
        click.echo("gfxgate: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(0)
