"""What `gfxgate doctor` says about an NVIDIA machine (issue 38 item 4): one target report per NVIDIA GPU, the shape
of an AMD GPU's — the gate matrix at the installed release (the same ``scan_matrix`` and ``answer.route.decide`` as
``gfxgate scan``, with the installed CUDA runners as ``--installed``), this machine's rows (the driver against the
release's window, the runner folder Ollama picks, the service's CUDA_VISIBLE_DEVICES / OLLAMA_LLM_LIBRARY) and the fix
as this machine's steps (a driver in the window, ``OLLAMA_LLM_LIBRARY=<folder>``, the build with this version's
configure command, or Vulkan).

The folder Ollama picks is Ollama's own algorithm over the installed code: a runner folder takes a GPU when its code
lists the GPU's compute capability exactly (discover/llama_server.go, v0.30+: ``"%d%d0"`` in ggml's ``CUDA : ARCHS``)
and the driver passes the folder's floor (discover/cuda_compat.go ``filterOldCUDADriver`` for cuda_v12; CUDA 13 needs
R580); with several folders, ``filterOverlapByLibrary`` (discover/runner.go) keeps one per GPU — :func:`overlap_pick`,
a line-for-line port. ``OLLAMA_LLM_LIBRARY`` restricts the folders tried to the one it names (discover/runner.go).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from gfxgate.doctor.model import BackendVerdict, FixStep, TargetReport
from gfxgate.host import nvidia as host_nvidia
from gfxgate.host.rootfs import RootFS, gpu_code_pairs
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.answer.steps import fill_setting
from gfxgate.artifacts.fatbin import cubin_runs, ptx_runs
from gfxgate.artifacts.scan import scan_file
from gfxgate.doctor.examine import _env_step, _machine_path
from gfxgate.errors import NetworkError, SourceError, TargetError
from gfxgate.gate.route import decide
from gfxgate.gate.scan import FactsRequest
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.host.sysfs import Gpu
from gfxgate.sources.resolve import load_pins
from gfxgate.targets import catalog

ENV = ("CUDA_VISIBLE_DEVICES", "OLLAMA_LLM_LIBRARY")
DRIVER_LAYER, RUNNER_LAYER, ENV_LAYER = "nvidia-driver", "cuda-runner", "environment"


class NvidiaGpu(NamedTuple):
    model: str  # as the driver (or pci.ids) names it
    bus: str  # 0000:3b:00.0
    target: Any  # TargetId or None
    how: str  # where the compute capability comes from
    evidence: Evidence
    uuid: str | None = None
    pci: str | None = None


def overlap_pick(supported: Mapping[str, set[str]]) -> dict[str, str]:
    """Ollama's ``filterOverlapByLibrary`` for one library (CUDA): ``supported`` maps each runner folder to the GPUs
    (ids) it accepted; the answer maps each GPU to the folder that keeps it. The folders are sorted newest first
    (reverse string order); the first whose GPUs every other folder has too is kept — but ``anyMissing`` is never
    reset in Ollama's loop, so once one folder misses a GPU the loop runs to the last (oldest) folder. Every GPU of
    another folder that the kept folder has is dropped from that folder."""
    dirs = sorted(supported, reverse=True)
    if not dirs:
        return {}
    any_missing = False
    newest = dirs[0]
    for newest in dirs:
        for other in dirs:
            if other == newest:
                continue
            if len(supported[newest]) != len(supported[other]) or any(
                d not in supported[other] for d in supported[newest]
            ):
                any_missing = True
                break
        if not any_missing:
            break
    out = {dev: newest for dev in supported[newest]}
    for other in dirs:
        for dev in sorted(supported[other]):
            out.setdefault(dev, other)  # not in the kept folder: the device stays with this one
    return out


def _gpus(fs: RootFS, sys_gpus, smi: list[host_nvidia.SmiGpu]) -> tuple[list[NvidiaGpu], list[str]]:
    """The NVIDIA GPUs: the driver's /proc/driver/nvidia/gpus/*/information (model, bus, UUID), else the DRM cards
    with NVIDIA's vendor id; the compute capability from the model name, else from the PCI id through pci.ids."""
    notes: list[str] = []
    by_bus = {g.bus: g for g in smi}
    found: list[tuple[str, str, str, str | None, str | None]] = [
        (c.model, c.bus, c.path, c.uuid, host_nvidia.pci_device(fs, c.bus)) for c in host_nvidia.cards(fs)
    ]
    if not found and smi:
        found = [(g.name, g.bus, "nvidia-smi", None, host_nvidia.pci_device(fs, g.bus)) for g in smi]
    if not found:
        found = [(g.name, "", "/sys/class/drm", None, g.pci) for g in sys_gpus if g.vendor == "nvidia"]
    out = []
    for model, bus, where, uuid, pci in found:
        names = [(model, "the driver's name", where)]
        if bus in by_bus:  # nvidia-smi's compute_cap is the device's own answer: first
            names.insert(0, (by_bus[bus].compute_cap, "nvidia-smi's compute_cap", "nvidia-smi"))
        if pci:
            named = host_nvidia.pci_name(fs, pci)
            if named:
                names.append((named[0], f"PCI id {pci} in pci.ids", named[1]))
        target, how, ev = None, "", Evidence("nvidia", Location(repo="file", path=where), f"Model: {model}")
        for name, source, path in names:
            try:
                target = catalog().parse_target(name)
            except TargetError:
                continue
            how = source
            ev = (
                Evidence("nvidia-smi", None, f"{model}: compute_cap {name}", " ".join(host_nvidia.SMI_QUERY))
                if path == "nvidia-smi"
                else Evidence("nvidia", Location(repo="file", path=path), name if path != where else f"Model: {model}")
            )
            break
        if target is None:
            notes.append(
                f"{model}{f' ({pci})' if pci else ''}: compute capability unknown to gfxgate; "
                "`nvidia-smi --query-gpu=name,compute_cap --format=csv` says it"
            )
        out.append(NvidiaGpu(model, bus, target, how, ev, uuid, pci))
    return out, notes


