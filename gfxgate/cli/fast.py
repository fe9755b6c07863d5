"""The command lines gfxgate runs without click: importing click and building its group costs about a fifth of
a warm ``gfxgate artifacts FILE --format json`` (README, Speed), the command a user runs over folder after
folder.

:func:`fast_command` takes a command line only when every word is one whose meaning is certain — a known
option in its plain form (``--jobs 4``, ``--jobs=4``, ``-j 4``), a valid value, a path click would take as
given — and returns what to run; for anything else (``--help``, ``-j4``, a bad value, a repeated option,
``--``, an unknown word) it returns None and click parses, validates and explains the line as always. So the
fast path never decides an error or a help text, and the values it passes are the ones click would:
tests/artifacts/test_cli_fast.py compares both parsers over every line of up to three words from a
vocabulary of good and bad ones, and the options against the click command's declaration.
"""

from __future__ import annotations

import os
import stat
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from pathlib import Path

FORMATS = ("md", "json", "text")  # gfxgate.cli.common.format_option's default choices
FORMAT_ENV = "GFXGATE_FORMAT"
JOBS = (1, 64)  # artifacts --jobs: click.IntRange(1, 64)

# artifacts: option word -> parameter name
_FLAGS = {"--kernels": "kernels", "--sha256": "sha256"}
_VALUES = {"--target": "target_values", "-t": "target_values", "--jobs": "jobs", "-j": "jobs", "--format": "fmt",
           "--output": "output", "-o": "output"}


def fast_command(args: list[str]) -> Callable[[], None] | None:
    """What to run for ``gfxgate ARGS`` without click, or None (click parses the line)."""
    if not args or args[0] != "artifacts":
        return None
    options = parse_artifacts(args[1:])
    if options is None:
        return None
    from gfxgate.artifacts.command import run

    return lambda: run(**options)


def parse_artifacts(words: list[str]) -> dict[str, Any] | None:
    """The parameters of ``gfxgate artifacts WORDS`` as click would pass them, or None when click must decide."""
    from pathlib import Path  # here, not at import: every command line passes through fast_command
    paths: list[Path] = []
    targets: list[str] = []
    given: dict[str, Any] = {}
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-"):
            if not _plain_path(word, dir_ok=True):
                return None
            paths.append(Path(word))
            continue
        name, eq, value = word.partition("=")
        if name in _FLAGS and not eq and _FLAGS[name] not in given:
            given[_FLAGS[name]] = True
            continue
        if name not in _VALUES or (eq and not name.startswith("--")):
            return None  # an unknown word, a help option, "--", "-", a short option with "=" (click: "=value")
        if not eq:
            if i >= len(words) or words[i].startswith("-"):
                return None
            value = words[i]
            i += 1
        param = _VALUES[name]
        if param == "target_values":
            targets.append(value)
            continue
        if param in given:
            return None  # the last of a repeated option wins in click; not guessed here
        converted = _convert(param, value)
        if converted is None:
            return None
        given[param] = converted
    fmt = given.get("fmt") or os.environ.get(FORMAT_ENV) or "md"
    if fmt not in FORMATS:
        return None
    return {"paths": tuple(paths), "target_values": tuple(targets), "kernels": given.get("kernels", False),
            "sha256": given.get("sha256", False), "jobs": given.get("jobs"), "fmt": fmt, "output": given.get("output")}


def _convert(param: str, value: str) -> Any:
    if param == "jobs":
        try:
            jobs = int(value)
        except ValueError:
            return None
        return jobs if JOBS[0] <= jobs <= JOBS[1] else None
    if param == "fmt":
        return value if value in FORMATS else None
    from pathlib import Path

    return Path(value) if _plain_path(value, dir_ok=False) else None  # output


def _plain_path(value: str, *, dir_ok: bool) -> bool:
    """Whether click.Path (not required to exist, readable) takes ``value`` as given: absent, or present and
    readable (and not a folder where ``dir_ok`` is False)."""
    try:
        st = os.stat(value)
    except OSError:
        return True
    except ValueError:  # a NUL in the path
        return False
    return (dir_ok or not stat.S_ISDIR(st.st_mode)) and os.access(value, os.R_OK)
