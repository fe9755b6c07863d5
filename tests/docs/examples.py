"""The examples of README.md and docs/*.md, found by their markers and checked against what gfxgate does now.

A page marks an example with an HTML comment (invisible on GitHub) on the line before it::

    <!-- check: KIND ARGS... -->

The example is the fenced block right after the marker, or, when the next line does not open a fence, every line up
to ``<!-- end check -->`` (a table, a Markdown excerpt with fences of its own). Kinds:

``file PATH``
    the fenced block is the whole text of PATH (a file of the checkout, e.g. ``samples/gfx900.txt``).
``lines PATH``
    every non-blank line of the example is a line of PATH (an excerpt of a sample).
``run ARGS... [; except PREFIX...]``
    ``gfxgate ARGS`` run in process from the checkout's root; the example's non-blank lines appear in its standard
    output in the same order (lines starting with an ``except`` prefix are left out: what needs an upstream clone).
``commands``
    every ``gfxgate ...`` command line of the fenced block names a command (and sub-command) gfxgate has, and every
    ``--option`` it uses is one of that command's options.
``ci``
    the fenced block's one line is in ``.ci/run`` (what CI runs).
``yaml``
    the fenced block is valid YAML.
``tested-by PATH``
    a test of its own checks the example (it needs fixtures built by code: a captured machine, compiled GPU code);
    PATH is that test file, which must name this page.

Blocks without a marker are not examples for this checker (pages of other topics may add their own); the pages listed
in ``MARKED_PAGES`` must mark every fenced block, so nothing they show goes unchecked.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MARKER = re.compile(r"^<!-- check: (?P<spec>.+?) -->\s*$")
END = "<!-- end check -->"
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```+|~~~+)")

KINDS = ("file", "lines", "run", "commands", "ci", "yaml", "tested-by")


@dataclass(frozen=True)
class Example:
    page: Path  # relative to ROOT
    line: int  # of the marker, 1-based
    kind: str
    args: tuple[str, ...]
    excepts: tuple[str, ...]
    text: str  # the fenced block's content, or the lines up to the end marker
    fenced: bool

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    def lines(self) -> list[str]:
        return [line for line in self.text.splitlines() if line.strip()]


def _fence_end(lines: list[str], start: int) -> int:
    """Index of the line closing the fence opened at ``lines[start]``."""
    opening = FENCE.match(lines[start])
    assert opening is not None
    fence = opening["fence"]
    for i in range(start + 1, len(lines)):
        stripped = lines[i].strip()
        if stripped.startswith(fence[0] * len(fence)) and stripped.strip(fence[0]) == "":
            return i
    raise AssertionError(f"unclosed fence at line {start + 1}")


def examples(page: Path) -> list[Example]:
    """The marked examples of ``page`` (a path relative to ROOT)."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    found = []
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        if marker is None:
            i += 1
            continue
        spec = marker["spec"]
        head, _, tail = spec.partition("; except ")
        kind, *args = shlex.split(head)
        assert kind in KINDS, f"{page}:{i + 1}: unknown kind of example {kind!r} (known: {', '.join(KINDS)})"
        excepts = tuple(shlex.split(tail)) if tail else ()
        if i + 1 < len(lines) and FENCE.match(lines[i + 1]):
            end = _fence_end(lines, i + 1)
            text, fenced, after = "\n".join(lines[i + 2 : end]) + "\n", True, end + 1
        else:
            try:
                end = lines.index(END, i + 1)
            except ValueError:
                raise AssertionError(f"{page}:{i + 1}: {END!r} is missing") from None
            text, fenced, after = "\n".join(lines[i + 1 : end]) + "\n", False, end + 1
        found.append(Example(page, i + 1, kind, tuple(args), excepts, text, fenced))
        i = after
    return found


def unmarked_fences(page: Path) -> list[int]:
    """Lines (1-based) of fenced blocks that are neither marked nor inside a marked example."""
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    covered: set[int] = set()
    for example in examples(page):
        start = example.line  # the marker's index + 1 is the first line of the example
        count = example.text.count("\n") + (2 if example.fenced else 1)
        covered.update(range(start, start + count))
    loose = []
    i = 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            end = _fence_end(lines, i)
            if i not in covered:
                loose.append(i + 1)
            i = end + 1
        else:
            i += 1
    return loose


def gfxgate_lines(text: str) -> list[list[str]]:
    """The ``gfxgate`` command lines of a shell block, as argument lists after ``gfxgate`` (continuations joined;
    comments, pipes into and out of it, and ``$ `` prompts removed)."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands = []
    for line in joined.splitlines():
        line = line.split("  #", 1)[0].strip()
        for part in line.split(" | "):
            part = part.strip().removeprefix("$ ")
            if not part.startswith("gfxgate ") and part != "gfxgate":
                continue
            # a synopsis's alternatives and placeholders: `a|b`, `[--x …]`, `LOG…` are words, not shell syntax
            bare = part.replace("[", " ").replace("]", " ").replace("…", " ")
            try:
                words = shlex.split(bare)  # quoted argv prefixes (`--llama-server rocm='llama-server --device ROCm0'`)
            except ValueError:
                words = bare.split()
            commands.append(words[1:])
    return commands


def referenced_links(page: Path) -> list[tuple[int, str]]:
    """Relative link targets (Markdown ``](x)`` and images) of a page, without their #anchors, with line numbers."""
    found = []
    for number, line in enumerate((ROOT / page).read_text(encoding="utf-8").splitlines(), 1):
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            found.append((number, target.split("#", 1)[0]))
    return found
