"""`scan(ScanRequest) -> GateMatrix`: the gate matrix of the named targets — the rules' facts (gate/scan.py), the cells
of the installed files (artifacts/) and of the runs (a sweep's worklog, or diagnosed logs), and the answer over them.

``--target auto`` takes the targets from the logs; ``--installed default`` searches where GPU code is installed
(``host.install.gpu_code_dirs``)."""

from __future__ import annotations

from dataclasses import field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from gfxgate.gate.matrix import GateMatrix
from gfxgate.records import dataclass
from gfxgate.targets import TargetId

if TYPE_CHECKING:
    from gfxgate.gate.scan import FactsRequest, GateFacts
    from gfxgate.machine import MachineFacts


@dataclass(frozen=True)
class ScanRequest:
    targets: tuple[str, ...]  # names as given (comma-separated allowed); "auto": the logs' targets
    live: bool = False
    refs: dict[str, str] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = False
    installed: tuple[str, ...] = ()  # folders or files of installed GPU code; "default": the usual places
    runtime: Path | None = None  # a `gfxgate sweep` worklog
    logs: tuple[str, ...] = ()  # Ollama / llama.cpp logs, as `gfxgate diagnose` reads them
    rules_root: Path | None = None
    snapshot_path: Path | None = None
    today: date | None = None  # the date the answer's release age is counted to
    os: str = "linux"  # the release answered for (--os linux|windows)


def scan(req: ScanRequest) -> GateMatrix:
    from gfxgate.app.common import parse_targets
    from gfxgate.errors import UsageError

    names = [part.strip() for value in req.targets for part in value.split(",") if part.strip()]
    auto = any(name.lower() == "auto" for name in names)
    diagnoses = None
    if req.logs:
        if req.runtime:
            raise UsageError("--runtime and --log both fill the runtime row; pass one of them")
        from gfxgate.diagnose import diagnose_inputs

        diagnoses = diagnose_inputs(list(req.logs), locate=False)
    if auto:
        if not diagnoses:
            raise UsageError("--target auto reads the targets from a log", hint="add --log LOG")
        detected = sorted({g.processor for d in diagnoses for g in d.gpus if g.processor})
        if not detected:
            raise UsageError(
                "--target auto: the log names no gfx target",
                hint="name the target (--target gfx900); `gfxgate diagnose LOG` says what the log lacks",
            )
        names = [n for n in names if n.lower() != "auto"] + detected
    parsed = parse_targets(names)
    if not parsed:
        raise UsageError("name at least one --target", hint="e.g. gfxgate scan --target gfx900")
    runtime_cells = runtime_backends = runtime_version = machine_facts = None
    if diagnoses is not None:
        from gfxgate.doctor.facts import runs_of
        from gfxgate.machine import MachineFacts

        machine_facts = MachineFacts(runs=runs_of(diagnoses))  # the log's runs: the answer on that machine
        from gfxgate.diagnose.analyse import log_versions, runtime_backend_verdicts, runtime_verdicts

        runtime_cells = runtime_verdicts(diagnoses, parsed)
        runtime_backends = runtime_backend_verdicts(diagnoses, parsed)  # each route judged by its own backend's runs
        versions = log_versions(diagnoses)
        runtime_version = versions[0] if len(versions) == 1 else None
    from gfxgate.gate.scan import FactsRequest

    facts = FactsRequest(
        live=req.live,
        refs=req.refs,
        sources=req.sources,
        offline=req.offline,
        rules_root=req.rules_root,
        snapshot_path=req.snapshot_path,
        today=req.today,
        os=req.os,
    )
    result = matrix(
        parsed,
        facts,
        installed=installed_paths(req.installed) or None,
        runtime=req.runtime,
        runtime_cells=runtime_cells,
        runtime_backends=runtime_backends,
        runtime_version=runtime_version,
        machine=machine_facts,
    )
    if diagnoses:  # the log's own conclusions, as `gfxgate diagnose` words them (diagnose/summary.py)
        import dataclasses

        from gfxgate.diagnose.summary import log_conclusions

        result = dataclasses.replace(result, notes=tuple(result.notes) + tuple(log_conclusions(diagnoses)))
    return recorded_runs(result)


