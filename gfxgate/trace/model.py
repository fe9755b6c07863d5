"""Trace results: frozen dataclasses the formatters render (no I/O here).

A found hop always has a location (``repo@tag:path:line``) and the code line; a missing hop always
has a reason. The conclusion exists only when the sink was reached, and quotes its documentation.
"""

from __future__ import annotations

from typing import Any

from gfxgate.model import Location, SourceInfo
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, document, json_dataclass, json_field
from gfxgate.trace.rules import StageSpec

TRACE_JSON_VERSION = 1

FOUND = "found"
MISSING = "missing"
PARTIAL = "partial"


@json_dataclass(frozen=True)
class TraceHop(JsonRecord):
    """One step of the flow, found at the scanned version or reported missing with its reason."""

    id: str  # the rule's hop id (``/receiver`` etc. for the second site of a process boundary)
    stage: str
    kind: str
    status: str  # found | missing
    location: Location | None = json_field(
        default=None, before={"where": lambda h: str(h.location) if h.location else None}
    )
    code: str = ""
    symbol: str = ""  # what the hop found: ``Options.num_gpu``, ``assignLayers(requestedLayers)``
    meaning: str | None = None  # nearest documentation
    meaning_source: str | None = None  # "trailing comment", "doc comment", "help string", …
    reason: str | None = None  # why it is missing
    note: str | None = None  # the rule's note on how this hop links to the previous one
    via: str | None = None  # the route taken within the stage
    also: tuple[Location, ...] = json_field(default=(), value=lambda also: [str(loc) for loc in also])  # further sites

    def __post_init__(self) -> None:
        if self.status == FOUND and self.location is None:
            raise ValueError(f"hop {self.id} found without a location")
        if self.status == MISSING and not self.reason:
            raise ValueError(f"hop {self.id} missing without a reason")


@dataclass(frozen=True)
class TraceStage:
    """A stage of the rule (its id, title, summary and sink flags: ``spec``) as found at the scanned versions."""

    spec: StageSpec
    status: str  # found | partial | missing
    hops: tuple[TraceHop, ...]
    via: str | None = None

    @property
    def found(self) -> tuple[TraceHop, ...]:
        return tuple(h for h in self.hops if h.status == FOUND)

    @property
    def anchor(self) -> TraceHop | None:
        """The hop that locates the stage in the summary table (its first found hop)."""
        return self.found[0] if self.found else None

    @property
    def symbol(self) -> str:
        return " → ".join(h.symbol for h in self.found if h.symbol)

    @property
    def meaning(self) -> TraceHop | None:
        """The hop whose documentation explains the stage: the last documented one (nearest the sink)."""
        documented = [h for h in self.found if h.meaning]
        return documented[-1] if documented else None

    @property
    def reason(self) -> str | None:
        missing = [h for h in self.hops if h.status == MISSING]
        return "; ".join(f"{h.id}: {h.reason}" for h in missing) or None

    def to_json(self) -> dict[str, Any]:
        # a summary of the stage, not its fields: the rule's stage flattened, the anchor's place and code, the
        # documented meaning nearest the sink, the missing hops' reasons; then the hops themselves
        anchor, meaning = self.anchor, self.meaning
        return {
            "id": self.spec.id,
            "title": self.spec.title,
            "summary": self.spec.summary,
            "sink": self.spec.sink,
            "status": self.status,
            "via": self.via,
            "where": str(anchor.location) if anchor else None,
            "code": anchor.code if anchor else None,
            "symbol": self.symbol,
            "meaning": meaning.meaning if meaning else None,
            "reason": self.reason,
            "hops": [h.to_json() for h in self.hops],
        }


def _header(kind: str) -> dict[str, Any]:
    """The keys a trace or env JSON document starts with, as every gfxgate JSON document (serial.document)."""
    return {
        key: (lambda _, value=value: value) for key, value in document(kind, {}, version=TRACE_JSON_VERSION).items()
    }


@json_dataclass(frozen=True)
class TraceResult(JsonRecord):
    option: str = json_field(before=_header("trace"))
    rule: str
    title: str
    question: str | None
    sources: tuple[SourceInfo, ...]
    stages: tuple[TraceStage, ...]
    conclusion: str | None
    conclusion_reason: str | None  # why there is no conclusion
    caution: str | None
    notes: tuple[str, ...] = ()
    parsed_files: int = json_field(default=0, skip=True)

    def __post_init__(self) -> None:
        if not self.conclusion and not self.conclusion_reason:
            raise ValueError(f"trace of {self.option} has no conclusion and no reason why")

    @property
    def hops(self) -> tuple[TraceHop, ...]:
        return tuple(h for s in self.stages for h in s.hops)

    def stage(self, stage_id: str) -> TraceStage:
        return next(s for s in self.stages if s.spec.id == stage_id)


@json_dataclass(frozen=True, kw_only=True)
class EnvRead(JsonRecord):
    """One place where a repository reads (or passes on) an environment variable."""

    repo: str
    ref: str
    commit: str | None = None
    path: str
    line: int = json_field(after={"where": lambda r: str(r.location)})
    text: str
    kind: str  # envconfig, runner-env, getenv, env-set, description, mention (from rules/traces/env.yaml)
    function: str = ""
    meaning: str | None = None

    @property
    def location(self) -> Location:
        return Location(repo=self.repo, ref=self.ref, commit=self.commit, path=self.path, line=self.line)


@json_dataclass(frozen=True)
class EnvSearch(JsonRecord):
    """`gfxgate trace --env NAME`: every read, plus the repositories that could not be searched."""

    name: str = json_field(before=_header("env"))
    sources: tuple[SourceInfo, ...]
    kinds: tuple[tuple[str, str], ...] = json_field(  # (kind, description) in rule order
        value=lambda kinds: [{"kind": k, "description": d} for k, d in kinds]
    )
    reads: tuple[EnvRead, ...]
    unavailable: tuple[tuple[str, str], ...] = json_field(
        default=(),
        value=lambda unavailable: [  # (repo, reason)
            {"repo": r, "reason": why} for r, why in unavailable
        ],
    )
