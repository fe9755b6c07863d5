"""The examination of one machine, `doctor(DoctorRequest, matrix_of) -> (MachineReport, RootFS)`: the machine's facts
(gfxgate.host), the gate matrix at the installed version (``matrix_of``: the use case's matrix builder, passed in, as
a pipeline does not import gfxgate.app), the route (gfxgate.gate.route.decide, the same computation as scan), and the
fix as this machine's steps.

Read-only: files are read through one RootFS (``--root DIR`` reads DIR as ``/``); nothing from a captured tree runs.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from collections.abc import Callable
from dataclasses import field
from pathlib import Path
from typing import Any
import time
import re
import os

from gfxgate.doctor.model import BackendVerdict, FixStep, Live, MachineReport, TargetReport
from gfxgate.errors import InputError, NetworkError, SourceError, TargetError, UsageError
from gfxgate.host import access, install, sysfs, units
from gfxgate.host.rootfs import RootFS, gpu_code
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.answer.override import posed_target
from gfxgate.answer.route import mark_unchecked, with_machine
from gfxgate.answer.steps import fill_setting
from gfxgate.diagnose.remedy import _timeline as cells
from gfxgate.doctor import facts as machine_facts
from gfxgate.doctor.facts import build_recipe, runs_of, runs_of_worklog
from gfxgate.gate.route import decide
from gfxgate.gate.scan import FactsRequest, gate_facts
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.records import dataclass
from gfxgate.sources.resolve import load_pins
from gfxgate.targets import catalog

DROPIN = "/etc/systemd/system/ollama.service.d/override.conf"  # what `sudo systemctl edit ollama` writes


@dataclass(frozen=True)
class DoctorRequest:
    root: Path = Path("/")
    logs: tuple[str, ...] = ()
    live_url: str | None = None  # an Ollama server to ask /api/version and /api/ps
    sources: dict[str, str] = field(default_factory=dict)
    offline: bool = True
    unit: str = "ollama.service"
    journal: bool = False  # read `journalctl -u UNIT` since boot (live machines only)
    fail_on: tuple[str, ...] = ()  # backends (rocm, vulkan, cpu) or "any", comma-separated allowed: the failing ones
    collect: Path | None = None  # also write the files read to this .tar.gz (for `doctor --root`)
    runtime: Path | None = None  # a `gfxgate sweep` worklog of this machine: its runs judge the backends too
    output: str | None = None  # where the report goes (-o): checked against --collect and the inputs (issue 41)
    os: str | None = None  # the release answered for; None: the tree's (host/install.py: tree_os, docs/windows.md)


def _file_ev(source: str, path: str, line: int | None, text: str, note: str = "") -> Evidence:
    return Evidence(source, Location(repo="file", path=path, line=line), text[:300], note)


def _where_ev(source: str, where: str, text: str, note: str = "") -> Evidence:
    path, _, line = where.rpartition(":")
    return _file_ev(source, path, int(line) if line.isdigit() else None, text, note)


def _line_of(fs: RootFS, path: str, prefix: str) -> int | None:
    for number, line in enumerate((fs.read_text(path) or "").splitlines(), 1):
        if line.startswith(prefix):
            return number
    return None


def _ask_live(url: str) -> Live:
    """An Ollama server or a llama-server, through doctor/live.py's bounded reader (one deadline, a body cap, no
    redirect to another host)."""
    from gfxgate.doctor.live import ask

    return ask(url)


def doctor(req: DoctorRequest, matrix_of: Callable[..., Any]) -> tuple[MachineReport, RootFS]:
    """The report, and the RootFS that read it (what ``--collect`` writes); ``matrix_of`` builds a gate matrix
    (the use case's ``scan.matrix``)."""
    if not req.root.is_dir():
        raise InputError(f"--root {req.root}: not a folder")
    fs = RootFS(req.root)
    if (req.os or install.tree_os(fs)) == "windows":  # a captured Windows install: doctor/windows.py answers it
        from gfxgate.doctor import windows

        return windows.examine(req, fs, matrix_of), fs
    gpus = sysfs.gpus(fs)
    loaded = sysfs.amdgpu_loaded(fs)
    path_dirs: tuple[str, ...] = ()
    if fs.live:
        path_dirs = tuple(p for p in os.environ.get("PATH", "").split(":") if p.startswith("/"))
    installs = install.find(fs, path_dirs=path_dirs)
    unit = units.read_unit(fs, req.unit)
    proc = units.process_environment(fs) if fs.live or fs.glob("proc/[0-9]*/comm") else None
    render = [g.render_node for g in gpus if g.render_node]
    nodes = access.nodes(fs, render)
    users = []
    if unit is not None:
        users.append(access.user_access(fs, unit.user, "service", nodes, unit.supplementary_groups))
    me = fs.invoking_user()
    if me and all(u.user != me for u in users):
        users.append(access.user_access(fs, me, "you", nodes))
    live = _ask_live(req.live_url) if req.live_url else None
    diagnoses = None
    if req.journal and not fs.live:
        raise UsageError(
            "--journal reads this machine's journal; a captured tree has none", hint="give the log with --log FILE"
        )
    logs = list(req.logs) or fs.captured_logs()  # a replayed capture brings the logs it was made with
    if logs or req.journal:
        from gfxgate.diagnose import diagnose_inputs

        diagnoses = diagnose_inputs(
            logs, units=[req.unit] if req.journal else [], since=_boot_time(fs) if req.journal else None, locate=False
        )
    version, notes = _version(installs, live, diagnoses)
    if diagnoses:  # the log's own conclusions, as `gfxgate diagnose` and `scan --log` word them
        from gfxgate.diagnose.summary import log_conclusions

        notes += log_conclusions(diagnoses)

    runs = runs_of(diagnoses)
    if req.runtime is not None:
        from gfxgate.sweep.worklog import read_worklog

        runs += runs_of_worklog(read_worklog(req.runtime))
    facts = dataclasses.replace(install.machine_facts(fs), runs=runs)
    env = {s.name: s for s in unit.environment} if unit else {}
    reports = []
    amd = [g for g in gpus if g.vendor == "amd" and g.target is not None]
    code: dict[tuple[str, ...], list[Path]] = {}  # the installed GPU code, walked once for all the GPUs
    gates: dict[str, Any] = {}  # the gate facts at the installed version, read once for all the GPUs
    machine = _Machine(fs, version, req, installs, unit, env, users, nodes, diagnoses, matrix_of, facts, code, gates)
    for index, gpu in enumerate(amd):
        reports.append(_known_target_report(machine, gpu, index))
    if any(g.vendor == "nvidia" for g in gpus) or fs.exists("/proc/driver/nvidia/version"):  # issue 38
        from gfxgate.doctor.nvidia_machine import nvidia_reports

        nv_reports, nv_notes, nv_gpus = nvidia_reports(
            fs, gpus, version, req, env, proc[1] if proc else None, matrix_of, unit
        )
        reports += nv_reports
        notes += nv_notes
        gpus = [g for g in gpus if g.vendor != "nvidia"] + nv_gpus
    if not gpus and not any(r.target.startswith("sm_") for r in reports):
        notes.append(
            "no GPU in /sys/class/kfd/kfd/topology/nodes or /sys/class/drm: is the amdgpu module loaded?"
            if not loaded
            else "amdgpu is loaded but KFD lists no GPU node"
        )
    return MachineReport(
        root=str(req.root),
        gpus=tuple(gpus),
        amdgpu_loaded=loaded,
        installs=installs,
        unit=unit,
        process_env=tuple(sorted(proc[1].items())) if proc else (),
        process_env_from=proc[0] if proc else None,
        nodes=tuple(nodes),
        access=tuple(users),
        live=live,
        logs=tuple(logs),
        targets=tuple(reports),
        unreadable=tuple(dict.fromkeys(fs.denied)),
        notes=tuple(notes + fs.notes),
        facts=facts,
    ), fs


def _boot_time(fs: RootFS) -> str | None:
    """`journalctl -b` as a --since: now minus /proc/uptime."""
    try:
        uptime = float((fs.read_text("/proc/uptime") or "").split()[0])
    except (IndexError, ValueError):
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() - uptime))


