"""`gfxgate schema [NAME]`: print the JSON Schema of an output or data file."""

from __future__ import annotations

import click

from gfxgate.jsontext import dumps

# every schema is a file gfxgate/schemas/NAME.schema.json (loaded with gfxgate.datafiles.load_schema)
FILES = ("matrix", "gates", "pins", "targets", "layers", "snapshot", "workarounds", "routes", "timeline", "trace", "trace-result",
         "diagnose", "messages", "artifacts", "sweep-worklog", "sweep-report", "doctor")


@click.command()
@click.argument("name", default="matrix", type=click.Choice(FILES))
def schema(name: str) -> None:
    """Print a JSON Schema: `matrix` (scan's JSON, default), `artifacts`, `sweep-worklog`, `sweep-report`, or a rules file's."""
    if name == "gates":  # composed: the rule shell plus each matcher's params schema
        from gfxgate.datafiles import load_schema

        click.echo(dumps(load_schema(name), ensure_ascii=False))
        return
    from gfxgate.resources import schemas_dir

    click.echo((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"), nl=False)
