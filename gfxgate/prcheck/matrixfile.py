"""A gate matrix read from a file (``gfxgate scan --format json -o FILE``) for `gfxgate diff`: bounded, decoded and
checked against the shipped schema before the diff looks at it.

Apart from :mod:`gfxgate.prcheck.diff` so that what imports the diff's classification (`history`, `timeline`: even the
snapshot's `timeline -t gfx900` reads :mod:`gfxgate.history.walk`) does not import jsonschema (40-100 ms of start-up);
only `diff` reads matrix files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from gfxgate.datafiles import load_schema
from gfxgate.errors import InputError
from gfxgate.fsio import read_input
from gfxgate.jsontext import JsonInputError, loads_input

MAX_REPORT_BYTES = 64 << 20  # a gate matrix is a few hundred KB


def load_matrix(path: Path) -> dict[str, Any]:
    """A gate matrix JSON file, validated against the shipped schema; :class:`InputError` otherwise."""
    try:  # a regular file only (a FIFO would block, /dev/zero never ends), of bounded size
        data = loads_input(read_input(path, limit=MAX_REPORT_BYTES))
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except JsonInputError as exc:
        raise InputError(f"{path}: not a gfxgate gate matrix: {exc}") from None
    except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError
        raise InputError(f"{path}: not JSON: {exc}") from None
    errors = list(jsonschema.Draft202012Validator(load_schema("matrix")).iter_errors(data))
    if errors:
        first = jsonschema.exceptions.best_match(errors)
        where = "/".join(str(p) for p in first.absolute_path) or "(top)"
        raise InputError(
            f"{path}: not a gfxgate gate matrix ({where}: {first.message})",
            hint="make it with `gfxgate scan --format json -o FILE`",
        )
    targets = data["targets"]
    for layer in data["layers"]:  # one cell per layer and target, as scan writes it (the diff looks each one up)
        have = [cell["target"] for cell in layer["cells"]]
        missing = [t for t in targets if t not in have]
        extra = [t for t in have if t not in targets] or [t for t in set(have) if have.count(t) > 1]
        if missing or extra:
            what = (
                f"no cell for target {missing[0]}"
                if missing
                else f"a cell for {extra[0]!r} that is not one of its targets or twice"
            )
            raise InputError(
                f"{path}: not a gfxgate gate matrix (layer {layer['id']}: {what})",
                hint="make it with `gfxgate scan --format json -o FILE`",
            )
    return data
