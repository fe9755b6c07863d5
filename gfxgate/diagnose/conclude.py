"""The conclusions that come before a crash or a dropped device, for any vendor (issue 39), and the log's device list.

Each reads what the analysis already found (findings, runs, device lines, Ollama's choices) and says it with the
log's own numbers: out of GPU memory (needed, free, layers offloaded), an NVIDIA driver below the runner's floor, a
CUDA build without code for the GPU's compute capability, a runner without a GPU backend, the wrong device picked,
a visible-devices variable hiding the GPU. A number the log does not give is left out of the sentence, never guessed.
"""

from __future__ import annotations

import dataclasses
import re

from gfxgate.diagnose.analyse import attrs, evidence_of
from gfxgate.diagnose.model import Conclusion, Finding, Gpu, Run
from gfxgate.diagnose.stream import Hit
from gfxgate.diagnose.vendor import AMD, NVIDIA, arch_capability, arch_number, backend_vendor, name_vendor
from gfxgate.lazyre import lazy_compile
from gfxgate.model import Status, Verdict

OOM = "gpu-oom"
_CPU_RUNNER = lazy_compile(r"[/\\]cpu(?:_[a-z0-9]+)?[/\\]ollama_llama_server")
_CUDA_FOLDER = lazy_compile(r"\bcuda_v\d+\b")


def _line(finding: Finding) -> str:
    location = finding.evidence[0].location
    return f"log line {location.line}" if location and location.line else "the log"


def _groups(catalogue, finding: Finding) -> dict[str, str]:
    """The named groups of the finding's message in its first line (the numbers the sentence quotes)."""
    match = catalogue.by_id(finding.message).regex.search(finding.evidence[0].text)
    return {k: v for k, v in (match.groupdict() if match else {}).items() if v}


def _mib(value: float) -> str:
    return f"{value:,.0f} MiB" if value >= 10 else f"{value:.2f} MiB"


def first_conclusions(
    runs: list[Run],
    findings: list[Finding],
    hits: list[Hit],
    gpus: list[Gpu],
    vendors: frozenset[str],
    overrides: dict[str, str],
    kind: str | None,
    catalogue,
) -> tuple[list[Conclusion], list[Finding]]:
    """The conclusions that say the cause first, and the findings only the whole log shows (a CUDA build's ARCHS
    against the device's compute capability, a CPU runner after a GPU plan)."""
    out: list[Conclusion] = []
    derived: list[Finding] = []
    live = [f for f in findings if not f.stale]
    out += _driver(live, catalogue)
    kernel, kernel_findings = _no_kernel(live, hits, gpus, catalogue)
    out += kernel
    derived += kernel_findings
    out += _out_of_memory(live, runs, hits, gpus, catalogue)
    runner, runner_findings = _no_gpu_runner(hits)
    out += runner
    derived += runner_findings
    out += _wrong_device(hits, gpus)
    out += _hidden_by_environment(hits, runs, vendors, overrides)
    return out, derived


def _driver(findings: list[Finding], catalogue) -> list[Conclusion]:
    old = [f for f in findings if f.message == "ollama-nvidia-driver-too-old"]
    if old:
        a = attrs(old[0].evidence[0].text)
        device = a.get("device", "the NVIDIA GPU")
        compute = f" (compute capability {a['compute']})" if a.get("compute") else ""
        driver = f"the driver ({a['driver']})" if a.get("driver") else "the driver"
        needs = f": it needs {a['required_driver']}" if a.get("required_driver") else ""
        return [
            Conclusion(
                "driver-too-old",
                f"{driver} is older than the cuda_v12 runner's floor (550; 570 for compute "
                f"capability < 7) for {device}{compute}{needs}; discovery dropped the device ({_line(old[0])})",
                tuple(f.evidence[0] for f in old[:3]),
                remedy=old[0].remedy,
            )
        ]
    invalid = [f for f in findings if f.message == "cuda-kernel-image-invalid"]
    if invalid:
        error = _groups(catalogue, invalid[0]).get("error", "device kernel image is invalid")
        return [
            Conclusion(
                "driver-too-old",
                f"the NVIDIA driver is older than the CUDA runtime the runner was built with "
                f'("{error}", {_line(invalid[0])})',
                (invalid[0].evidence[0],),
                remedy=invalid[0].remedy,
            )
        ]
    return []


