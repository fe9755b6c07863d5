"""`diagnose(DiagnoseRequest) -> DiagnoseResult`: what the user's Ollama / llama.cpp logs (files, stdin, journal
units) establish, each recognised failure with its layer and implied verdict, and which --fail-on-layer layers have one."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path

from gfxgate.records import dataclass


@dataclass(frozen=True)
class DiagnoseRequest:
    logs: tuple[str, ...] = ()  # files, "-" for stdin
    units: tuple[str, ...] = ()  # journal units
    since: str | None = None  # with units: journalctl --since
    fail_on: tuple[str, ...] = ()  # layers (comma-separated allowed) or "any"
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = True
    locate: bool = True  # locate the printing lines in upstream sources
    output: Path | None = None  # the report's file: refused when it is one of the logs


@dataclass(frozen=True)
class DiagnoseResult:
    diagnoses: list  # one diagnose.model Diagnosis per input
    failing: tuple[str, ...]  # the --fail-on-layer layers a finding implies a verdict on


def diagnose(req: DiagnoseRequest) -> DiagnoseResult:
    from gfxgate.app.common import refuse_output_over_inputs
    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.errors import UsageError

    if not req.logs and not req.units:
        raise UsageError(
            "name a log file, '-' for stdin, or --journal-unit UNIT",
            hint="e.g. gfxgate diagnose server.log, or journalctl -u ollama | gfxgate diagnose -",
        )
    if req.since and not req.units:
        raise UsageError("--since only applies to --journal-unit")
    layers = _check_fail_on(req.fail_on)
    refuse_output_over_inputs(req.output, req.logs)
    diagnoses = diagnose_inputs(
        list(req.logs),
        units=list(req.units),
        since=req.since,
        sources=req.sources,
        offline=req.offline,
        locate=req.locate,
    )
    hits: list[str] = []
    if layers:
        hits = sorted(
            {f.layer for d in diagnoses for f in d.findings if f.verdict and ("any" in layers or f.layer in layers)}
        )
    return DiagnoseResult(diagnoses, tuple(hits))


def _check_fail_on(values: tuple[str, ...]) -> set[str]:
    if not values:
        return set()
    from gfxgate.errors import UsageError
    from gfxgate.gate.ruleset import default_rules

    known = [layer.id for layer in default_rules().layers]
    out = set()
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if part != "any" and part not in known:
                from gfxgate.suggest import did_you_mean

                layers = "layers: any, " + ", ".join(known)
                raise UsageError(
                    f"unknown --fail-on-layer layer {part!r}",
                    hint=did_you_mean(part, known, n=1, then=layers, otherwise=layers),
                )
            out.add(part)
    return out