def _lists(files, target) -> bool:
    """Ollama's exact match: the code lists the GPU's compute capability (a cubin or PTX for exactly sm_XX)."""
    return any(c.arch == target.processor for f in files for c in f.cuda_code)


class Window(NamedTuple):
    floor: int | None  # cuda_v12's floor (filterOldCUDADriver)
    last: int | None  # NVIDIA's last branch for the GPU
    v13: int | None  # what CUDA 13 runners need
    cell: Verdict | None


def _window(matrix, target) -> Window:
    cell = matrix.cells.get(("cuda-driver", str(target))) if matrix is not None else None
    text = cell.summary if cell is not None else ""
    floor = re.search(r"needs driver ([0-9]+) or newer", text)
    last = re.search(r"R([0-9]{3}) is the last driver branch", text)
    v13 = re.search(r"CUDA 13 runners, which need ([0-9]+)", text)
    return Window(int(floor[1]) if floor else None, int(last[1]) if last else None, int(v13[1]) if v13 else 580, cell)


def _folder_floor(folder: str, window: Window) -> int | None:
    if folder == "cuda_v12":
        return window.floor
    if folder.startswith("cuda_v") and folder[6:].isdigit() and int(folder[6:]) >= 13:
        return window.v13
    return None


def nvidia_reports(
    fs: RootFS,
    sys_gpus,
    version: str | None,
    req,
    env: Mapping[str, Any],
    process_env: Mapping[str, str] | None,
    matrix_of: Callable[..., Any],
    unit=None,
) -> tuple[list[TargetReport], list[str], list[Any]]:
    """One TargetReport per NVIDIA GPU, the machine-wide notes (the driver, the runner folders), and the NVIDIA GPUs
    as the report's GPU list shows them (one per bus, each with its own name: sysfs's DRM cards do not say it)."""
    drv = host_nvidia.driver(fs)
    smi, problem = host_nvidia.smi(fs)  # a live machine with the tool: each GPU's compute_cap, the driver's version
    if drv is None and smi:
        drv = host_nvidia.NvidiaDriver(
            smi[0].driver,
            int(smi[0].driver.split(".")[0]) if smi[0].driver.split(".")[0].isdigit() else 0,
            f"nvidia-smi: driver_version {smi[0].driver}",
        )
    notes = [
        f"NVIDIA driver {drv.version} (R{drv.branch}; /{host_nvidia.VERSION_FILE}: {drv.line})"
        if drv
        else f"NVIDIA driver: /{host_nvidia.VERSION_FILE} is not there (the nvidia module is not loaded?)"
    ]
    runners = host_nvidia.runners(fs)
    pairs = {r.folder: gpu_code_pairs(fs, list(r.libraries)) for r in runners}
    scanned = {r.folder: [scan_file(real, display=lib) for lib, real in pairs[r.folder]] for r in runners}
    if not runners:
        notes.append("no CUDA runner folder (cuda_v12, cuda_v13 …) under /usr/lib/ollama or /usr/local/lib/ollama")
    gpus, more = _gpus(fs, sys_gpus, smi)
    notes += more + ([f"nvidia-smi: {problem}"] if problem else [])
    values = {n: str(getattr(s, "value", s)) for n, s in env.items()}
    values.update(process_env or {})
    requested = values.get("OLLAMA_LLM_LIBRARY", "")
    installed = [real for folder in pairs for _, real in pairs[folder]]
    matrices: dict[str, tuple[Any, str, list[str]]] = {}
    for g in gpus:
        if g.target is not None and str(g.target) not in matrices:
            matrices[str(g.target)] = _matrix(g.target, version, req, installed, matrix_of)
    exact_era = _exact_era(version)
    # which folder accepts which GPU, before the overlap: its code lists the CC exactly (v0.30+; before, any code that
    # runs it) and the driver passes the folder's floor; OLLAMA_LLM_LIBRARY leaves only the folder it names
    supported: dict[str, set[str]] = {}
    why: dict[tuple[str, str], str] = {}
    for r in runners:
        skipped = bool(requested) and not requested.startswith("mlx_") and r.folder != requested
        if not skipped:
            supported[r.folder] = set()
        for g in gpus:
            if g.target is None:
                continue
            m = matrices[str(g.target)][0]
            files = scanned[r.folder]
            listed = _lists(files, g.target) if exact_era else any(_runs(files, g.target))
            floor = _folder_floor(r.folder, _window(m, g.target))
            if not files:
                why[(g.bus, r.folder)] = "no libggml-cuda.so in the folder"
            elif not listed:
                why[(g.bus, r.folder)] = (
                    f"its code does not list {g.target.processor} exactly: Ollama skips the device "
                    "(compute capability not in compiled architectures)"
                )
            elif drv and floor and drv.branch < floor:
                why[(g.bus, r.folder)] = (
                    f"driver R{drv.branch} is below {r.folder}'s floor {floor}: discovery drops the device"
                )
            else:
                why[(g.bus, r.folder)] = "lists it" + ("" if exact_era else " (runs it)")
                if skipped:
                    why[(g.bus, r.folder)] += f", but is skipped: OLLAMA_LLM_LIBRARY={requested}"
                else:
                    supported[r.folder].add(g.bus)
    picks = overlap_pick(supported)
    same = len({frozenset(v) for v in supported.values()}) <= 1
    reports = []
    for g in gpus:
        if g.target is None:
            reports.append(
                TargetReport(
                    g.model,
                    g.model,
                    version,
                    "none: gfxgate does not know this GPU",
                    (),
                    (),
                    "",
                    None,
                    tuple(n for n in notes if n.startswith(g.model)),
                )
            )
            continue
        matrix, origin, mnotes = matrices[str(g.target)]
        reports.append(
            _report(
                fs,
                g,
                gpus,
                version,
                matrix,
                origin,
                mnotes,
                drv,
                runners,
                scanned,
                picks,
                why,
                values,
                env,
                same,
                _machine_path,
            )
        )
    drm = [g.pci for g in sys_gpus if g.vendor == "nvidia"]
    if len(drm) == len(gpus) == 1 and gpus[0].pci is None:  # the one DRM card is the one GPU (no PCI folder read)
        gpus[0] = gpus[0]._replace(pci=drm[0])
    shown = [
        Gpu(
            "nvidia",
            g.pci or "10de:?",
            g.model,
            g.how or "nvidia driver",
            str(g.target) if g.target else None,
            driver="nvidia",
        )
        for g in gpus
    ]
    return reports, notes, shown