def _machine_path(fs: RootFS, verdict: Verdict) -> Verdict:
    """A row's evidence under --root names the machine's path (/usr/local/lib/ollama/…), not the folder's."""
    if fs.live:
        return verdict
    base = str(fs.root.resolve()).rstrip("/")
    evidence = tuple(
        dataclasses.replace(e, location=dataclasses.replace(e.location, path=e.location.path[len(base) :]))
        if e.location and e.location.repo == "file" and e.location.path.startswith(base + "/")
        else e
        for e in verdict.evidence
    )

    # a remedy or summary that cites another cell's evidence (the override's posed target) names its path too
    def text(value: str) -> str:
        return value.replace(base + "/", "/")

    return dataclasses.replace(
        verdict,
        evidence=evidence,
        summary=text(verdict.summary),
        remedy=text(verdict.remedy) if verdict.remedy else verdict.remedy,
    )


def _version(installs, live, diagnoses) -> tuple[str | None, list[str]]:
    notes = []
    seen = []
    for install_ in installs.ollama:
        if install_.version:
            seen.append((install_.version, install_.version_from))
    if live is not None and live.version and live.kind == "ollama":
        seen.append((live.version, f"{live.url}/api/version"))
    for d in diagnoses or ():
        fact = d.fact("ollama-version")
        if fact is not None:
            where = str(fact.evidence[0].location) if fact.evidence[0].location else d.log
            seen.append((fact.value.lstrip("v"), f"log {where}"))
    if not seen:
        notes.append(
            "the installed Ollama version is unknown (no binary answered, no live server, no log): "
            "the matrix is the pinned release's"
        )
        return None, notes
    versions = list(dict.fromkeys(v for v, _ in seen))
    if len(versions) > 1:
        notes.append(
            "different Ollama versions: " + "; ".join(f"{v} ({w})" for v, w in seen) + f": judging {versions[0]}"
        )
    return versions[0], notes