def _no_kernel(
    findings: list[Finding], hits: list[Hit], gpus: list[Gpu], catalogue
) -> tuple[list[Conclusion], list[Finding]]:
    for finding in findings:
        if finding.message == "cuda-no-kernel-image":
            g = _groups(catalogue, finding)
            compiled = ", ".join(arch_capability(a.strip()) for a in g.get("archs", "").split(",") if a.strip())
            return [
                Conclusion(
                    "no-kernel-for-gpu",
                    f"the CUDA build has no code for compute capability "
                    f"{arch_capability(g['arch'])} (kernel {g.get('kernel', '?')}"
                    + (f"; it was compiled for {compiled}" if compiled else "")
                    + f", {_line(finding)})",
                    (finding.evidence[0],),
                    remedy=finding.remedy,
                )
            ], []
        if finding.message == "ollama-cuda-cc-not-compiled":
            a = attrs(finding.evidence[0].text)
            folder = _CUDA_FOLDER.findall(a.get("libDirs", ""))
            archs = [x for x in re.findall(r"\d+", a.get("archs", ""))]
            cc = a.get("cc", "")
            return [
                Conclusion(
                    "no-kernel-for-gpu",
                    f"Ollama's CUDA runner{f' ({folder[-1]})' if folder else ''} has no code "
                    f"for {a.get('device', 'the GPU')}"
                    + (f" (compute capability {arch_capability(cc)})" if cc.isdigit() else "")
                    + (f"; it was compiled for {', '.join(arch_capability(x) for x in archs)}" if archs else "")
                    + f"; discovery skipped the device ({_line(finding)})",
                    (finding.evidence[0],),
                    remedy=finding.remedy,
                )
            ], []
        if finding.message == "ggml-cuda-error-invalid-device-function" and finding.vendor == NVIDIA:
            gpu = next((g for g in gpus if g.target == finding.target), None)
            what = f"{gpu.name} (compute capability {_capability(gpu.target)})" if gpu and gpu.target else "this GPU"
            return [
                Conclusion(
                    "no-kernel-for-gpu",
                    f"the CUDA library has no kernel for {what} ({_line(finding)})",
                    (finding.evidence[0],),
                    remedy=finding.remedy,
                )
            ], []
    # ggml's system_info lists the architectures the CUDA backend carries; a device below the lowest has no code
    archs_hit = next((h for h in reversed(hits) if h.message.id == "ggml-cuda-archs"), None)
    if archs_hit is None:
        return [], []
    archs = sorted(int(a) for a in archs_hit.get("archs").split(",") if a.strip().isdigit())
    for gpu in gpus:
        number = arch_number(gpu.target or "")
        if number is None or not archs or number >= archs[0]:
            continue
        capability = _capability(gpu.target or "")
        compiled = ", ".join(arch_capability(str(a)) for a in archs)
        evidence = (
            gpu.evidence[0],
            evidence_of(archs_hit.line, archs_hit.message.id, "the CUDA build's architectures"),
        )
        message = catalogue.by_id("cuda-no-kernel-image")
        remedy = message.remedy or ""
        title = "The CUDA build's ARCHS list has no code for the GPU's compute capability"
        verdict = Verdict(
            layer="installed-gpu-code",
            target=gpu.target or "",
            status=Status.BLOCKED,
            summary=f"{title} (log lines {evidence[0].location.line if evidence[0].location else '?'}, "
            f"{evidence[1].location.line if evidence[1].location else '?'})",
            evidence=evidence,
            remedy=remedy or None,
        )
        finding = Finding(
            message="ggml-cuda-archs",
            family="cuda-no-kernel",
            title=title,
            layer="installed-gpu-code",
            evidence=evidence,
            target=gpu.target,
            target_reason=f"{gpu.name}'s compute capability {capability}",
            verdict=verdict,
            remedy=remedy,
            workarounds=("ollama-debug",),
            vendor=NVIDIA,
            context=(
                f"compute capability {capability} is below the lowest architecture compiled ({compiled}): "
                "no cubin runs on it and no PTX can be JIT-compiled for it",
            ),
        )
        return [
            Conclusion(
                "no-kernel-for-gpu",
                f"the CUDA build has no code for compute capability {capability} "
                f"({gpu.name}): system_info lists ARCHS = {archs_hit.get('archs')} (the lowest {arch_capability(str(archs[0]))})",
                evidence,
                remedy=remedy,
            )
        ], [finding]
    return [], []


