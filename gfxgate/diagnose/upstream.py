"""Where upstream prints each message: the catalogue's search specs run against real sources.

Two uses: ``gfxgate messages`` checks the whole catalogue at the pins (or any ``--ref``) and reports each
message live (found, with ``repo@tag:path:line``), stale (its version range says it is printed there but the
printing code is gone), retired (not printed at that version, as the catalogue says) or unknown (source not
available); ``gfxgate diagnose`` locates the printing line of each recognised message at the version the log
shows. Line numbers are always found, never stored.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gfxgate.diagnose.catalogue import Catalogue, Message
from gfxgate.errors import SourceError
from gfxgate.model import Evidence, Location
from gfxgate.records import dataclass
from gfxgate.sources.base import GrepSpec
from gfxgate.sources.resolve import RootedSource, SourceSet, load_pins

if TYPE_CHECKING:
    from gfxgate.sources.resolve import SourceSet

LIVE, STALE, RETIRED, UNKNOWN, NOT_AVAILABLE = "live", "stale", "retired", "unknown", "not-available"
MAX_HITS = 5


def locate(spec: GrepSpec, source) -> tuple[Location, ...]:
    """Lines in ``source`` that the spec's regex finds in the spec's paths (globs allowed)."""
    return tuple(source.location(h.path, h.line) for h in spec.hits(source)[:MAX_HITS])


def source_for(sourceset, repo: str, log_kind: str | None = None):
    """The source a spec's repo means. For a llama.cpp log, ggml and llama.cpp are the llama-cpp repository itself."""
    if log_kind == "llama.cpp" and repo in ("ggml", "llama.cpp"):
        upstream = sourceset.get("llama-cpp")
        return RootedSource(upstream, "ggml", alias="ggml") if repo == "ggml" else upstream
    return sourceset.get(repo)


@dataclass(frozen=True)
class SpecResult:
    spec: GrepSpec
    where: str  # repo@ref searched, or the repo name when it could not be opened
    locations: tuple[Location, ...] = ()
    reason: str | None = None  # why nothing could be searched


@dataclass(frozen=True)
class MessageCheck:
    message: Message
    state: str
    summary: str
    results: tuple[SpecResult, ...] = ()

    @property
    def evidence(self) -> tuple[Evidence, ...]:
        return tuple(
            Evidence(source=self.message.id, location=loc, note="printing code")
            for r in self.results
            for loc in r.locations
        )


def _search(spec: GrepSpec, sourceset, log_kind: str | None) -> SpecResult:
    try:
        source = source_for(sourceset, spec.repo, log_kind)
    except SourceError as exc:
        return SpecResult(spec, spec.repo, reason=f"source not available: {exc.message}")
    where = f"{source.name}@{source.ref}"
    try:
        return SpecResult(spec, where, locate(spec, source))
    except SourceError as exc:
        return SpecResult(spec, where, reason=f"cannot read {where}: {exc.message}")


def _ollama_version(sourceset) -> str | None:
    try:
        return sourceset.get("ollama").ref
    except SourceError:
        return None


def check_catalogue(catalogue: Catalogue, sourceset) -> list[MessageCheck]:
    """Each message at the sourceset's refs: live / stale / retired / unknown / not-available."""
    version = _ollama_version(sourceset)
    out = []
    for message in catalogue.messages:
        if not message.printed_by:
            out.append(
                MessageCheck(message, NOT_AVAILABLE, message.not_available or "no printing code among the sources")
            )
            continue
        # a message only llama.cpp's own programs print is looked for in llama.cpp itself, not in Ollama's copy
        kind = None if "ollama" in message.logs else "llama.cpp"
        results = tuple(_search(spec, sourceset, kind) for spec in message.printed_by)
        found = [r for r in results if r.locations]
        unavailable = [r for r in results if r.reason]
        expected, why = message.printed_in("ollama", version) if "ollama" in message.logs else (True, "")
        if found:
            first = found[0].locations[0]
            more = sum(len(r.locations) for r in found) - 1
            summary = f"printed at {first}" + (f" (+{more} more)" if more else "")
            if not expected:
                out.append(
                    MessageCheck(message, STALE, f"{summary}, but the catalogue says {why}: fix its versions", results)
                )
            else:
                out.append(MessageCheck(message, LIVE, summary, results))
        elif unavailable:  # a printer that could not be read may still print it: not stale, unknown
            searched = sorted({r.where for r in results if not r.reason})
            out.append(
                MessageCheck(
                    message,
                    UNKNOWN,
                    "; ".join(sorted({r.reason for r in unavailable if r.reason}))
                    + (f" (not found at {', '.join(searched)})" if searched else ""),
                    results,
                )
            )
        elif not expected:
            out.append(MessageCheck(message, RETIRED, f"not printed: {why}", results))
        else:
            places = ", ".join(sorted({r.where for r in results if not r.reason}))
            out.append(
                MessageCheck(
                    message,
                    STALE,
                    f"stale at {places}: no printing code found for "
                    + "; ".join(r.spec.describe() for r in results if not r.reason),
                    results,
                )
            )
    return out


class Locator:
    """Finds the printing line of a message at the version a log shows (one SourceSet per version, cached)."""

    def __init__(self, *, sources: dict[str, str] | None = None, offline: bool = True, pins=None) -> None:
        self.pins = pins or load_pins()
        self.sources = dict(sources or {})
        self.offline = offline
        self._sets: dict[tuple, SourceSet] = {}
        self._cache: dict[tuple, SpecResult] = {}

    def _sourceset(self, refs: tuple[tuple[str, str], ...]) -> SourceSet:
        if refs not in self._sets:
            self._sets[refs] = SourceSet(self.pins, sources=self.sources, refs=dict(refs), offline=self.offline)
        return self._sets[refs]

    def refs_for(self, log_kind: str | None, version: str | None) -> tuple[tuple[str, str], ...]:
        if not version:
            return ()
        if log_kind == "ollama":
            return (("ollama", version if version.startswith("v") else f"v{version}"),)
        if log_kind == "llama.cpp" and version.isdigit() and int(version) > 0:
            return (("llama-cpp", f"b{version}"),)
        return ()

    def find(self, message: Message, log_kind: str | None, version: str | None) -> tuple[tuple[Location, ...], str]:
        """(locations, note): the note says where it searched or why it could not."""
        if not message.printed_by:
            return (), message.not_available or "no printing code among gfxgate's sources"
        refs = self.refs_for(log_kind, version)
        sourceset = self._sourceset(refs)
        locations: list[Location] = []
        reasons: list[str] = []
        searched: list[str] = []
        for spec in message.printed_by:
            key = (refs, spec, log_kind)
            if key not in self._cache:
                self._cache[key] = _search(spec, sourceset, log_kind)
            result = self._cache[key]
            locations += result.locations
            (reasons if result.reason else searched).append(result.reason or result.where)
        if locations:
            note = "" if refs else "version not detected: located at the pinned tags"
            if message.not_available:
                note = (note + "; " if note else "") + message.not_available
            return tuple(locations), note
        if searched:
            return (), f"not found at {', '.join(sorted(set(searched)))} (the catalogue entry may be stale there)"
        return (), "; ".join(sorted(set(reasons)))

    def close(self) -> None:
        for sourceset in self._sets.values():
            sourceset.close()