def _matrix(
    target: str,
    version: str | None,
    req: DoctorRequest,
    installed: list[Path],
    runtime_cells,
    scan_matrix: Callable[..., Any],
    gates: dict[str, Any] | None = None,
):
    """(matrix, where from, notes): the facts at the installed version (``gate.scan.FactsRequest.at_release``: the
    pins' snapshot at the pin, a pin set's at its release, else the sources there, a coupled source that cannot be
    read falling back to its embedded copy as scan's does); None when the sources cannot be read (the timeline
    snapshot answers then, and the note names the source to give).

    ``gates`` (tag -> ``gate.scan.GateFacts``, or the error reading them): one run's gate facts, the same for each GPU
    of the machine (they depend on the release and the request, not on the target), read for the first and reused:
    a machine of many GPUs opened the same sources (or failed to, offline) once per GPU."""
    tag = f"v{version}" if version else load_pins().sources["ollama"].ref
    facts = FactsRequest.at_release(tag, sources=req.sources, offline=req.offline, strict_coupled=False)
    parsed = [catalog().parse(target)]
    try:
        if gates is None:
            matrix = scan_matrix(parsed, facts, installed=installed or None, runtime_cells=runtime_cells)
        else:
            if tag not in gates:
                try:
                    gates[tag] = gate_facts(facts)
                except (SourceError, NetworkError) as exc:
                    gates[tag] = exc
            if isinstance(gates[tag], Exception):
                raise gates[tag]
            matrix = scan_matrix(
                parsed, facts, installed=installed or None, runtime_cells=runtime_cells, gate=gates[tag]
            )
    except (SourceError, NetworkError) as exc:
        missing = exc.source or "ollama"  # the source that could not be read, not always ollama
        return (
            None,
            "",
            [
                f"the sources at {tag} cannot be read here ({exc.message}); the answer is the embedded "
                f"timeline's at {tag} (give --source {missing}=CLONE for the full matrix)"
            ],
        )
    return matrix, (f"embedded snapshot at {tag}" if facts.embedded else f"sources at {tag}"), []


def _env_step(name: str, value: str, env, proc_env, workaround: str, what: str, evidence) -> FixStep:
    have = env.get(name)
    if have is not None and have.value == value:
        return FixStep(
            workaround, what, (), (_where_ev("unit", have.where, f"{name}={value}", "already set"),), done=True
        )
    ev = list(evidence)
    if have is not None:
        ev.insert(
            0,
            _where_ev("unit", have.where, f"{name}={have.value}", f"set to {have.value!r}, the route needs {value!r}"),
        )
    text = f'[Service]\nEnvironment="{name}={value}"'
    return FixStep(
        workaround,
        what,
        (
            "sudo systemctl edit ollama",
            f"# add, in the editor (saved as {DROPIN}):",
            text,
            "sudo systemctl daemon-reload && sudo systemctl restart ollama",
        ),
        tuple(ev),
    )