def _capability(target: str) -> str:
    number = arch_number(target)
    return arch_capability(str(number)) if number is not None else target


def _out_of_memory(
    findings: list[Finding], runs: list[Run], hits: list[Hit], gpus: list[Gpu], catalogue
) -> list[Conclusion]:
    oom = [f for f in findings if f.family == OOM]
    if not oom:
        return []
    first = oom[0]
    g = _groups(catalogue, first)
    needed = ""
    if g.get("mib"):
        needed = _mib(float(g["mib"]))
    elif g.get("bytes"):
        needed = _mib(int(g["bytes"]) / 1048576)
    device = g.get("buffer") or (f"device {g['device']}" if g.get("device") else "")
    memory = "GPU memory"
    if device.upper().startswith("CPU"):  # a host buffer (CPU, CPU_Mapped, CUDA_Host is not): system RAM ran out
        device, memory = "", "system memory (a CPU buffer)"
    free = _free_memory(hits, g.get("buffer") or (f"CUDA{g['device']}" if g.get("device") else ""))
    run = runs[first.run] if first.run is not None and first.run < len(runs) else None
    phase = {"load": " while loading", "compute": " while computing"}.get(run.phase if run else "", "")
    numbers = ", ".join(
        x
        for x in (
            needed and f"needed {needed}" + (f" on {device}" if device else ""),
            free and f"the device has {free} free",
        )
        if x
    )
    offload = run.offload if run and run.offload else _planned_layers(hits)
    layers = ""
    if offload and "/" in offload and offload.split("/")[0].isdigit() and int(offload.split("/")[0]) > 0:
        layers = f" (num_gpu below {offload.split('/')[0]}: this run offloaded {offload})"
    text = (
        f"out of {memory}{phase}"
        + (f" ({numbers})" if numbers else "")
        + f": offload fewer layers{layers} or shorten the context ({first.title.lower()}, {_line(first)})"
    )
    return [Conclusion("out-of-memory", text, tuple(f.evidence[0] for f in oom[:3]), remedy=first.remedy)]


def _free_memory(hits: list[Hit], device: str) -> str:
    """The free memory the log reports for ``device`` (llama.cpp's device list), or for its only GPU (Ollama's
    inference compute ``available``, the memory estimate's ``memory.available``); "" when it reports none."""
    listed = [
        h
        for h in hits
        if h.message.id in ("llama-list-devices", "llama-device-info") and h.get("backend").upper() != "CPU"
    ]
    named = [h for h in listed if h.get("device") == device] or (
        listed if len({h.get("device") for h in listed}) == 1 else []
    )
    if named:
        return f"{int(named[-1].get('free')):,} MiB"
    computes = [attrs(h.get("attrs")) for h in hits if h.message.id == "ollama-inference-compute"]
    computes = [a for a in computes if a.get("library", "").lower() != "cpu" and a.get("available")]
    if len(computes) == 1:
        return computes[0]["available"]
    plans = [attrs(h.get("attrs")) for h in hits if h.message.id == "ollama-offload-to"]
    available = plans[-1].get("memory.available", "").strip("[]") if plans else ""
    return available if available and " " in available and available.count("B") == 1 else ""


def _planned_layers(hits: list[Hit]) -> str:
    plans = [attrs(h.get("attrs")) for h in hits if h.message.id == "ollama-offload-to"]
    if plans and plans[-1].get("layers.offload", "").isdigit():
        return f"{plans[-1]['layers.offload']}/{plans[-1].get('layers.model', '?')}"
    return ""


