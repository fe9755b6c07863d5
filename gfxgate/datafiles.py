"""Loading the data files under rules/: YAML via safe_load, TOML via tomllib, JSON Schema checks.

Every error names the file and, where the parser or the schema can tell, the line. YAML is read with
libyaml's C loader where PyYAML has it; line marks are only composed when an error must be reported.
gfxgate's own shipped files are parsed and validated once and then come from :mod:`gfxgate.datacache`.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any

from gfxgate import datacache
from gfxgate.errors import InputError, RuleError
from gfxgate.resources import schemas_dir
from gfxgate.fsio import open_input
from gfxgate.jsontext import loads_input


def _node_lines(node, path: tuple = ()) -> dict[tuple, int]:
    """Map every JSON path in a composed YAML node tree to its 1-based line."""
    import yaml

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


def read_limited(path: Path, limit: int, what: str) -> bytes:
    """The bytes of a rules or pins file, checked before they are read: a regular file only (a FIFO would block,
    ``/dev/zero`` never ends), its size from ``fstat`` at most ``limit``, and at most ``limit + 1`` bytes read
    (a file growing meanwhile is refused too). So a 1.5 GB pins.toml costs a stat, not 1.5 GB of memory.
    ``what`` names the kind of file in the refusal ("a rules file")."""
    try:
        with open_input(path) as handle:
            size = os.fstat(handle.fileno()).st_size
            data = handle.read(limit + 1) if size <= limit else b""
    except InputError as exc:
        raise RuleError(exc.message) from None
    except OSError as exc:
        raise RuleError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if size > limit or len(data) > limit:
        raise RuleError(f"{path}: {max(size, len(data))} bytes; {what} may have at most {limit}")
    return data


def _read(path: Path) -> bytes:
    return read_limited(path, MAX_YAML_BYTES, "a rules file")


def read_rules(path: Path) -> bytes:
    """The bytes of a rules file, bounded as :func:`load_yaml` reads them."""
    return _read(path)


def load_yaml(path: Path, schema: str | None = None, raw: bytes | None = None) -> Any:
    """Read one YAML document with ``yaml.safe_load`` semantics and validate it against a schema (``raw``: its bytes
    as :func:`read_rules` read them, else read here)."""
    raw = _read(path) if raw is None else raw
    return datacache.cached(path, raw, "yaml", schema, lambda: _parse_yaml(path, raw, schema))


def load_yaml_entries(path: Path, schema: str, items: str) -> tuple[Any, list[int]]:
    """Like :func:`load_yaml`, and the 1-based line where each entry of the top-level list ``items`` starts
    (for messages and SARIF locations). The lines are cached with the data, so a shipped file is parsed once."""
    raw = _read(path)

    def parse() -> list:
        data = _parse_yaml(path, raw, schema)
        return [data, _entry_lines(raw.decode("utf-8"), items)]

    data, lines = datacache.cached(path, raw, f"yaml+lines:{items}", schema, parse)
    return data, lines


def _entry_lines(text: str, items: str) -> list[int]:
    import yaml

    try:
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        node = None  # loaded by the pure-Python parser only (see _yaml_error): entries are located at no line
    entries = (
        next((value for key, value in node.value if key.value == items), None)
        if isinstance(node, yaml.MappingNode)
        else None
    )
    return [item.start_mark.line + 1 for item in entries.value] if isinstance(entries, yaml.SequenceNode) else []


# A rules file is data a pull request can change (`gfxgate check` reads it): its cost must be bounded before
# anything builds, validates or walks it. The real files are at most a few thousand nodes, a dozen deep.
MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 64
MAX_YAML_ALIASES = 256
MAX_YAML_NODES = 200_000  # counted with every alias expanded: a "billion laughs" file stops here


def check_yaml_shape(path: Path | str, text: str) -> None:
    """Refuse YAML that is too large, too deep or expands too much through aliases, from the event stream
    (both of PyYAML's parsers are iterative, so this is linear in the text and never recurses).

    The event stream is libyaml's where PyYAML has it. Where libyaml refuses the text (newer libyaml refuses
    flow nesting past 1000 levels while scanning ahead, before the depth here is reached), the pure-Python
    parser's events are checked instead: the depth limit then holds whatever libyaml does, and a text that
    both refuse is reported here, with the pure-Python parser's line and words. A text that passes this check
    is at most MAX_YAML_DEPTH deep, so the recursive composers (C and pure-Python) never see more.
    """
    import yaml

    if len(text) > MAX_YAML_BYTES:
        raise RuleError(f"{path}: {len(text)} characters; a rules file may have at most {MAX_YAML_BYTES}")
    try:
        _check_events(path, yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        return
    except yaml.YAMLError:
        pass  # libyaml's refusal: the pure-Python parser below decides and words it
    try:
        _check_events(path, yaml.parse(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise _yaml_rule_error(path, exc) from None


def _line(event: Any) -> int:
    """An event's 1-based line; 0 where it has no mark (the parser marks every event)."""
    return event.start_mark.line + 1 if event.start_mark else 0