def _plan_steps(steps, target, version, env, installs, fs, gpu, facts=None, exec_start=None) -> list[FixStep]:
    """Route steps (workaround id, setting, evidence, check) as this machine's steps, each with its check."""
    out: list[FixStep] = []
    for workaround, setting, evidence, check in steps:
        step = len(out)
        name, eq, value = setting.partition("=")
        if eq and name.replace("_", "").isalnum() and name.isupper() and " " not in value:
            out.append(
                _env_step(name, value, env, None, workaround, f"set {setting} in the service's environment", evidence)
            )
        elif workaround == "copy-rocblas-tensile":
            out.append(_copy_step(fs, target, installs, evidence, setting))
        elif workaround.startswith("build-") and setting.startswith("cmake "):
            out.append(
                FixStep(
                    workaround,
                    f"build the ROCm runner for {target.split(':')[0]} at v{version} and install it: {setting}",
                    build_recipe(setting, version, facts, exec_start),
                    tuple(evidence),
                )
            )
        else:
            out.append(FixStep(workaround, setting, (setting,), tuple(evidence)))
        out[step] = dataclasses.replace(out[step], check=check)
    return out


def _copy_step(fs: RootFS, target: str, installs, evidence, setting: str | None = None) -> FixStep:
    """The route's copy step (``setting``: the one every command prints, rules/workarounds.yaml) filled from this
    machine: ``"$ROCBLAS"`` by a rocBLAS here that has the target's files, ``<ollama>/…/rocblas/library/`` by each
    bundled rocBLAS folder, and the check the setting asks for (the librocblas versions) made here."""
    proc = target.split(":")[0]
    if setting is None:
        setting = fill_setting(next(w.setting for w in default_workarounds() if w.id == "copy-rocblas-tensile"), target)
    command, _, _check = setting.partition("  # ")
    dests = [r.rocblas for i in installs.ollama for r in i.runners if r.rocblas]
    if not dests and installs.system_rocblas:  # no bundled rocBLAS (Arch's ollama-rocm, Debian): the system's is loaded
        has = [f for f in installs.system_rocblas if proc in install.rocblas_lazy_targets(fs, f)]
        if has:
            return FixStep(
                "copy-rocblas-tensile",
                f"nothing to copy: the runner loads the system rocBLAS, which has "
                f"TensileLibrary_lazy_{proc}.dat ({has[0]})",
                (),
                (_file_ev("rocblas", has[0], None, f"TensileLibrary_lazy_{proc}.dat"),),
                done=True,
            )
        return FixStep(
            "copy-rocblas-tensile",
            f"the runner loads the system rocBLAS ({installs.system_rocblas[0]}), which "
            f"has no TensileLibrary_lazy_{proc}.dat: install a rocBLAS built for {proc}",
            (
                f"# a rocBLAS of the same version built for {proc} (its TensileLibrary_lazy_{proc}.dat and "
                f"*{proc}* files in {installs.system_rocblas[0]})",
            ),
            tuple(evidence),
        )
    sources = [
        f"{folder}/lib/rocblas/library" for folder, _ in installs.rocm if fs.is_dir(f"{folder}/lib/rocblas/library")
    ]
    have = [s for s in sources if any(proc in e for e in fs.listdir(s))]
    if have:
        command = command.replace('"$ROCBLAS"/library', shlex.quote(have[0]))
    bundled = "<ollama>/lib/ollama/rocm*/rocblas/library/"
    commands = tuple("sudo " + command.replace(bundled, f"{shlex.quote(d)}/") for d in dests) or ("sudo " + command,)
    if have:
        why, match = "", _rocblas_versions(fs, have[0], dests)
    else:
        named = ", ".join(sources) if sources else "no ROCm folder"
        versions = sorted({v for d in dests if (v := _librocblas_version(fs, d))})
        why = (
            f" (no rocBLAS here has {proc} files ({named}): set ROCBLAS to a rocBLAS built for {proc}"
            + (f", librocblas {', '.join(versions)} as Ollama bundles" if versions else "")
            + ")"
        )
        match = (
            "the copied files must be of librocblas " + ", ".join(versions)
            if versions
            else "the rocBLAS versions cannot be checked here (no librocblas.so.<version> beside Ollama's rocBLAS)"
        )
    return FixStep(
        "copy-rocblas-tensile",
        f"copy the {proc} rocBLAS/Tensile files into Ollama's rocBLAS{why}; {match}",
        commands,
        tuple(evidence),
    )