def _no_gpu_runner(hits: list[Hit]) -> tuple[list[Conclusion], list[Finding]]:
    plan: Hit | None = None
    for hit in hits:
        if hit.message.id == "ollama-offload-to":
            plan = hit
        elif hit.message.family == "run-start" and plan is not None and _CPU_RUNNER.search(hit.get("cmd") or ""):
            a = attrs(plan.get("attrs"))
            library = plan.get("library")
            layers = a.get("layers.offload", "")
            if library == "cpu" or layers in ("", "0"):
                continue
            found = _CPU_RUNNER.search(hit.get("cmd"))
            runner = re.split(r"[/\\]", found[0])[1] if found else "CPU"
            evidence = (
                evidence_of(plan.line, plan.message.id, f"planned {layers} layers on {library}"),
                evidence_of(hit.line, hit.message.id, "a CPU runner started"),
            )
            vendor = backend_vendor(library)
            folders = (
                "lib/ollama/cuda_v12 or cuda_v13"
                if vendor == NVIDIA
                else "lib/ollama/rocm"
                if vendor == AMD
                else f"the {library} runner"
            )
            remedy = (
                f"This install has no {library} runner, so Ollama fell back to {runner}: install the release archive "
                f"that carries {folders} (the GPU runners ship beside the main binary), or build with {library.upper()}; "
                "check that OLLAMA_LLM_LIBRARY does not name a CPU runner."
            )
            title = "Ollama planned GPU layers but started a runner without a GPU backend"
            finding = Finding(
                message="ollama-offload-to",
                family="no-gpu-runner",
                title=title,
                layer="installed-gpu-code",
                evidence=evidence,
                target=None,
                target_reason="the CPU runner names no device",
                remedy=remedy,
                workarounds=("ollama-debug",),
                vendor=vendor,
            )
            text = (
                f"the runner that started has no GPU backend: Ollama planned {layers} layers for {library} "
                f"(log line {plan.line.number}) but started the {runner} runner (log line {hit.line.number})"
            )
            return [Conclusion("no-gpu-runner", text, evidence, remedy=remedy)], [finding]
    return [], []


def _wrong_device(hits: list[Hit], gpus: list[Gpu]) -> list[Conclusion]:
    for hit in reversed(hits):
        if hit.message.id != "ollama-selecting-gpu":
            continue
        a = attrs(hit.get("attrs"))
        if a.get("integrated") != "true":
            return []
        picked = a.get("description") or a.get("name", "")
        computes = [
            attrs(h.get("attrs")) | {"_line": str(h.line.number)}
            for h in hits
            if h.message.id == "ollama-inference-compute"
        ]
        discrete = next(
            (c for c in computes if c.get("type") == "discrete" and c.get("description", c.get("name")) != picked), None
        )
        if discrete is None:
            return []
        other = discrete.get("description") or discrete.get("name", "")
        library = discrete.get("library", "")
        picked_vendor = name_vendor(picked)
        label = f"the {picked_vendor.title() if picked_vendor else 'integrated'} iGPU's {a.get('library', '')} device ({picked})"
        if backend_vendor(library) == NVIDIA:
            folder = next(iter(_CUDA_FOLDER.findall(discrete.get("libdirs", ""))), "")
            choice = (
                f"OLLAMA_LLM_LIBRARY={folder}" if folder else "OLLAMA_LLM_LIBRARY=cuda_v13 (cuda_v12 below driver 580)"
            )
            remedy = (
                f"Keep Ollama on the {other}: {choice}, or OLLAMA_VULKAN=0 so the iGPU's Vulkan device is not offered."
            )
        else:
            remedy = (
                f"Keep Ollama on the {other}: hide the iGPU from Vulkan (GGML_VK_VISIBLE_DEVICES, OLLAMA_VULKAN=0 "
                f"where the {other} has its own backend)."
            )
        evidence = (evidence_of(hit.line, hit.message.id, "the scheduler's choice"),)
        return [
            Conclusion(
                "wrong-device",
                f"Ollama picked {label} instead of the {other} ({library}, inference compute at "
                f"log line {discrete['_line']}; the choice at log line {hit.line.number})",
                evidence,
                remedy=remedy,
            )
        ]
    return []


