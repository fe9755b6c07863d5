"""`gfxgate schema [NAME]`: print the JSON Schema of an output or data file."""

from __future__ import annotations

import click

from gfxgate.app.schema import FILES


@click.command()
@click.argument("name", default="matrix", type=click.Choice(FILES))
def schema(name: str) -> None:
    """Print a JSON Schema: `matrix` (scan's JSON, default), `artifacts`, `sweep-worklog`, `sweep-report`, or a rules file's."""
    from gfxgate.app.schema import schema as run

    click.echo(run(name), nl=False)