def _librocblas_version(fs: RootFS, library: str) -> str | None:
    """The ``librocblas.so.<version>`` beside a rocBLAS library folder (rocBLAS reads Tensile files of its own version
    only); None when none is there."""
    parent = library.rsplit("/rocblas/library", 1)[0] if "/rocblas/library" in library else library.rsplit("/", 1)[0]
    for folder in (parent, parent.rsplit("/", 1)[0]):
        names = [n for n in fs.listdir(folder) if re.fullmatch(r"librocblas\.so\.[0-9]+\.[0-9]+(\.[0-9]+)*", n)]
        if names:
            return max(names, key=len).removeprefix("librocblas.so.")
    return None


def _rocblas_versions(fs: RootFS, src: str, dests: list[str]) -> str:
    """Whether the source rocBLAS is the version Ollama bundles: the ``librocblas.so.<version>`` beside each library
    folder (rocBLAS reads Tensile files of its own version only)."""
    have, want = _librocblas_version(fs, src), [_librocblas_version(fs, d) for d in dests]
    if have is None or not want or None in want:
        missing = [f for f, v in [(src, have), *zip(dests, want)] if v is None]
        return f"the rocBLAS versions cannot be checked here (no librocblas.so.<version> beside {', '.join(missing) or 'Ollama’s rocBLAS'})"
    if all(w == have for w in want):
        return f"versions match: librocblas {have} in both"
    return (
        f"versions differ: the source is librocblas {have}, Ollama bundles {', '.join(sorted(set(w for w in want if w)))}: "
        f"take the files from a rocBLAS of Ollama's version"
    )


def _machine_rows(fs, gpu, target, env, users, nodes, unit, installs, index: int = 0) -> list[Verdict]:
    rows = []
    svc = next((u for u in users if u.role == "service"), None)
    needed = [n for n in nodes if n.path in ("/dev/kfd", gpu.render_node)]
    ev = [
        _file_ev("stat", n.path, None, f"{n.path} mode {n.mode} group {n.group}" if n.present else f"{n.path} missing")
        for n in needed
    ]
    if svc is not None:
        denied = [p for p, ok in svc.nodes if not ok and p in [n.path for n in needed]]
        gline = None
        groups = {n.group for n in needed if n.present and n.path in denied}
        for group in sorted(g for g in groups if g):
            gline = _line_of(fs, "/etc/group", f"{group}:")
            ev.append(
                _file_ev(
                    "/etc/group",
                    "/etc/group",
                    gline,
                    next((g for g in (fs.read_text("/etc/group") or "").splitlines() if g.startswith(f"{group}:")), ""),
                    f"{svc.user} is not a member",
                )
            )
        if unit and unit.user_where:
            ev.append(_where_ev("unit", unit.user_where, f"User={unit.user}"))
        status = Status.BLOCKED if denied else Status.ALLOWED
        summary = (
            f"the service user {svc.user} cannot open {', '.join(denied)}"
            if denied
            else f"the service user {svc.user} may open {', '.join(n.path for n in needed)}"
        )
        rows.append(
            Verdict(
                "access",
                target,
                status,
                summary,
                tuple(ev),
                remedy=(
                    " && ".join(
                        f"sudo usermod -aG {shlex.quote(g)} {shlex.quote(svc.user)}" for g in sorted(groups) if g
                    )
                    or None
                )
                if denied
                else None,
            )
        )
    else:
        rows.append(
            Verdict(
                "access", target, Status.UNKNOWN, "no ollama service unit found", reason="no systemd unit of ollama"
            )
        )
    # ROCr reads HSA_OVERRIDE_GFX_VERSION_<n> for its n-th GPU before the plain variable (Ollama's docs/gpu.md)
    override = env.get(f"HSA_OVERRIDE_GFX_VERSION_{index}") or env.get("HSA_OVERRIDE_GFX_VERSION")
    if override is not None:
        rows.append(_override_row(fs, target, override, installs))
    if env:
        shown = [s for s in env.values()]
        env_ev = tuple(
            _where_ev(
                "unit", s.where, f"{s.name}={s.value}", ("overrides " + ", ".join(s.overridden)) if s.overridden else ""
            )
            for s in shown
        )
        rows.append(
            Verdict(
                "environment",
                target,
                Status.ALLOWED,
                "the service sets " + ", ".join(f"{s.name}={s.value}" for s in shown),
                env_ev,
            )
        )
    elif unit is not None:
        rows.append(
            Verdict(
                "environment",
                target,
                Status.ALLOWED,
                "the service sets none of the GPU variables",
                (
                    _file_ev(
                        "unit",
                        unit.path or unit.name,
                        unit.exec_where and int(unit.exec_where.rsplit(":", 1)[1]),
                        f"ExecStart={unit.exec_start}",
                    ),
                ),
            )
        )
    return rows


