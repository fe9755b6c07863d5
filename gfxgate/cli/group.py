"""The click group of the ``gfxgate`` command line: sub-commands imported on first use (``COMMANDS``)."""

from __future__ import annotations

import importlib
import importlib.util

import click

from gfxgate import __version__
from gfxgate.cli import _DEBUG, COMMANDS


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


def _set_debug(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    _DEBUG["on"] = bool(value)
    return value


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gfxgate")
@click.option(
    "--debug",
    is_flag=True,
    envvar="GFXGATE_DEBUG",
    is_eager=True,
    expose_value=False,
    callback=_set_debug,
    help="Show the traceback of an internal error (exit code 70).",
)
def cli() -> None:
    """gfxgate: what really stands between an AMD GPU target and a working local LLM.

    Every claim carries its evidence (repo@tag:path:line, file@offset, or a sweep run id);
    "unknown" is an honest answer.
    """
