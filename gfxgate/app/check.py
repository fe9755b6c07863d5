"""`check(CheckRequest) -> DiffResult`: what a pull request changes — the diff of the gate matrices at the pins (and
rules) of a git ref and at the working tree's, computed live."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from gfxgate.app.diff import DiffResult
from gfxgate.records import dataclass


@dataclass(frozen=True)
class CheckRequest:
    base_ref: str
    targets: tuple[str, ...]
    fail_on: tuple[str, ...] = ()
    pins: Path | None = None  # default: rules/pins.toml of the repository around the current folder
    rules_root: Path | None = None
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    os: str = "linux"  # the release both matrices answer for (--os)


def check(req: CheckRequest) -> DiffResult:
    from gfxgate.app.common import fail_on_targets, parse_targets
    from gfxgate.errors import UsageError
    from gfxgate.prcheck.check import run_check
    from gfxgate.prcheck.pins import default_pins_path, pins_location

    parsed = parse_targets(req.targets)
    if not parsed:
        raise UsageError("name at least one --target", hint="e.g. gfxgate check --base-ref origin/main --target gfx900")
    pins_path = req.pins or default_pins_path()
    result = run_check(
        parsed, req.base_ref, pins_path, sources=req.sources, offline=req.offline, rules_root=req.rules_root, os=req.os
    )
    failing = fail_on_targets(req.fail_on, result.diff.targets)
    pins_uri, lines = pins_location(result.pins_path)
    return DiffResult(result.diff, failing, pins_uri, lines, result.pins_path)