def _matrix(target, version: str | None, req, installed, scan_matrix: Callable[..., Any]) -> tuple[Any, str, list[str]]:
    """The gate matrix of an NVIDIA target at the installed release, read as doctor reads an AMD target's
    (``FactsRequest.at_release``: the embedded snapshot at the pin or the release, else the sources there)."""
    tag = f"v{version}" if version else load_pins().sources["ollama"].ref
    facts = FactsRequest.at_release(tag, sources=req.sources, offline=req.offline, strict_coupled=False)
    try:
        matrix = scan_matrix([target], facts, installed=installed or None)
    except (SourceError, NetworkError) as exc:
        return (
            None,
            "",
            [
                f"the sources at {tag} cannot be read here ({exc.message}); give --source "
                f"{exc.source or 'ollama'}=CLONE for {target}'s matrix at {tag}"
            ],
        )
    return matrix, (f"embedded snapshot at {tag}" if facts.embedded else f"sources at {tag}"), []


def _exact_era(version: str | None) -> bool:
    """v0.30+ (or the pin, which is newer): discovery's exact compute-capability match."""
    if not version:
        return True
    parts = [int(p) if p.isdigit() else 0 for p in re.split(r"[.-]", version.lstrip("v"))[:2]]
    return tuple(parts) >= (0, 30)