def _override_row(fs, target, override, installs) -> Verdict:
    """What the service's HSA_OVERRIDE_GFX_VERSION does with this machine's files: the runtime reports another
    target, whose Tensile catalog Ollama's discovery and rocBLAS then need in the bundled rocBLAS."""
    ev = [_where_ev("unit", override.where, f"HSA_OVERRIDE_GFX_VERSION={override.value}")]
    try:
        as_target = posed_target(override.value)
    except TargetError as exc:
        return Verdict(
            "override", target, Status.BLOCKED, f"HSA_OVERRIDE_GFX_VERSION={override.value}: {exc.message}", tuple(ev)
        )
    folders = [r for i in installs.ollama for r in i.runners if r.rocblas]
    if not folders:
        return Verdict(
            "override",
            target,
            Status.UNKNOWN,
            f"the override makes the runtime report {as_target}",
            tuple(ev),
            reason="no bundled rocBLAS folder found",
        )
    has = [r for r in folders if as_target in r.lazy_catalogs]
    for r in folders:
        names = [n for n in fs.listdir(r.rocblas) if n.startswith("TensileLibrary_lazy_")]
        ev.append(
            _file_ev(
                "rocblas",
                r.rocblas,
                None,
                ", ".join(names) or "no TensileLibrary_lazy_*.dat",
                f"TensileLibrary_lazy_{as_target}.dat " + ("present" if r in has else "missing"),
            )
        )
    if has:
        return Verdict(
            "override",
            target,
            Status.ALLOWED,
            f"the override makes the runtime report {as_target}; the bundled rocBLAS has its catalog",
            tuple(ev),
        )
    return Verdict(
        "override",
        target,
        Status.BLOCKED,
        f"the override makes the runtime report {as_target}, but the bundled rocBLAS has no "
        f"TensileLibrary_lazy_{as_target}.dat: discovery drops the GPU",
        tuple(ev),
        remedy=f"remove the override from {override.where.rsplit(':', 1)[0]}, or copy {as_target}'s rocBLAS files",
    )


@dataclass(frozen=True)
class _Machine:
    """What every AMD GPU's report of one machine reads: its tree, the installed version, the request, the installs,
    the service unit and its environment, the users and device nodes, the logs' diagnoses, the matrix builder and the
    machine's facts; ``code`` (the installed GPU code by paths) and ``gates`` (the gate facts by tag) are filled by
    the first GPU that walks or reads them, for the others."""

    fs: Any
    version: Any
    req: Any
    installs: Any
    unit: Any
    env: dict
    users: list
    nodes: Any
    diagnoses: Any
    matrix_of: Any
    facts: Any
    code: dict
    gates: dict


def _known_target_report(machine: _Machine, gpu: Any, index: int) -> TargetReport:
    """``_target_report``, but a GPU whose target gfxgate does not know (gfx1250 before its catalog entry) is reported
    with a note, not fatal: the other GPUs of the machine keep their report (issue 41)."""
    try:
        return _target_report(machine, gpu, index)
    except TargetError as exc:
        return TargetReport(
            gpu.target,
            gpu.name,
            machine.version,
            "none: gfxgate does not know this target",
            (),
            (),
            "",
            None,
            (f"{exc.message}: no gate matrix for it in this gfxgate (a newer one may know it)",),
            (),
        )


