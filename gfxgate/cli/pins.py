"""`gfxgate pins bump NAME TAG` / `gfxgate pins show`: move a pin and regenerate the snapshot."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import source_options
from gfxgate.cli.io import echo  # message lines: their controls made visible
from gfxgate.report.text import inert


@click.group()
def pins() -> None:
    """The upstream pins (rules/pins.toml)."""


@pins.command("bump")
@click.argument("name")
@click.argument("tag")
@click.option(
    "--pins",
    "pins_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The pins file (default: rules/pins.toml of the repository around the current folder).",
)
@click.option(
    "--snapshot",
    "snapshot_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Snapshot to regenerate (default: snapshots/pins.json next to the pins file).",
)
@click.option("--no-snapshot", is_flag=True, help="Only edit the pins file.")
@source_options(refs=False)
def bump_cmd(name, tag, pins_path, snapshot_path, no_snapshot, sources, offline) -> None:
    """Set NAME's pin to TAG (comments kept) and regenerate the snapshot, as `gfxgate snapshot build` does."""
    from gfxgate.app.pins import PinsBumpRequest, bump
    from gfxgate.sources.resolve import parse_assignments

    result = bump(
        PinsBumpRequest(
            name, tag, pins_path, snapshot_path, no_snapshot, parse_assignments(sources, "--source"), offline
        )
    )
    echo(
        f"gfxgate: {name}: {result.old_ref} -> {result.new_ref} ({(result.commit or '')[:12]}) in {result.pins_path}",
        err=True,
    )
    if result.snapshot_path is not None:
        states = ", ".join(f"{k}: {v}" for k, v in sorted(result.rule_states.items()))
        echo(f"gfxgate: wrote {result.snapshot_path} (rules {states})", err=True)


@pins.command("show")
@click.option("--pins", "pins_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
def show_cmd(pins_path) -> None:
    """The pinned repositories and tags."""
    from gfxgate.app.pins import show

    for name, pin in sorted(show(pins_path).sources.items()):
        click.echo(inert(f"{name:14} {pin.ref:12} {pin.url}"))  # pins.toml is a file a pull request changes