def _runs(files, target):
    device = catalog().nvidia[target.processor].cc_number
    for f in files:
        for c in f.cuda_code:
            n = int(c.arch.removeprefix("sm_"))
            yield (c.kind == "cubin" and cubin_runs(n, device)) or (c.kind != "cubin" and ptx_runs(n, device))


def _file_ev(path: str, text: str, note: str = "", line: int | None = None) -> Evidence:
    return Evidence("machine", Location(repo="file", path=path, line=line), text[:300], note)


def _report(
    fs,
    g: NvidiaGpu,
    gpus,
    version,
    matrix,
    origin,
    mnotes,
    drv,
    runners,
    scanned,
    picks,
    why,
    values,
    env,
    same,
    machine_path,
) -> TargetReport:
    target = str(g.target)
    arch = catalog().nvidia[g.target.processor]
    window = _window(matrix, g.target)
    tag = (
        f"v{version}"
        if version
        else (next((s.ref for s in matrix.sources if s.name == "ollama"), None) if matrix else None)
    )
    rows: list[Verdict] = []
    if matrix is not None:
        rows += [
            machine_path(fs, matrix.cells[(layer.id, target)])
            for layer in matrix.layers
            if (layer.id, target) in matrix.cells
        ]
    # the GPU and its compute capability
    notes = list(mnotes) + [
        f"{g.model} on {g.bus or 'the PCI bus'}: {target}, compute capability {arch.capability} "
        f"({arch.family}; from {g.how})"
    ]
    # this driver against the release's window
    driver_row, driver_step = _driver_row(target, drv, window, tag)
    rows.append(driver_row)
    # the runner folder Ollama picks
    pick = picks.get(g.bus)
    runner_ev = []
    for r in runners:
        lib = r.libraries[0] if r.libraries else r.path
        codes = sorted(
            {f"{c.arch} {c.kind}" for f in scanned[r.folder] for c in f.cuda_code},
            key=lambda s: (int(re.sub(r"[^0-9]", "", s.split()[0]) or 0), s),
        )
        runner_ev.append(
            _file_ev(
                "/" + lib.lstrip("/"),
                ", ".join(codes) or "no NVIDIA code",
                f"{r.folder}: {why.get((g.bus, r.folder), '')}",
            )
        )
    cite = [
        e
        for layer in ("cuda-discovery",)
        for e in (
            matrix.cells[(layer, target)].evidence[:1] if matrix is not None and (layer, target) in matrix.cells else ()
        )
    ]
    others = [o for o in gpus if o.bus != g.bus and o.target is not None]
    if not runners:
        runner_row = Verdict(
            RUNNER_LAYER,
            target,
            Status.UNKNOWN,
            "no CUDA runner folder installed",
            reason="no cuda_v* folder under /usr/lib/ollama or /usr/local/lib/ollama",
        )
    elif pick:
        shared = [o.model for o in others if picks.get(o.bus) == pick]
        overlap = ""
        listed = [r.folder for r in runners if why.get((g.bus, r.folder), "").startswith("lists")]
        if len(listed) > 1:
            overlap = f"; several folders list it ({', '.join(listed)}): filterOverlapByLibrary keeps {pick}" + (
                " (every folder takes every GPU: the newest)"
                if same
                else " (the folders take different GPUs: Ollama's loop ends at the oldest folder)"
            )
            # the function's line at this release, as the cuda-discovery cell found it (rule ollama-cuda-overlap-library)
            cite += [
                e
                for e in (
                    matrix.cells[("cuda-discovery", target)].evidence
                    if matrix is not None and ("cuda-discovery", target) in matrix.cells
                    else ()
                )
                if e.location and e.location.path == "discover/runner.go" and "filterOverlapByLibrary" in e.text
            ]
        runner_row = Verdict(
            RUNNER_LAYER,
            target,
            Status.ALLOWED,
            f"Ollama picks {pick} for the {g.model}"
            + overlap
            + (f"; the same folder as the {', '.join(shared)}" if shared else ""),
            tuple(runner_ev) + tuple(cite),
        )
    else:
        runner_row = Verdict(
            RUNNER_LAYER,
            target,
            Status.BLOCKED,
            f"no installed CUDA runner takes the {g.model}: Ollama skips it (Vulkan or the CPU)",
            tuple(runner_ev) + tuple(cite),
            remedy="; ".join(f"{r.folder}: {why.get((g.bus, r.folder), '')}" for r in runners),
        )
    rows.append(runner_row)
    rows.append(_env_row(target, env, values, g))
    backends: list[BackendVerdict] = []
    answer = ""
    if matrix is not None:
        route = matrix.routes[0] if matrix.routes else decide(matrix, target)
        answer = route.sentence
        by_id = {w.id: w.at({"ollama": tag}.get) if tag else w for w in default_workarounds()}
        for b in route.backends:
            if b.option is None:
                backends.append(BackendVerdict.without_route(b))
                continue
            steps = [_route_step(s, env, target, tag) for s in b.option.steps]
            if b.backend == "cuda":
                steps = _cuda_machine_steps(
                    steps, g, target, pick, runners, why, values, env, driver_step, by_id, fill_setting, tag
                )
            todo = [s for s in steps if not s.done]
            backends.append(
                BackendVerdict(b.backend, b.title, "needs steps" if todo else "runs", b.option.label, tuple(steps))
            )
        answer = _answer(answer, target, tag, pick, driver_row, backends)
    return TargetReport(
        target,
        g.model,
        version,
        origin or "embedded timeline",
        tuple(rows),
        tuple(backends),
        answer,
        None,
        tuple(notes),
        tuple((layer.id, tuple(layer.backends)) for layer in matrix.layers) if matrix is not None else (),
    )