def _target_report(m: _Machine, gpu: Any, index: int = 0) -> TargetReport:
    """One AMD GPU's report; the installed GPU code and the gate facts are taken from ``m`` when another GPU of the
    machine already walked or read them, else walked or read and left there."""
    fs, version, req, installs, unit, env = m.fs, m.version, m.req, m.installs, m.unit, m.env
    users, nodes, diagnoses, facts = m.users, m.nodes, m.diagnoses, m.facts
    matrix_of, code, gates = m.matrix_of, m.code, m.gates
    target = gpu.target
    paths = tuple(installs.gpu_code_files())
    walked = code.get(paths)
    if walked is None:  # the same files for every GPU; the walk's notes are the first GPU's, as each repeats them
        walked = gpu_code(fs, list(paths))
        code[paths] = walked
    installed = list(walked)
    runtime_cells = None
    if diagnoses:
        from gfxgate.diagnose.analyse import runtime_verdicts

        runtime_cells = runtime_verdicts(diagnoses, [catalog().parse(target)])
    matrix, origin, notes = _matrix(target, version, req, installed, runtime_cells, matrix_of, gates)
    machine = _machine_rows(fs, gpu, target, env, users, nodes, unit, installs, index)
    access_row = machine[0]
    backends, answer, pin = [], "", _pin(target, version)
    route = None
    rows: tuple[Verdict, ...] = ()
    if matrix is not None:
        route = matrix.routes[0] if matrix.routes else decide(matrix, target)
        rows = tuple(
            _machine_path(fs, matrix.cells[(layer.id, target)])
            for layer in matrix.layers
            if (layer.id, target) in matrix.cells
        )
    else:  # the Route the embedded timeline stored at this release: the same record scan computes, read back
        route, tag = _timeline_route(target, version)
        if route is None:
            notes.append(f"the embedded timeline has no {target} at {tag}")
    judged = None
    if route is not None:
        answer = route.sentence  # the release's route; the machine's word on each backend is the Route's (decide's)
        route = with_machine(route, facts)
        judged = {b.backend: b.machine for b in route.backends}
        for b in route.backends:
            if b.option is None:
                backends.append(BackendVerdict.without_route(b))
                continue
            steps = _plan_steps(
                [
                    (s.workaround, s.setting, s.evidence, s.check and f"{s.check.state} — {s.check.summary}")
                    for s in b.option.steps
                ],
                target,
                version,
                env,
                installs,
                fs,
                gpu,
                facts,
                unit and unit.exec_start,
            )
            backends.append(_verdict(b.backend, b.title, b.option.label, steps, access_row, b.backend != "cpu"))
    layer_backends = tuple((layer.id, tuple(layer.backends)) for layer in matrix.layers) if matrix is not None else ()

    for number, before in enumerate(backends):
        if before.backend == "rocm":
            backends[number] = _installed_rocblas(before, target, env, installs, fs)
            if backends[number].label != before.label and before.label in answer:
                answer = answer.replace(before.label, backends[number].label, 1)
    backends = machine_facts.apply(machine_facts.remove_override(backends, machine), facts, judged)
    answer = machine_facts.answer(answer, backends, facts, pin, target, version)
    pin_commands, gives_up = machine_facts.pin_route(pin, facts, version, vulkan=_vulkan_at_pin(target, pin))
    return TargetReport(
        target,
        gpu.name,
        version,
        origin or "embedded timeline",
        tuple(rows) + tuple(machine),
        tuple(backends),
        answer,
        pin,
        tuple(notes),
        layer_backends,
        pin_commands,
        gives_up,
        machine_facts.packaged_lines(target),
        machine_facts.runtime_lines(target, version),
    )


