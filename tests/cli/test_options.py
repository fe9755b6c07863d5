"""The options every command reading upstream code shares are declared once (`cli/common.py: source_options`)."""

from __future__ import annotations

import re

import click

from gfxgate.cli import COMMANDS, cli
from gfxgate.cli.common import source_options

SHARED = ("ref", "sources", "offline", "online")
SOURCE_HELP = re.compile(
    r"Read NAME from another URL or a local clone/folder \((?:(?P<note>[^;]+); )?env: GFXGATE_SOURCE_<NAME>\)\."
)


def commands():
    """(name, command) of every command and sub-command."""
    ctx = click.Context(cli)
    todo = [(name, cli.get_command(ctx, name)) for name in COMMANDS]
    while todo:
        name, command = todo.pop()
        yield name, command
        if isinstance(command, click.Group):
            todo += [(f"{name} {sub}", command.get_command(ctx, sub)) for sub in command.list_commands(ctx)]


def test_source_ref_offline_options_are_the_shared_declaration():
    seen = []
    for name, command in commands():
        params = {p.name: p for p in command.params if p.name in SHARED}
        if not params:
            continue
        seen.append(name)
        assert "sources" in params, f"{name}: {sorted(params)} without --source"
        match = SOURCE_HELP.fullmatch(params["sources"].help or "")
        assert match, f"{name}: --source declared apart from source_options: {params['sources'].help!r}"
        shared = click.command()(
            source_options(lambda **_: None, refs="refs" in params, online="online" in params, note=match["note"] or "")
        )
        expected = {p.name: p.to_info_dict() for p in shared.params}
        assert {n: p.to_info_dict() for n, p in params.items()} == expected, name
    # every command that reads upstream code (and so takes --source)
    assert {"scan", "timeline", "snapshot timeline", "diagnose", "history", "check"} <= set(seen), seen