def _hidden_by_environment(
    hits: list[Hit], runs: list[Run], vendors: frozenset[str], overrides: dict[str, str]
) -> list[Conclusion]:
    value = overrides.get("ROCR_VISIBLE_DEVICES", "")
    if not value or NVIDIA not in vendors or AMD in vendors:
        return []
    if runs and runs[-1].outcome == "ok" and runs[-1].gpu_devices:
        return []
    config = next((h for h in reversed(hits) if h.message.id == "ollama-server-config"), None)
    if config is None:
        return []
    return [
        Conclusion(
            "hidden-by-environment",
            f"ROCR_VISIBLE_DEVICES={value} is set for the server on a machine whose GPU "
            f"is NVIDIA's (a batch scheduler such as Slurm sets it on GPU nodes): the CUDA device is hidden from "
            f"ggml's discovery (log line {config.line.number})",
            (evidence_of(config.line, config.message.id),),
            remedy="Unset ROCR_VISIBLE_DEVICES (and HIP_VISIBLE_DEVICES) in the server's environment; choose "
            "NVIDIA GPUs with CUDA_VISIBLE_DEVICES.",
        )
    ]


def device_roles(gpus: list[Gpu], runs: list[Run], findings: list[Finding], hits: list[Hit]) -> list[Gpu]:
    """Every GPU the log names, with which one the run used and why, and the ones left out (a device only a discovery
    line names is added to the list)."""
    out = list(gpus)
    left: dict[str, str] = {}
    for finding in findings:
        if finding.layer != "discovery" or finding.stale:
            continue
        a = attrs(finding.evidence[0].text) if "=" in finding.evidence[0].text else {}
        name = a.get("description") or a.get("device") or ""
        if (
            not name
            or name.startswith(("ROCm", "CUDA", "Vulkan"))
            and name[-1:].isdigit()
            and a.get("description") is None
        ):
            continue
        left.setdefault(name, f"left out: {finding.title} ({_line(finding)})")
        if not any(g.name == name for g in out):
            out.append(
                Gpu(
                    name,
                    finding.target,
                    a.get("library") or "?",
                    (finding.evidence[0],),
                    detail="named by a discovery line",
                    vendor=name_vendor(name),
                )
            )
    selected = {}
    for hit in hits:
        if hit.message.id == "ollama-selecting-gpu":
            a = attrs(hit.get("attrs"))
            selected[a.get("description") or a.get("name", "")] = (
                f"selected by the scheduler (log line {hit.line.number})"
            )
    used = next((r for r in reversed(runs) if r.gpu_devices), None)
    result = []
    for gpu in out:
        role = ""
        if used is not None:
            labels = {gpu.name, *_labels(gpu)}
            held = [b for b in used.placement if not b.on_cpu and b.buffer in labels]
            if held:
                role = f"used: holds the model buffer {held[0].buffer} ({held[0].mib:g} MiB) in run {used.index + 1}"
        role = role or selected.get(gpu.name, "") or left.get(gpu.name, "")
        if not role and any(e.source == "ollama-inference-compute" for e in gpu.evidence):
            role = "kept by discovery (inference compute)"
        result.append(dataclasses.replace(gpu, role=role) if role else gpu)
    return result


def _labels(gpu: Gpu) -> list[str]:
    """The buffer names a device's model buffer carries (``CUDA0``, ``ROCm0``, ``Vulkan0``) from its device line."""
    named = [attrs(e.text).get("name", "") for e in gpu.evidence if e.source == "ollama-inference-compute"]
    named = [n for n in named if re.fullmatch(r"[A-Za-z]+\d+", n)]  # Ollama's name=ROCm0 / CUDA0: the buffer's name
    match = re.match(r"(?:ggml(?:_vulkan)? device (\d+))|([A-Za-z]+\d+),", gpu.detail)
    if not match:
        return named
    if match[2]:
        return [match[2], *named]
    return [f"{gpu.backend}{match[1]}", *named]