def _driver_row(target, drv, window: Window, tag) -> tuple[Verdict, FixStep | None]:
    span = (f"R{window.floor}" if window.floor else "any branch") + (
        f" … R{window.last}" if window.last else " and newer"
    )
    cell_ev = tuple(window.cell.evidence[:2]) if window.cell is not None else ()
    if drv is None:
        return (
            Verdict(
                DRIVER_LAYER,
                target,
                Status.BLOCKED,
                f"no NVIDIA driver loaded; the window at {tag} is {span}",
                cell_ev,
                remedy=f"install an NVIDIA driver in {span}",
            ),
            FixStep(
                DRIVER_LAYER,
                f"install an NVIDIA driver in {span} (the window of {target} at {tag})",
                _driver_commands(window),
                cell_ev,
                origin="machine",
            ),
        )
    ev = (_file_ev("/" + host_nvidia.VERSION_FILE, drv.line, f"R{drv.branch}", 1),) + cell_ev
    if window.floor and drv.branch < window.floor:
        what = f"driver {drv.version} (R{drv.branch}) is below the floor {window.floor}: discovery drops the GPU"
    elif window.last and drv.branch > window.last:
        what = (
            f"driver {drv.version} (R{drv.branch}) is past R{window.last}, the last branch that supports {target}"
            f" (NVIDIA's notice)"
        )
    else:
        return Verdict(
            DRIVER_LAYER,
            target,
            Status.ALLOWED,
            f"driver {drv.version} (R{drv.branch}) is inside the window {span} at {tag}",
            ev,
        ), None
    return (
        Verdict(
            DRIVER_LAYER,
            target,
            Status.BLOCKED,
            f"{what}; the window at {tag} is {span}",
            ev,
            remedy=f"install an NVIDIA driver in {span}",
        ),
        FixStep(
            DRIVER_LAYER, f"install an NVIDIA driver in {span}: {what}", _driver_commands(window), ev, origin="machine"
        ),
    )


