"""`doctor --root` of a captured Windows install (docs/windows.md): the installer's folders, the server log, and the
answer for the Windows release (``FactsRequest.os``).

A Windows tree has no sysfs, no systemd unit and no device nodes: the GPUs come from the server log
(%LOCALAPPDATA%\\Ollama\\server.log: "inference compute", the card's name), the version from its "Listening on … (version
…)" line, the installed code from lib\\ollama\\<runner>\\. Each route step is written as this machine's step on
Windows: a variable with ``setx`` (then quit Ollama from the tray and start it again), never a systemd drop-in."""

from __future__ import annotations

from typing import Any, Callable
import dataclasses
import re

from gfxgate.doctor.model import BackendVerdict, FixStep, MachineReport, TargetReport
from gfxgate.host import install
from gfxgate.host.rootfs import RootFS, gpu_code
from gfxgate.diagnose import diagnose_inputs
from gfxgate.diagnose.analyse import runtime_verdicts
from gfxgate.doctor.examine import _machine_path  # a row's evidence names the machine's path, not the folder's
from gfxgate.gate.route import decide, default_routes, mark_unchecked, routes_for_os
from gfxgate.gate.scan import FactsRequest
from gfxgate.gate.workarounds import default_workarounds, for_os
from gfxgate.model import Status, Verdict
from gfxgate.sources.resolve import load_pins
from gfxgate.targets import catalog

WINDOWS = "windows"


def examine(req, fs: RootFS, matrix_of: Callable[..., Any]) -> MachineReport:
    """The report of a captured Windows tree; ``matrix_of`` is the use case's matrix builder (``app/scan.py: matrix``)."""
    installs = install.windows_installs(fs)
    logs = list(req.logs) or install.windows_logs(fs)
    notes = [
        f"a Windows install ({', '.join(i.lib or i.binary or '' for i in installs.ollama) or 'no Ollama folder'}): "
        "answered for the Windows release of Ollama (--os windows): its preset, packaging, discovery, no HSA override"
    ]
    diagnoses = None
    if logs:
        diagnoses = diagnose_inputs(logs, locate=False)
    version = next((f.value.lstrip("v") for d in diagnoses or () if (f := d.fact("ollama-version")) is not None), None)
    if version is None:
        notes.append(
            "the installed Ollama version is unknown (a captured tree's ollama.exe is never run and no log "
            "names it): the matrix is the pinned release's"
        )
    gpus: dict[str, str] = {}  # target -> the card's name, as the log names them
    for d in diagnoses or ():
        for g in d.gpus:
            if g.target and g.vendor == "amd":
                gpus.setdefault(g.target, g.name)
    if not gpus:
        notes.append(
            "no AMD GPU target: a Windows tree has no sysfs; give the server log (--log …\\AppData\\Local\\Ollama"
            '\\server.log, or keep it in the captured tree) so its "inference compute" line names the card'
        )
    installed = gpu_code(fs, installs.gpu_code_files())
    reports = tuple(
        _target(fs, target, name, version, req, installs, installed, matrix_of, diagnoses)
        for target, name in gpus.items()
    )
    return MachineReport(
        root=str(req.root),
        gpus=(),
        amdgpu_loaded=False,
        installs=installs,
        unit=None,
        logs=tuple(logs),
        targets=reports,
        unreadable=tuple(dict.fromkeys(fs.denied)),
        notes=tuple(notes + fs.notes),
        os=WINDOWS,
    )


