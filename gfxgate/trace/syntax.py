"""tree-sitter plumbing shared by the hop kinds: one parser per language, each file parsed once.

A :class:`ParseCache` lives for one trace run; hops ask it for a file's tree and never parse a file
twice. The helpers below find the documentation nearest to a node: a trailing comment on the
same line, or the block of comments directly above it.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Iterator
import importlib

from gfxgate.records import dataclass

if TYPE_CHECKING:
    from tree_sitter import Node, Tree

LANGUAGES = {
    ".go": "go",
    ".py": "python",
    ".c": "c",
    ".h": "cpp",  # llama.cpp headers use C++ constructs behind #ifdef __cplusplus
    ".cpp": "cpp",
    ".cc": "cpp",
    ".hpp": "cpp",
    ".cu": "cpp",
    ".cuh": "cpp",
}


def language_of(path: str) -> str | None:
    dot = path.rfind(".")
    return LANGUAGES.get(path[dot:].lower()) if dot >= 0 else None


@functools.cache
def parser(language: str):
    from tree_sitter import Language, Parser

    grammar = importlib.import_module(_GRAMMARS.get(language, "tree_sitter_cpp"))
    return Parser(Language(grammar.language()))


_GRAMMARS = {"go": "tree_sitter_go", "python": "tree_sitter_python", "c": "tree_sitter_c"}  # else C++


@dataclass
class ParsedFile:
    repo: str  # the source's display name (layout alias or repository)
    path: str
    src: bytes
    tree: Tree
    language: str

    @functools.cached_property
    def lines(self) -> list[str]:
        return self.src.decode("utf-8", "replace").splitlines()

    def text(self, node) -> str:
        return self.src[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def line_of(self, node) -> int:
        return node.start_point[0] + 1

    def line_text(self, line: int) -> str:
        return self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""

    def walk(self, types: set[str] | None = None) -> Iterator[Node]:
        """Every node in document order (optionally only those of the given types)."""
        stack = [self.tree.root_node]
        while stack:
            node = stack.pop()
            if types is None or node.type in types:
                yield node
            stack.extend(reversed(node.children))

    def walk_under(self, root, types: set[str]) -> Iterator:
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in types:
                yield node
            stack.extend(reversed(node.children))


class ParseCache:
    """Parsed files of one run, keyed by (source identity, path): each file is parsed once."""

    def __init__(self) -> None:
        self._files: dict[tuple, ParsedFile | None] = {}
        self.parsed = 0  # how many files were really parsed (the benchmark and tests read it)

    def get(self, source, path: str) -> ParsedFile | None:
        key = (source.name, source.ref, getattr(source, "root", ""), path)
        if key not in self._files:
            src = source.read(path)
            language = language_of(path)
            if src is None or language is None:
                self._files[key] = None
            else:
                self.parsed += 1
                self._files[key] = ParsedFile(
                    getattr(source, "alias", source.name), path, src, parser(language).parse(src), language
                )
        return self._files[key]


# -- documentation next to a node ------------------------------------------------------------------


def clean_comment(text: str) -> str:
    """Comment text without its markers (``//``, ``#``, ``/* */``, leading ``*``), lines joined."""
    out = []
    for line in text.strip().splitlines():
        line = line.strip()
        line = re.sub(r"^(//+!?|#+|/\*+|\*+(?!/))\s?", "", line)
        line = re.sub(r"\s*\*+/$", "", line)
        out.append(line.strip())
    return " ".join(p for p in out if p)


def _marker(pf: ParsedFile) -> str:
    return "#" if pf.language == "python" else "//"


def trailing_comment(pf: ParsedFile, node) -> str | None:
    """A comment after ``node`` on the line where it ends (``int32_t n; // doc``)."""
    line = pf.lines[node.end_point[0]] if node.end_point[0] < len(pf.lines) else ""
    col = len(line.encode("utf-8")[: node.end_point[1]].decode("utf-8", "replace"))
    idx = _comment_start(line, _marker(pf), col)
    if idx is None and pf.language != "python":
        idx = _comment_start(line, "/*", col)
    return clean_comment(line[idx:]) or None if idx is not None else None


def _comment_start(line: str, marker: str, start_col: int) -> int | None:
    """Column of a comment marker at or after ``start_col`` that is not inside a string literal."""
    in_str = None
    escaped = False
    for i, ch in enumerate(line):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_str:
                in_str = None
            continue
        if i >= start_col and line.startswith(marker, i):
            return i
        if ch in "\"'`":
            in_str = ch
    return None


def leading_comment(pf: ParsedFile, node) -> str | None:
    """The block of comment-only lines directly above ``node`` (no blank line in between)."""
    marker = _marker(pf)
    index = node.start_point[0] - 1
    parts: list[str] = []
    in_block = False
    while index >= 0:
        stripped = pf.lines[index].strip()
        if in_block or stripped.endswith("*/"):
            parts.insert(0, stripped)
            in_block = not stripped.startswith("/*")
        elif stripped.startswith(marker):
            parts.insert(0, stripped)
        else:
            break
        index -= 1
    text = " ".join(clean_comment(p) for p in parts if clean_comment(p))
    return text or None


def string_value(pf: ParsedFile, node) -> str:
    """The contents of a string literal node, quotes and prefixes removed (escapes kept as written)."""
    raw = pf.text(node)
    raw = re.sub(r"^[a-zA-Z]*(?=[\"'`])", "", raw)
    for quote in ('"""', "'''", '"', "'", "`"):
        if raw.startswith(quote) and raw.endswith(quote) and len(raw) >= 2 * len(quote):
            return raw[len(quote) : -len(quote)]
    return raw


STRING_TYPES = {
    "go": {"interpreted_string_literal", "raw_string_literal"},
    "python": {"string"},
    "c": {"string_literal"},
    "cpp": {"string_literal", "raw_string_literal"},
}


def enclosing(node, types: set[str]):
    node = node.parent
    while node is not None and node.type not in types:
        node = node.parent
    return node


def go_function_name(pf: ParsedFile, node) -> str:
    fn = enclosing(node, {"function_declaration", "method_declaration"})
    if fn is None:
        return ""
    name = fn.child_by_field_name("name")
    return pf.text(name) if name is not None else ""
