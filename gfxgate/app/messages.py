"""`messages(MessagesRequest) -> MessagesResult`: where upstream prints each log message `gfxgate diagnose`
recognises, checked at the pins or any --ref."""

from __future__ import annotations

from dataclasses import field

from gfxgate.records import dataclass


@dataclass(frozen=True)
class MessagesRequest:
    refs: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False


@dataclass(frozen=True)
class MessagesResult:
    checks: tuple  # one diagnose.upstream check per catalogue message
    sources: tuple  # the sources read (SourceInfo)
    stale: bool  # a message is stale at the checked versions


def messages(req: MessagesRequest) -> MessagesResult:
    from gfxgate.app.common import require_source
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.diagnose.upstream import STALE, check_catalogue
    from gfxgate.sources.resolve import SourceSet, load_pins

    sourceset = SourceSet(load_pins(), sources=req.sources, refs=req.refs, offline=req.offline)
    try:
        # the messages are located in ollama's code at its version: without it nothing can be checked (exit 5/4
        # naming the --source to give), never a catalogue of unknowns
        require_source(sourceset, "ollama", "messages")
        checks = check_catalogue(default_catalogue(), sourceset)
        infos = tuple(s.info() for s in sourceset.opened())
    finally:
        sourceset.close()
    return MessagesResult(tuple(checks), infos, any(c.state == STALE for c in checks))
