"""Loading the data files under rules/: YAML via safe_load, TOML via tomllib, JSON Schema checks.

Every error names the file and, where the parser or the schema can tell, the line.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from gfxgate.errors import RuleError
from gfxgate.resources import schemas_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib


def _node_lines(node: yaml.Node, path: tuple = ()) -> dict[tuple, int]:
    """Map every JSON path in a composed YAML node tree to its 1-based line."""
    lines = {path: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            sub = _node_lines(value, path + (key.value,))
            sub[path + (key.value,)] = key.start_mark.line + 1  # point at the key, not the value below it
            lines.update(sub)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines.update(_node_lines(item, path + (index,)))
    return lines


def load_yaml(path: Path, schema: str | None = None) -> Any:
    """Read one YAML document with ``yaml.safe_load`` semantics and validate it against a schema."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RuleError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc)
        raise RuleError(f"{where}: invalid YAML: {problem}") from exc
    if schema is not None:
        validate(data, schema, path, _node_lines(node) if node is not None else {})
    return data


def load_toml(path: Path, schema: str | None = None) -> dict:
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise RuleError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: invalid TOML: {exc}") from exc
    if schema is not None:
        validate(data, schema, path, {})
    return data


@functools.cache
def load_schema(name: str) -> dict:
    return json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))


def validate(data: Any, schema: str, path: Path | str, lines: dict[tuple, int]) -> None:
    """Validate against a shipped schema; the first error is raised with file:line."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(schema))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    where = tuple(error.absolute_path)
    line = None
    while line is None and True:
        line = lines.get(where)
        if not where:
            break
        where = where[:-1]
    dotted = "/".join(map(str, error.absolute_path)) or "(top level)"
    location = f"{path}:{line}" if line else str(path)
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    raise RuleError(f"{location}: {dotted}: {error.message}{more}")
