"""What `gfxgate doctor` says about an NVIDIA machine (issue 38 item 4): the driver, each GPU's compute capability,
the installed CUDA runner folders and what their code runs, the folder Ollama's discovery can pick, the driver
window of the release (the matrix's cuda-driver cell) against this driver, and the service's CUDA_VISIBLE_DEVICES /
OLLAMA_LLM_LIBRARY. One function, :func:`nvidia_notes`, that app/doctor.py calls for the NVIDIA GPUs it lists."""

from __future__ import annotations

import re
from typing import Mapping

from gfxgate.host import nvidia as host_nvidia
from gfxgate.host.rootfs import RootFS, gpu_code_pairs

ENV = ("CUDA_VISIBLE_DEVICES", "OLLAMA_LLM_LIBRARY")


def nvidia_notes(fs: RootFS, models: list[str], env: Mapping[str, str], version: str | None = None) -> list[str]:
    """One line per fact, for the report's notes; ``models``: the NVIDIA GPUs' names as the host lists them."""
    from gfxgate.artifacts.scan import scan_file
    from gfxgate.artifacts.verdicts import cuda_verdict
    from gfxgate.errors import TargetError
    from gfxgate.targets import catalog

    notes = []
    drv = host_nvidia.driver(fs)
    notes.append(f"NVIDIA driver {drv.version} (R{drv.branch}; /{host_nvidia.VERSION_FILE}: {drv.line})" if drv else
                 f"NVIDIA driver: /{host_nvidia.VERSION_FILE} is not there (the nvidia module is not loaded?)")
    runners = host_nvidia.runners(fs)
    scanned = {r.folder: [scan_file(real, display=lib) for lib, real in gpu_code_pairs(fs, list(r.libraries))]
               for r in runners}  # regular files inside the captured root only (issue 41)
    if not runners:
        notes.append("no CUDA runner folder (cuda_v12, cuda_v13 …) under /usr/lib/ollama or /usr/local/lib/ollama")
    names = [c.model for c in host_nvidia.cards(fs)] or models
    for model in dict.fromkeys(names):
        try:
            target = catalog().parse_target(model)
        except TargetError as exc:
            notes.append(f"{model}: compute capability unknown to gfxgate ({exc}); `nvidia-smi --query-gpu=compute_cap` says it")
            continue
        arch = catalog().nvidia[target.processor]
        listed = []
        for runner in runners:
            files = scanned[runner.folder]
            verdict = cuda_verdict(files, target)
            exact = any(c.arch == target.processor for f in files for c in f.cuda_code)
            if exact:
                listed.append(runner.folder)
            notes.append(f"{model} ({target}, compute capability {arch.capability}) in {runner.path}: {verdict.summary}"
                         + ("" if exact or not files else " — not listed exactly: Ollama's discovery skips the device here"))
        if runners:
            pick = max(listed, key=_runner_rank) if listed else None
            notes.append(f"{model}: Ollama can load {pick} (its code lists {arch.cc_number}0 exactly; the newest such "
                         "runner)" if pick else f"{model}: no installed CUDA runner lists {arch.cc_number}0: Ollama "
                         "skips the device (compute capability not in compiled architectures) and uses Vulkan or the CPU")
        window = _driver_window(target, version)
        if window:
            notes.append(f"{model}: {window}" + (f"; this machine: {_inside(window, drv.branch)}" if drv else ""))
    for name in ENV:
        if name in env:
            notes.append(f"{name}={env[name]} (the service's environment)")
    return notes


def _runner_rank(folder: str) -> tuple[int, str]:
    match = re.search(r"([0-9]+)$", folder)
    return (int(match[1]) if match else 0, folder)


def _driver_window(target, version: str | None) -> str | None:
    """The cuda-driver cell of the target's matrix at the judged release (the embedded snapshot; its pin otherwise)."""
    from gfxgate.errors import GfxgateError
    from gfxgate.gate.scan import FactsRequest, scan_matrix

    try:
        m = scan_matrix([target], FactsRequest.at_release(f"v{version.removeprefix('v')}" if version else None,
                                                           offline=True))
    except GfxgateError:  # a release gfxgate cannot read offline: the pin's snapshot answers, and says its version
        m = scan_matrix([target])
    cell = m.cells.get(("cuda-driver", str(target)))
    return f"driver window at {next((s.ref for s in m.sources if s.name == 'ollama'), 'the pin')}: {cell.summary}" if cell else None


def _inside(window: str, branch: int) -> str:
    """This driver against the window the cell states (its floor "needs driver N or newer", its last branch "RNNN")."""
    floor = re.search(r"needs driver ([0-9]+) or newer", window)
    last = re.search(r"R([0-9]{3}) is the last driver branch", window)
    if floor and branch < int(floor[1]):
        return f"R{branch} is below the floor {floor[1]}: discovery drops the GPU"
    if last and branch > int(last[1]):
        return f"R{branch} is past R{last[1]}, the last branch that supports this GPU"
    return f"R{branch} is inside the window"


def env_values(settings: Mapping[str, object], process: Mapping[str, str] | None = None) -> dict[str, str]:
    """The unit's settings (name -> Setting) and the running server's environment as plain name -> value."""
    out = {name: str(getattr(s, "value", s)) for name, s in settings.items()}
    out.update(process or {})
    return out