RECORDED = "recorded on {target}: "  # the note prefix the terminal shows under the target's answer


def recorded_runs(result: GateMatrix) -> GateMatrix:
    """The matrix with a note per recorded failure on each target (rules/runtime.yaml: the study's Vega 56), with its
    conditions, the contrast, and at another version that it was not measured there (issue 37)."""
    import dataclasses

    from gfxgate.machine import cautions

    notes = [
        RECORDED.format(target=route.target) + text + f" [{source}]"
        for route in result.routes
        for text, source in cautions(route.target, route.version.removeprefix("v") if route.version else None)
    ]
    return dataclasses.replace(result, notes=tuple(result.notes) + tuple(notes)) if notes else result


def installed_paths(values: tuple[str, ...]) -> list[Path]:
    """--installed values as paths: ``default`` (unless a file of that name exists) is every default folder that
    exists; a named path must exist, as `gfxgate artifacts PATH` requires (exit 6)."""

    dirs: list[Path] = []
    if not values:  # the common case: no --installed, and host/install.py is not imported for it
        return dirs
    for value in values:
        if value == "default" and not Path(value).exists():
            from gfxgate.host.install import gpu_code_dirs

            dirs += gpu_code_dirs()
        elif not Path(value).exists():
            from gfxgate.errors import InputError

            raise InputError(f"--installed {value}: no such file or folder")
        else:
            dirs.append(Path(value))
    return dirs


def matrix(
    targets: list[TargetId],
    facts: FactsRequest | None = None,
    *,
    installed: list[Path] | None = None,
    runtime: Path | None = None,
    runtime_cells: dict | None = None,
    runtime_backends: dict | None = None,
    runtime_version: str | None = None,
    machine: MachineFacts | None = None,
    gate: GateFacts | None = None,
) -> GateMatrix:
    """The gate matrix of ``targets``: the rules' facts (``facts``: where from, ``gate.scan.FactsRequest``; ``gate``:
    those facts already read by ``gate.scan.gate_facts(facts)``, for a caller that builds several matrices on them),
    the artifact rows from the files under ``installed``, the runtime row from a sweep's worklog (``runtime``) or
    from diagnosed logs (``runtime_cells`` and, per target, each backend's ``runtime_backends``), then the answer."""
    from gfxgate.gate.scan import CheckSteps, FactsRequest, answer, columns, gate_facts

    if gate is None:
        gate = gate_facts(facts or FactsRequest())
    check_steps: CheckSteps | None = None
    if gate.live:  # a live answer's steps are checked (the trace pipeline: not imported for a snapshot answer)
        from gfxgate.trace.workarounds import check_steps
    columns_ = columns(targets)  # the override routes read these columns too
    extra = {}
    if installed:
        from gfxgate.artifacts.scan import scan_paths
        from gfxgate.artifacts.verdicts import artifact_verdicts

        extra.update(artifact_verdicts(scan_paths(list(installed)), columns_, hsa_override=gate.os == "linux"))
    if runtime:
        from gfxgate.sweep.verdicts import runtime_backend_verdicts as worklog_backends
        from gfxgate.sweep.verdicts import runtime_verdicts as worklog_verdicts

        for target_name, verdict in worklog_verdicts(runtime, columns_).items():
            extra[("runtime", target_name)] = verdict
        runtime_backends = worklog_backends(runtime, columns_)
    for target_name, verdict in (runtime_cells or {}).items():  # `scan --log`: the runtime row from diagnosed logs
        extra[("runtime", target_name)] = verdict
    return answer(
        gate,
        targets,
        extra_cells=extra,
        runtime_backends=runtime_backends,
        runtime_version=runtime_version,
        check_steps=check_steps,
        machine=machine,
    )
