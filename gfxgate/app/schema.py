"""`schema(name) -> str`: the JSON Schema of an output or a data file, as text."""

from __future__ import annotations

# every schema is a file gfxgate/schemas/NAME.schema.json (loaded with gfxgate.datafiles.load_schema)
FILES = (
    "matrix",
    "gates",
    "pins",
    "targets",
    "layers",
    "snapshot",
    "workarounds",
    "routes",
    "timeline",
    "trace",
    "trace-result",
    "diagnose",
    "messages",
    "artifacts",
    "sweep-worklog",
    "sweep-report",
    "doctor",
    "installs",
    "runtime",
    "fleet-report",
    "fleet-node",
)


def schema(name: str) -> str:
    if name == "gates":  # composed: the rule shell plus each matcher's params schema
        from gfxgate.datafiles import load_schema
        from gfxgate.jsontext import dumps

        return dumps(load_schema(name), ensure_ascii=False) + "\n"
    from gfxgate.resources import schemas_dir

    return (schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8")