def _driver_commands(window: Window) -> tuple[str, ...]:
    branch = window.last or window.floor or 580
    return (
        f"# a driver of branch R{branch} (inside R{window.floor or branch} … R{window.last or branch}), from your "
        f"distribution (e.g. Ubuntu: sudo apt install nvidia-driver-{branch}) or NVIDIA's {branch}.x .run installer",
        "sudo reboot",
        "cat /proc/driver/nvidia/version  # check: Kernel Module  " + f"{branch}.xx",
        "sudo systemctl restart ollama",
    )


def _env_row(target, env, values, g: NvidiaGpu) -> Verdict:
    ev, said = [], []
    for name in ENV:
        if name not in values:
            continue
        setting = env.get(name)
        where = getattr(setting, "where", "") or ""
        path, _, line = where.rpartition(":")
        ev.append(
            _file_ev(
                path or "the server's environment", f"{name}={values[name]}", "", int(line) if line.isdigit() else None
            )
        )
        said.append(f"{name}={values[name]}")
    visible = values.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        ids = [v.strip() for v in visible.split(",") if v.strip()]
        if not ids or ids == ["-1"]:
            return Verdict(
                ENV_LAYER,
                target,
                Status.BLOCKED,
                f"CUDA_VISIBLE_DEVICES={visible} hides every NVIDIA GPU",
                tuple(ev),
                remedy="remove CUDA_VISIBLE_DEVICES from the service's environment",
            )
        if g.uuid and any(i.startswith("GPU-") for i in ids) and not any(g.uuid.startswith(i) for i in ids):
            return Verdict(
                ENV_LAYER,
                target,
                Status.BLOCKED,
                f"CUDA_VISIBLE_DEVICES={visible} does not name this GPU ({g.uuid})",
                tuple(ev),
                remedy=f"add {g.uuid} to CUDA_VISIBLE_DEVICES",
            )
    if not said:
        return Verdict(
            ENV_LAYER,
            target,
            Status.ALLOWED,
            "the service sets neither CUDA_VISIBLE_DEVICES nor OLLAMA_LLM_LIBRARY",
            (Evidence("machine", None, "no CUDA_VISIBLE_DEVICES, no OLLAMA_LLM_LIBRARY"),),
        )
    return Verdict(ENV_LAYER, target, Status.ALLOWED, "the service sets " + ", ".join(said), tuple(ev))