def _check_events(path: Path | str, events) -> None:
    import yaml

    depth = nodes = aliases = 0
    sizes: dict[str, int] = {}  # anchor -> expanded node count of the anchored node
    open_anchors: list[tuple[str | None, int]] = []
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                raise RuleError(f"{path}:{_line(event)}: more than {MAX_YAML_ALIASES} YAML aliases")
            nodes += sizes.get(event.anchor, 1) if event.anchor else 1
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise RuleError(f"{path}:{_line(event)}: nested deeper than {MAX_YAML_DEPTH} levels")
            nodes += 1
            open_anchors.append((event.anchor, nodes))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            anchor, start = open_anchors.pop()
            if anchor:
                sizes[anchor] = nodes - start + 1
        if nodes > MAX_YAML_NODES:
            raise RuleError(f"{path}:{_line(event)}: expands to more than {MAX_YAML_NODES} nodes (YAML aliases?)")


def _parse_yaml(path: Path, raw: bytes, schema: str | None) -> Any:
    import yaml

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}") from None
    check_yaml_shape(path, text)
    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        data = _yaml_error(path, text)  # the pure-Python loader words the error (and may accept the text)
    if schema is not None:
        validate(data, schema, path, functools.partial(_yaml_lines, text))
    return data


def _yaml_error(path: Path, text: str) -> Any:
    """Load with the pure-Python loader a text libyaml refused. Only called after :func:`check_yaml_shape`
    passed, so the text is at most MAX_YAML_DEPTH deep; RecursionError is still one line, whatever the parser."""
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise _yaml_rule_error(path, exc) from exc
    except RecursionError:
        raise RuleError(f"{path}: invalid YAML: nested too deeply") from None


def _yaml_rule_error(path: Path | str, exc: Exception) -> RuleError:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark else str(path)
    problem = getattr(exc, "problem", None) or str(exc)
    return RuleError(f"{where}: invalid YAML: {problem}")


def _yaml_lines(text: str) -> dict[tuple, int]:
    """Line of every JSON path in the document: composed only when an error is reported."""
    import yaml

    try:  # the same parser as the load: where libyaml and PyYAML disagree (fuzzing found some) no traceback
        node = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}  # the error is still reported, without a line
    return _node_lines(node) if node is not None else {}


def read_toml(path: Path) -> bytes:
    """The bytes of a pins or rules TOML file, bounded as :func:`load_toml` reads them."""
    return read_limited(path, MAX_YAML_BYTES, "a pins or rules file")


def load_toml(path: Path, schema: str | None = None, raw: bytes | None = None) -> dict:
    """``path``'s TOML (``raw``: its bytes as :func:`read_toml` read them, else read here), checked against
    ``schema``."""
    data = read_toml(path) if raw is None else raw
    return datacache.cached(path, data, "toml", schema, lambda: _parse_toml(path, data, schema))


def _parse_toml(path: Path, raw: bytes, schema: str | None) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib

    if len(raw) > MAX_YAML_BYTES:
        raise RuleError(f"{path}: {len(raw)} bytes; a pins or rules file may have at most {MAX_YAML_BYTES}")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: not UTF-8: byte 0x{raw[exc.start]:02x} at offset {exc.start}") from None
    except RecursionError:
        raise RuleError(f"{path}: invalid TOML: nested too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        raise RuleError(f"{path}: invalid TOML: {exc}") from exc
    if schema is not None:
        validate(data, schema, path, {})
    return data


def load_json(path: Path, raw: bytes, schema: str) -> Any:
    """Parse JSON already read by the caller and validate it; the caller words read/parse errors.

    Raises ``ValueError`` (``json.JSONDecodeError``, ``UnicodeDecodeError``) for the caller to report.
    """

    def parse() -> Any:
        data = loads_input(raw)  # too deep or a number too long: a ValueError too, never a RecursionError
        validate(data, schema, path, {})
        return data

    return datacache.cached(path, raw, "json", schema, parse)


@functools.cache
def load_schema(name: str) -> dict:
    schema = json.loads((schemas_dir() / f"{name}.schema.json").read_text(encoding="utf-8"))
    if name == "gates":  # each matcher's params schema lives in its module
        from gfxgate.matchers import gates_schema

        schema = gates_schema(schema)
    return schema


def validate(data: Any, schema: str, path: Path | str, lines) -> None:
    """Validate against a shipped schema; the first error is raised with file:line.

    ``lines`` maps JSON paths to lines, or is a function computing that map (called only on an error).
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema(schema))
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    if not errors:
        return
    error = jsonschema.exceptions.best_match(errors)
    where = tuple(error.absolute_path)
    if callable(lines):
        lines = lines()
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
