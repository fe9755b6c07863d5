"""`gfxgate schema [NAME]`: print the JSON Schema of an output or data file."""

from __future__ import annotations

import click


@click.command()
@click.argument("name", default="matrix", type=click.Choice(["matrix", "gates", "pins", "targets", "layers", "snapshot"]))
def schema(name: str) -> None:
    """Print a JSON Schema: `matrix` (the JSON output of scan, default) or a rules file's."""
    from gfxgate.resources import schemas_dir

    click.echo((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"), nl=False)
