"""Hop kinds: one module each. A hop finds one construct at the scanned version.

Every kind module has ``run(params, ctx) -> list[Match]`` (document order; the engine binds the
first match and lists the rest as further sites) and raises :class:`HopMissing` with a reason
when the construct is not there. The :class:`HopContext` is the only way a hop reads code: a
``git grep`` pre-filter over the hop's path globs, then each candidate file parsed once.
"""

from __future__ import annotations

import re
from dataclasses import field

from gfxgate.errors import SourceError
from gfxgate.model import Location
from gfxgate.plugins import Plugins
from gfxgate.records import dataclass
from gfxgate.trace.syntax import ParseCache, ParsedFile, leading_comment, trailing_comment

# one module per hop kind, named after it (``python-field`` is ``python_field``; golang.py holds shared helpers)
KINDS = Plugins("gfxgate.trace.hops", helpers=("golang",))


def kind_module(kind: str):
    return KINDS[kind]


# tests and test data are not the product's code path
_SKIPPED = re.compile(r"(_test\.go|(^|/)(testdata|tests?)/)")


class HopMissing(Exception):
    """The construct is not at this version; ``reason`` says why (moved, renamed, not available)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Site:
    """Where a hop found its construct."""

    file: ParsedFile
    line: int
    symbol: str
    meaning: str | None = None
    meaning_source: str | None = None
    label: str | None = None  # e.g. "receiver" for the far side of a process boundary


@dataclass(frozen=True)
class Match:
    sites: tuple[Site, ...]
    outputs: dict[str, str] = field(default_factory=dict)


def doc_of(pf: ParsedFile, node, *, leading_first: bool = False) -> tuple[str | None, str | None]:
    """Nearest documentation of a declaration: trailing comment, else the comment block above."""
    order = [("leading comment", leading_comment), ("trailing comment", trailing_comment)]
    if not leading_first:
        order.reverse()
    for label, finder in order:
        text = finder(pf, node)
        if text:
            return text, label
    return None, None


class HopContext:
    """Sources + the parse cache of one run; pre-filters with grep, parses candidates once."""

    def __init__(self, sources, cache: ParseCache | None = None) -> None:
        self.sources = sources
        self.cache = cache or ParseCache()
        self._globbed: dict[tuple, list[str]] = {}
        self.unavailable: dict[str, str] = {}
        self.missing: dict[str, str] = {}  # hop id -> reason, for "needs {x}" messages downstream
        self.missing_roots: dict[str, str] = {}  # hop id -> the first missing hop's reason behind it

    def source(self, repo: str):
        if repo in self.unavailable:
            raise HopMissing(self.unavailable[repo])
        try:
            return self.sources.get(repo)
        except SourceError as exc:
            self.unavailable[repo] = f"source not available: {exc.message}"
            raise HopMissing(self.unavailable[repo]) from exc

    def files(self, source, globs: list[str] | tuple[str, ...]) -> list[str]:
        key = (source.name, source.ref, getattr(source, "root", ""), tuple(globs))
        if key not in self._globbed:
            seen: dict[str, None] = {}
            for glob in globs:
                for path in source.glob(glob):
                    if not _SKIPPED.search(path):
                        seen.setdefault(path, None)
            self._globbed[key] = list(seen)
        return self._globbed[key]

    def where(self, source) -> str:
        return f"{getattr(source, 'alias', source.name)}@{source.ref}"

    def candidates(self, repo: str, globs, needle: str, *, what: str) -> list[ParsedFile]:
        """Parsed files under ``globs`` whose text contains ``needle`` (fixed string, git grep at the tag)."""
        source = self.source(repo)
        files = self.files(source, globs)
        if not files:
            elsewhere = self._elsewhere(source, needle, globs)
            raise HopMissing(
                f"file moved or removed: no file matches {', '.join(globs)} at {self.where(source)}"
                + (f"; {needle!r} occurs in {elsewhere}" if elsewhere else "")
            )
        hits = source.grep(needle, files, fixed=True)
        if not hits:
            elsewhere = self._elsewhere(source, needle, globs)
            if elsewhere:
                raise HopMissing(
                    f"file moved: {needle!r} is not in {', '.join(globs)} at {self.where(source)} "
                    f"but occurs in {elsewhere}"
                )
            raise HopMissing(
                f"symbol renamed or removed: {needle!r} occurs nowhere in {', '.join(globs)} "
                f"at {self.where(source)} (looking for {what})"
            )
        out = []
        for path in dict.fromkeys(h.path for h in hits):
            parsed = self.cache.get(source, path)
            if parsed is not None:
                out.append(parsed)
        return out

    def _elsewhere(self, source, needle: str, globs) -> str:
        """Other files of the same languages that contain ``needle`` (to tell "moved" from "renamed")."""
        exts = sorted({g.rsplit(".", 1)[-1] for g in globs if "." in g.rsplit("/", 1)[-1]})
        if not exts:
            return ""
        pool = self.files(source, tuple(f"**/*.{ext}" for ext in exts))
        paths = sorted({h.path for h in source.grep(needle, pool, fixed=True)}) if pool else []
        paths = [p for p in paths if not p.endswith("_test.go")]
        if not paths:
            return ""
        return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")

    def location(self, site: Site) -> Location:
        source = self.source(self._repo_of(site.file))
        return source.location(site.file.path, site.line)

    def _repo_of(self, pf: ParsedFile) -> str:
        return pf.repo


def missing_construct(needle: str, files: list[ParsedFile], what: str) -> HopMissing:
    paths = ", ".join(f.path for f in files[:3])
    return HopMissing(f"{needle!r} occurs in {paths} but not as {what} (renamed or changed shape?)")