def _target(
    fs: RootFS, target: str, name: str, version: str | None, req, installs, installed, matrix_of, diagnoses
) -> TargetReport:
    tag = f"v{version}" if version else load_pins().sources["ollama"].ref
    parsed = catalog().parse(target)
    runtime_cells = None
    if diagnoses:
        runtime_cells = runtime_verdicts(diagnoses, [parsed])
    facts = FactsRequest.at_release(tag, sources=req.sources, offline=req.offline, strict_coupled=False, os=WINDOWS)
    matrix = _dll_not_scanned(
        matrix_of([parsed], facts, installed=installed or None, runtime_cells=runtime_cells), target, facts.embedded
    )
    route = matrix.routes[0]
    backends = []
    for b in route.backends:
        if b.option is None:
            backends.append(BackendVerdict.without_route(b))
            continue
        steps = tuple(_step(s, target, installs) for s in b.option.steps)
        backends.append(BackendVerdict(b.backend, b.title, "needs steps" if steps else "runs", b.option.label, steps))
    rows = tuple(
        _machine_path(fs, matrix.cells[(layer.id, target)])
        for layer in matrix.layers
        if (layer.id, target) in matrix.cells
    )
    origin = (
        f"embedded snapshot at {tag} (Windows release)" if facts.embedded else f"sources at {tag} (Windows release)"
    )
    return TargetReport(
        target,
        name,
        version,
        origin,
        rows,
        tuple(backends),
        route.sentence,
        None,
        (),
        tuple((layer.id, tuple(layer.backends)) for layer in matrix.layers),
    )


def _dll_not_scanned(matrix, target: str, embedded: bool):
    """The installed-code row of a Windows install: its ggml-hip.dll is PE, which gfxgate's reader (ELF) does not read,
    so the row is not scanned, with that reason, rather than unknown; the answer decided again over it (the one
    ``decide``, with the Windows routes and workarounds)."""
    key = ("installed-gpu-code", target)
    cell = matrix.cells.get(key)
    if cell is None or cell.status is not Status.UNKNOWN:
        return matrix
    why = (
        "the Windows runner's GPU code is in ggml-hip.dll, a PE DLL, which gfxgate does not read (its rocBLAS "
        "files are read: the rocBLAS row)"
    )
    cells = {
        **matrix.cells,
        key: Verdict(key[0], target, Status.NOT_SCANNED, "not scanned: ggml-hip.dll is a PE DLL", reason=why),
    }
    matrix = dataclasses.replace(matrix, cells=cells)
    route = decide(
        matrix,
        target,
        rules=routes_for_os(default_routes(), WINDOWS),
        workarounds=for_os(default_workarounds(), WINDOWS),
    )
    if embedded:
        route = mark_unchecked(route, "the embedded snapshot holds the gate facts, not the workarounds' checks")
    return dataclasses.replace(matrix, routes=(route,))


def _step(step, target: str, installs) -> FixStep:
    """A route step as this Windows machine's: a variable with setx, the rocBLAS copy into the install's runner."""
    setting, proc = step.setting, target.split(":")[0]
    check = step.check and f"{step.check.state} — {step.check.summary}"
    name, eq, value = setting.partition("=")
    if eq and name.replace("_", "").isalnum() and name.isupper() and " " not in value:
        commands: tuple[str, ...] = (f"setx {name} {value}", "quit Ollama from the tray icon and start it again")
        what = f"set {setting} in your user environment (Ollama reads it when it starts)"
    elif step.workaround == "copy-rocblas-tensile-windows":
        dests = [r.rocblas for i in installs.ollama for r in i.runners if r.rocblas and r.kind == "rocm"]
        commands = tuple(
            f'copy <rocBLAS built for {proc}>\\library\\*{proc}* "{windows_path(d)}\\"' for d in dests
        ) or (setting,)
        what = (
            f"copy the rocBLAS files for {proc} (TensileLibrary_*{proc}*, Kernels.so-000-{proc}*) into the "
            "install's rocblas\\library; they must come from a rocBLAS of the installed rocblas.dll's version"
        )
    else:
        commands, what = (setting,), setting
    return FixStep(step.workaround, what, commands, tuple(step.evidence), check=check)


def windows_path(path: str) -> str:
    """A captured tree's path as the Windows machine spells it: /Users/<name>/AppData/Local/… is %LOCALAPPDATA%\\…"""
    path = re.sub(r"^/Users/[^/]+/AppData/Local(?=/|$)", "%LOCALAPPDATA%", path)
    return path.replace("/", "\\")
