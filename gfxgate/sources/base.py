"""The Source interface: read files of one upstream repository at one version; ``GrepSpec``: a regex over some of them."""

from __future__ import annotations

import fnmatch
import re
from abc import ABC, abstractmethod
from typing import NamedTuple

from gfxgate.model import Location, SourceInfo
from gfxgate.errors import RuleError
from gfxgate.saferegex import rule_regex

# The most bytes gfxgate reads of one upstream file. The files gate rules read are at most a few hundred KB (the
# largest file of ollama's tree is a 3.7 MB image); a larger one is refused before it is read (git: its size from
# ``cat-file --batch-check``; a folder: ``stat``), and the rule reading it gets an error entry.
MAX_BLOB_BYTES = 8 << 20


def blob_too_large(path: str, size: int, where: str = "") -> str:
    return f"{path}{where}: {size} bytes; gfxgate reads at most {MAX_BLOB_BYTES} bytes of one file"


class FileHit(NamedTuple):
    """A matching line: its path, 1-based line number and text."""

    path: str
    line: int
    text: str


class Source(ABC):
    """One repository at one ref. Paths are POSIX, relative to the repository root."""

    name: str
    url: str
    ref: str
    commit: str | None
    origin: str

    @abstractmethod
    def read(self, path: str) -> bytes | None:
        """The file's bytes at this ref, or None when the file does not exist there."""

    @abstractmethod
    def list_files(self) -> list[str]:
        """Every file path at this ref (sorted)."""

    def read_text(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else data.decode("utf-8", errors="replace")

    def glob(self, pattern: str) -> list[str]:
        """Paths matching a glob (``**`` crosses folders, ``*`` does not)."""
        regex = glob_regex(pattern)
        return [p for p in self.list_files() if regex.match(p)]

    def grep(self, pattern: str, paths: list[str] | None = None, *, fixed: bool = False) -> list[FileHit]:
        """Lines matching a rule regex (RE2 dialect, see gfxgate.saferegex) or a fixed string, in the given
        files (default: every file). Lines end at "\n" and binary files (a NUL in the first 8000 bytes) are
        skipped, as ``git grep -I`` does, so every kind of source answers the same."""
        search = (lambda line: pattern in line) if fixed else rule_regex(pattern).search
        hits = []
        for path in paths if paths is not None else self.list_files():
            data = self.read(path)
            if data is None or b"\0" in data[:8000]:
                continue
            for number, line in enumerate(data.decode("utf-8", errors="replace").split("\n"), 1):
                if search(line):
                    hits.append(FileHit(path, number, line))
        return hits

    def location(self, path: str, line: int | None = None) -> Location:
        return Location(repo=self.name, ref=self.ref, commit=self.commit, path=path, line=line)

    def info(self) -> SourceInfo:
        return SourceInfo(name=self.name, url=self.url, ref=self.ref, commit=self.commit, origin=self.origin)

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release processes or handles (persistent git cat-file)."""


class GrepSpec(NamedTuple):
    """A rule regex over some files (paths or globs) of one repository: where upstream prints a log message
    (``printed_by`` in rules/messages.yaml) or still has a workaround's flag or option (``checks`` in
    rules/workarounds.yaml). Never a stored line number: the lines are found at each version."""

    repo: str
    paths: tuple[str, ...]
    grep: str

    def describe(self) -> str:
        return f"{self.repo}: /{self.grep}/ in {', '.join(self.paths)}"

    def hits(self, source: Source) -> list[FileHit]:
        """The lines the regex finds in ``source`` (RE2, see ``Source.grep``), in the files the paths name there:
        globs expanded, each file once, files absent at this version skipped."""
        paths = [
            p
            for pattern in self.paths
            for p in (source.glob(pattern) if any(c in pattern for c in "*?[") else [pattern])
        ]
        paths = [p for p in dict.fromkeys(paths) if source.read(p) is not None]
        return source.grep(self.grep, paths) if paths else []


def glob_regex(pattern: str) -> re.Pattern:
    """Translate a path glob with ``**`` into a regex; the result never matches ``..`` escapes."""
    parts = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            parts.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            parts.append(".*")
            i += 2
        else:
            chunk = fnmatch.translate(pattern[i])[4:-3]  # strip (?s: ... )\Z
            parts.append("[^/]*" if pattern[i] == "*" else ("[^/]" if pattern[i] == "?" else chunk))
            i += 1
    return re.compile("^" + "".join(parts) + "$")


def safe_relpath(path: str) -> str:
    """Reject absolute paths and ``..`` components: paths from rules never escape the source root."""
    clean = path.replace("\\", "/")
    if clean.startswith("/") or any(part == ".." for part in clean.split("/")):
        raise RuleError(f"path {path!r} escapes the source root")
    return clean.lstrip("./") if clean.startswith("./") else clean