def _installed_rocblas(verdict: BackendVerdict, target: str, env, installs, fs) -> BackendVerdict:
    """The installed rocBLAS decides ROCm's steps at any version, offline: a route that needs no override and no copy
    while no installed rocBLAS folder has ``TensileLibrary_lazy_<target>.dat`` gets the override whose target the
    folder has (a documented HSA_OVERRIDE_GFX_VERSION of rules/workarounds.yaml), else the copy step."""
    if verdict.state not in ("runs", "needs steps") or any(
        s.workaround == "copy-rocblas-tensile" or "HSA_OVERRIDE_GFX_VERSION" in " ".join(s.commands)
        for s in verdict.steps
    ):
        return verdict
    proc = target.split(":")[0]
    # (folder, targets with a lazy catalog, targets any Tensile/Kernels file names): rocBLAS before the lazy catalogs
    # (ROCm 5) has none, so a target is missing only when no file of the folder names it
    folders = [
        (r.rocblas, r.lazy_catalogs, {t for t, _ in r.tensile}) for i in installs.ollama for r in i.runners if r.rocblas
    ]
    folders = folders or [
        (f, install.rocblas_lazy_targets(fs, f), set(install.rocblas_lazy_targets(fs, f)))
        for f in installs.system_rocblas
    ]
    if not folders or any(proc in lazy or proc in named for _, lazy, named in folders):
        return verdict
    folder, lazy, _ = folders[0]
    ev = _file_ev(
        "rocblas",
        folder,
        None,
        ", ".join(f"TensileLibrary_lazy_{t}.dat" for t in lazy) or "no lazy catalogs",
        f"TensileLibrary_lazy_{proc}.dat missing",
    )

    for w in default_workarounds():
        if w.override and proc in w.applies_to and posed_target(w.override) in lazy:
            step = dataclasses.replace(
                _env_step(
                    "HSA_OVERRIDE_GFX_VERSION",
                    w.override,
                    env,
                    None,
                    w.id,
                    f"set HSA_OVERRIDE_GFX_VERSION={w.override}: the installed rocBLAS has no "
                    f"{proc} catalog, but has {posed_target(w.override)}'s",
                    (ev,),
                ),
                origin="machine",
            )
            steps = (step, *verdict.steps)
            return dataclasses.replace(
                verdict,
                state="needs steps" if any(not s.done for s in steps) else "runs",
                steps=steps,
                label=f"{verdict.label.replace(' out of the box', '')} + override {w.override} (installed rocBLAS)",
            )
    step = dataclasses.replace(_copy_step(fs, target, installs, (ev,)), origin="machine")
    return dataclasses.replace(
        verdict,
        state="needs steps",
        steps=(*verdict.steps, step),
        label=f"{verdict.label} + rocBLAS files (installed rocBLAS)",
    )


def _verdict(backend, title, label, steps, access_row, needs_gpu) -> BackendVerdict:
    steps = list(steps)
    if needs_gpu and access_row.status == Status.BLOCKED and access_row.remedy:
        steps.append(
            FixStep(
                "access", access_row.summary, (access_row.remedy, "sudo systemctl restart ollama"), access_row.evidence
            )
        )
    todo = [s for s in steps if not s.done]
    return BackendVerdict(backend, title, "needs steps" if todo else "runs", label, tuple(steps))


@functools.cache
def _timeline():
    """The embedded timeline's cells, once per run, as the remedies read them (None when stale or missing: the
    answer then says so)."""
    return cells()


def _timeline_route(target: str, version: str | None):
    """(the Route the embedded timeline stored for ``target`` at ``version``, its tag); None when it holds neither.
    Its steps were not checked at that version, and say so."""
    timeline = _timeline()
    tag = f"v{version}" if version else (timeline.tags[-1] if timeline is not None else "the pin")
    if timeline is None or target not in timeline.targets or tag not in timeline.tags:
        return None, tag
    return mark_unchecked(
        timeline.route_at(target, tag),
        (
            f"the embedded timeline holds the gate facts, not the workarounds' checks: `gfxgate workarounds --ref "
            f"ollama={tag}` checks the step at this version"
        ),
    ), tag


def _pin(target: str, version: str | None) -> str | None:
    """The newest release whose ROCm route needs no build and no file copy, from the embedded timeline."""
    timeline = _timeline()
    if timeline is None or target not in timeline.targets:
        return None
    good = None
    for cell in timeline.row(target).cells:
        rocm = next((b for b in cell.backends if b.backend == "rocm"), None)
        if (
            rocm is not None
            and rocm.state == "route"
            and not any(s.startswith(("build-", "copy-")) for s in rocm.steps)
        ):
            good = cell
    if good is None:
        return None
    inside = version and _in_range(f"v{version}", good, timeline.tags)
    rocm = next(b for b in good.backends if b.backend == "rocm")
    return (
        None
        if inside
        else f"ollama {good.last} (the newest release where ROCm runs {target} as '{rocm.label}': {good.first} … {good.last})"
    )


def _vulkan_at_pin(target: str, pin: str | None) -> bool | None:
    """Whether the embedded timeline gives ``target`` a Vulkan route at the pinned release (the release's archive
    ships a Vulkan runner there: rules' release-archive row); None when the timeline does not say."""
    timeline = _timeline()
    tag = pin.split()[1] if pin and len(pin.split()) > 1 else None
    if timeline is None or tag is None or target not in timeline.targets or tag not in timeline.tags:
        return None
    return any(b.backend == "vulkan" and b.state == "route" for b in timeline.cell_at(target, tag).backends)


def _in_range(tag, cell, tags) -> bool:
    try:
        i, a, b = tags.index(tag), tags.index(cell.first), tags.index(cell.last)
    except ValueError:
        return False
    return a <= i <= b