def _route_step(step, env, target, tag) -> FixStep:
    name, eq, value = step.setting.partition("=")
    check = step.check and f"{step.check.state} — {step.check.summary}"
    if eq and name.replace("_", "").isalnum() and name.isupper() and " " not in value:
        out = _env_step(
            name, value, env, None, step.workaround, f"set {step.setting} in the service's environment", step.evidence
        )
    elif step.setting.startswith("cmake "):
        out = _build_step(step.workaround, step.setting, target, tag, step.evidence)
    else:
        out = FixStep(step.workaround, step.setting, (step.setting,), tuple(step.evidence))
    return dataclasses.replace(out, check=check)


def _build_step(workaround, setting, target, tag, evidence, origin="route") -> FixStep:
    v = tag or "<version>"
    commands = (
        "git clone --depth 1 --branch " + v + " https://github.com/ollama/ollama && cd ollama",
        *[c.strip() for c in setting.split("&&")],
        "# then point the service at the build (its lib/ollama/cuda_v12 folder) and restart: "
        "sudo systemctl restart ollama",
    )
    return FixStep(
        workaround,
        f"build the CUDA runner with a {target} cubin at {v} ({setting.split(' && ')[0]})",
        commands,
        tuple(evidence),
        origin=origin,
    )


def _cuda_machine_steps(
    steps, g, target, pick, runners, why, values, env, driver_step, by_id, fill_setting, tag
) -> list[FixStep]:
    """The CUDA route as this machine needs it: the driver first; the folder switch where OLLAMA_LLM_LIBRARY names a
    folder that does not take the GPU but another installed one would; the build where no installed folder lists the
    compute capability (and the route has no build step already)."""
    out = ([driver_step] if driver_step else []) + list(steps)
    requested = values.get("OLLAMA_LLM_LIBRARY")
    listing = [r.folder for r in runners if why.get((g.bus, r.folder), "").startswith("lists")]
    if pick is None and requested and listing:
        better = "cuda_v12" if "cuda_v12" in listing else listing[0]
        ev = tuple(
            e
            for r in runners
            if r.folder == requested
            for e in (_file_ev(r.path, why.get((g.bus, r.folder), ""), f"{requested} does not take the {g.model}"),)
        )
        out.append(
            dataclasses.replace(
                _env_step(
                    "OLLAMA_LLM_LIBRARY",
                    better,
                    env,
                    None,
                    "ollama-llm-library",
                    f"set OLLAMA_LLM_LIBRARY={better}: the installed {better} lists {target}",
                    ev,
                ),
                origin="machine",
            )
        )
    elif pick is None and runners and not any(s.workaround == "build-cuda-architectures" for s in out):
        w = by_id.get("build-cuda-architectures")
        if w is not None:
            ev = tuple(_file_ev(r.path, why.get((g.bus, r.folder), ""), r.folder) for r in runners)
            out.append(_build_step(w.id, fill_setting(w.setting, target), target, tag, ev, origin="machine"))
    return out


def _answer(sentence: str, target, tag, pick, driver_row: Verdict, backends) -> str:
    cuda = next((b for b in backends if b.backend == "cuda"), None)
    where = f"Ollama picks {pick}" if pick else "no installed CUDA runner takes it"
    driver = driver_row.summary.split(";")[0]
    head = f"{target}: {where}; {driver}"
    if cuda is not None and cuda.state == "needs steps":
        first = next(s for s in cuda.steps if not s.done)
        head += f"; CUDA needs: {first.what}"
    return f"{head} — the release's answer: {sentence}"
