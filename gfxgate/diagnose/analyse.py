"""From log lines to a diagnosis: match the catalogue, establish facts, split runs, decide findings.

Pure over its inputs except for the optional :class:`~gfxgate.diagnose.upstream.Locator` (which reads
upstream sources). A line that matches no catalogue message is counted and otherwise ignored: unknown lines
never produce a finding or a verdict.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence, Set as AbstractSet
import functools
import dataclasses

from gfxgate.diagnose.catalogue import Catalogue
from gfxgate.diagnose.devices import NO_CHIP, device_target, nvidia_target
from gfxgate.diagnose.model import Buffer, Conclusion, Diagnosis, Fact, Finding, Gpu, Run, Unknown
from gfxgate.diagnose.patterns import compile_pattern
from gfxgate.diagnose.platform import LINUX_ONLY, LINUX_WORDS, OVERRIDE_NOTE, WINDOWS, shows_windows, status_notes
from gfxgate.diagnose.reader import LogInput, LogLine
from gfxgate.diagnose.stream import CRASH_WINDOW, RUN_START, Hit, Scan, scan
from gfxgate.diagnose.vendor import (
    AMD,
    AMD_ONLY,
    AMD_WORDS,
    NVIDIA,
    advice_for,
    backend_vendor,
    capability_target,
    finding_vendor,
    gpu_vendor,
)
from gfxgate.errors import TargetError
from gfxgate.diagnose.remedy import fill as fill_remedy, keep_existing, keep_overrides, listed_targets
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.answer.override import posed_target
from gfxgate.logs.crash import classify_phase, parse_crash

OVERRIDE_VARS = (
    "HSA_OVERRIDE_GFX_VERSION",
    "OLLAMA_VULKAN",
    "OLLAMA_LLM_LIBRARY",
    "OLLAMA_IGPU_ENABLE",
    "ROCR_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "CUDA_VISIBLE_DEVICES",
    "GPU_DEVICE_ORDINAL",
    "GGML_VK_VISIBLE_DEVICES",
)
MAX_EVIDENCE = 5
SELF_BUILT = ("0.0.0",)  # the version a self-built Ollama reports (no -ldflags version)
_ATTR_RE = compile_pattern(r'([A-Za-z_][\w.-]*)=("(?:[^"\\]|\\.)*"|\S*)')
RUN_READY = "run-ready"  # message family: a runner's end of loading


def unquote(value: str) -> str:
    """A Go ``%q``-quoted slog value without its quotes and escapes."""
    if len(value) < 2 or value[0] != '"' or value[-1] != '"':
        return value
    out, chars, i = [], value[1:-1], 0
    while i < len(chars):
        c = chars[i]
        if c == "\\" and i + 1 < len(chars):
            nxt = chars[i + 1]
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def attrs(text: str) -> dict[str, str]:
    """slog key=value attributes of a line (values unquoted); later keys win. (A copy: the parse is remembered.)"""
    return dict(_attrs(text))


@functools.lru_cache(maxsize=4096)
def _attrs(text: str) -> dict[str, str]:
    data = text.encode("utf-8", "surrogateescape")  # RE2 on bytes: no offset conversion per match
    return {
        m.group(1).decode("utf-8", "replace"): unquote(m.group(2).decode("utf-8", "replace"))
        for m in _ATTR_RE.finditer(data)
    }


def parse_go_map(text: str) -> dict[str, str]:
    """``K:V K:V`` from Go's ``map[...]`` rendering; values may hold spaces inside brackets (``[a b]``)."""
    out: dict[str, str] = {}
    depth, start, parts = 0, 0, []
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
        elif c == "]":
            depth = max(0, depth - 1)
        elif c == " " and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    key = None
    for part in parts:
        name, sep, value = part.partition(":")
        if sep and name and (name[0].isalpha() or name[0] == "_") and all(ch.isalnum() or ch == "_" for ch in name):
            key = name
            out[key] = value
        elif key is not None:  # a space inside an unbracketed value
            out[key] += " " + part
    return out


def evidence_of(line: LogLine, source: str, note: str = "") -> Evidence:
    return Evidence(
        source=source,
        location=Location(repo="log", path=line.log, line=line.number),
        text=line.text.strip()[:400],
        note=note,
    )


def detect_kind(scan: Scan) -> str | None:
    if scan.slog_lines or any(h.message.logs == ("ollama",) for h in scan.hits):
        return "ollama"
    if scan.hits:
        return "llama.cpp"
    return None


def diagnose_log(log: LogInput, catalogue: Catalogue, *, locator=None, workarounds=None) -> Diagnosis:
    """Diagnose one input, read once (:func:`gfxgate.diagnose.stream.scan`)."""
    found = scan(log, catalogue)
    hits = found.hits
    kind = detect_kind(found)
    notes = list(found.notes)
    facts: list[Fact] = []
    unknowns: list[Unknown] = []

    # versions, in log order (a log can span an upgrade: each line takes the version last announced before it)
    version_marks: list[tuple[int, str, Hit]] = []
    for hit in hits:
        if hit.message.id == "ollama-listening" and kind == "ollama":
            version_marks.append((hit.index, hit.get("version"), hit))
        elif hit.message.id == "llama-build-info" and kind == "llama.cpp":
            version_marks.append((hit.index, hit.get("build"), hit))
    seen_versions: dict[str, list[Hit]] = {}
    for _, value, hit in version_marks:
        seen_versions.setdefault(value, []).append(hit)
    name = "ollama-version" if kind == "ollama" else "llama.cpp-build"
    for value, vhits in seen_versions.items():
        facts.append(Fact(name, value, tuple(evidence_of(h.line, h.message.id) for h in vhits[:MAX_EVIDENCE])))
    if len(seen_versions) > 1:
        notes.append(
            f"the log shows {len(seen_versions)} versions ({', '.join(seen_versions)}); each line is read with the version announced before it"
        )

    mark_at = [at for at, _, _ in version_marks]

    def version_at(index: int) -> str | None:
        if not version_marks:
            return None
        position = bisect.bisect_right(mark_at, index) - 1
        value = version_marks[max(position, 0)][1]
        return None if value in SELF_BUILT else value  # a self-built binary: the message's form decides

    if kind == "ollama" and any(value in SELF_BUILT for value in seen_versions):
        unknowns.append(
            Unknown(
                "Ollama version",
                "the server says '(version 0.0.0)': a self-built binary, whose version "
                "is unknown; messages are recognised by their form, not by a version range",
            )
        )

    # stale matches: a message this log kind / version does not print is reported, never used
    live_hits: list[Hit] = []
    stale_hits: list[tuple[Hit, str]] = []
    for hit in hits:
        printed, why = hit.message.printed_in(kind or "", version_at(hit.index)) if kind else (True, "")
        (live_hits.append(hit) if printed else stale_hits.append((hit, why)))
    stale_why = {id(hit): why for hit, why in stale_hits}
    for hit, why in stale_hits:
        if not hit.message.is_failure and "logs do not print it" not in why:
            notes.append(f"{hit.line.log}:{hit.line.number}: looks like '{hit.message.title}', but {why}; not used")

    # overrides from the (latest) server-config dump
    configs = [h for h in live_hits if h.message.id == "ollama-server-config"]
    overrides: dict[str, str] = {}
    if configs:
        env = parse_go_map(configs[-1].get("env"))
        for var in OVERRIDE_VARS:
            if var in env:
                overrides[var] = env[var]
                facts.append(
                    Fact(
                        f"env:{var}",
                        env[var] if env[var] != "" else "(unset)",
                        (evidence_of(configs[-1].line, "ollama-server-config"),),
                    )
                )
    skips = [h for h in live_hits if h.message.id == "ollama-override-skips-check" and h.get("override")]
    if skips and not overrides.get("HSA_OVERRIDE_GFX_VERSION"):
        overrides["HSA_OVERRIDE_GFX_VERSION"] = skips[-1].get("override")
        facts = [f for f in facts if f.name != "env:HSA_OVERRIDE_GFX_VERSION"]
        facts.append(
            Fact(
                "env:HSA_OVERRIDE_GFX_VERSION",
                skips[-1].get("override"),
                tuple(
                    evidence_of(h.line, h.message.id, "in effect: discovery skipped its gfx check")
                    for h in skips[:MAX_EVIDENCE]
                ),
            )
        )
    hsa = overrides.get("HSA_OVERRIDE_GFX_VERSION") or ""
    # the rocBLAS TensileLibrary files the log lists: the targets the installed rocBLAS has kernels for
    tensile_hits = [h for h in live_hits if h.message.id == "rocblas-tensile-list"]
    tensile = sorted({h.get("gfx") for h in tensile_hits}, key=_target_order)
    if tensile:
        facts.append(
            Fact(
                "rocblas-tensile-targets",
                " ".join(tensile),
                tuple(evidence_of(h.line, h.message.id) for h in tensile_hits[:MAX_EVIDENCE]),
            )
        )

    # GPUs and backends
    gpus = _gpus(live_hits)
    backends: dict[str, list[Hit]] = {}
    for hit in live_hits:
        if hit.message.id == "ggml-load-backend":
            backends.setdefault(hit.get("backend"), []).append(hit)
    for backend, bhits in backends.items():
        facts.append(
            Fact(
                "backend",
                f"{backend} ({bhits[0].get('path')})",
                tuple(evidence_of(h.line, h.message.id) for h in bhits[:MAX_EVIDENCE]),
            )
        )
    targets = sorted({g.target for g in gpus if g.target and g.target.startswith("gfx")})
    processors = sorted({g.processor for g in gpus if g.processor and g.processor.startswith("gfx")})
    cuda_targets = sorted({g.target for g in gpus if g.target and g.target.startswith("sm_")})
    vendors = _log_vendors(gpus, live_hits)
    windows = _windows_line(live_hits)  # diagnose/platform.py
    if windows is not None:
        facts.append(Fact("os", WINDOWS, (evidence_of(windows.line, windows.message.id, "a Windows line"),)))
    os_name = WINDOWS if windows is not None else None

    # runs
    runs, run_of = _runs(found, live_hits, kind)

    # findings
    findings: list[Finding] = []
    merged: dict[tuple, int] = {}
    for hit in [h for h in hits if h.message.is_failure]:
        message = hit.message
        stale = stale_why.get(id(hit))
        gfx = hit.get("gfx") or _gfx_attr(hit.line.text)
        own = _own_device(hit.line.text) if not gfx else None
        if gfx:
            target, target_reason = gfx, "named in the line"
        elif own:
            target, target_reason = None, f"the line names its own device ({own}) without a gfx target"
        elif len(processors) == 1 and message.vendor in (None, AMD) and not (cuda_targets and message.vendor is None):
            target, target_reason = (
                targets[0] if len(targets) == 1 else processors[0],
                "the only gfx target the log names",
            )
        elif len(cuda_targets) == 1 and message.vendor in (None, NVIDIA) and not processors:
            target, target_reason = cuda_targets[0], "the only CUDA device the log names"
        elif processors and message.vendor == NVIDIA:
            target, target_reason = None, "an NVIDIA line, and the log names no CUDA device's compute capability"
        elif processors:
            target, target_reason = (
                None,
                f"the log names {len(processors)} gfx targets ({', '.join(processors)}) and this line does not say which",
            )
        elif others := sorted({f"{g.name} ({g.target})" for g in gpus if g.target}):
            target, target_reason = None, f"the log's GPUs have no gfx target: {', '.join(others)}"
        else:
            target, target_reason = (
                None,
                "no line names a gfx target"
                + (
                    " (start the server with OLLAMA_DEBUG=1 for device lines)"
                    if kind == "ollama"
                    else " (no ggml Device line)"
                ),
            )
        run_index = run_of.get(hit.index)
        key = (message.id, target, run_index, stale)
        evidence = evidence_of(hit.line, message.id, message.title)
        if key in merged:
            old = findings[merged[key]]
            if len(old.evidence) < MAX_EVIDENCE:
                extra = old.evidence + (evidence,)
                verdict = dataclasses.replace(old.verdict, evidence=extra) if old.verdict else None
                findings[merged[key]] = dataclasses.replace(old, evidence=extra, verdict=verdict)
            continue
        context: list[str] = []
        vendor = finding_vendor(message.vendor or _backend_file_vendor(hit), target, hit.line.text, vendors)
        advice = advice_for(vendor, vendors)
        alt = message.remedy_for(
            advice
        )  # an AMD log gets its `amd:` variant where a neutral remedy names another stack
        template = alt.remedy if alt else (message.remedy or "")
        offered = alt.workarounds if alt else message.workarounds
        if advice not in (None, AMD):
            offered = tuple(w for w in offered if w not in AMD_ONLY)
            if alt is None and AMD_WORDS.search(template) and message.vendor != AMD:
                context.append(f"the catalogue's remedy for this message is AMD's; the log's GPU is {advice.upper()}'s")
                template = "The lines around this one name the cause."
        if os_name == WINDOWS:  # no HSA, ROCr or systemd on Windows (diagnose/platform.py)
            windows_alt = message.remedy_for_os(WINDOWS)
            if windows_alt:
                template, offered = windows_alt.remedy, windows_alt.workarounds
            elif LINUX_WORDS.search(template):
                context.append("the catalogue's remedy for this message is Linux's; the log was written on Windows")
                template = "The lines around this one name the cause."
            if any(w.startswith("hsa-override-") for w in offered) or (hsa and message.vendor in (None, AMD)):
                context.append(OVERRIDE_NOTE)
            offered = tuple(w for w in offered if w not in LINUX_ONLY)
            context += status_notes(hit.line.text)
        if hsa and target and advice in (None, AMD) and os_name != WINDOWS:
            context.append(
                f"HSA_OVERRIDE_GFX_VERSION={hsa} was in effect: the ROCm runtime reports the device as "
                f"{_override_target(hsa) or 'the override target'}; the physical chip may differ"
            )
        if run_index is not None and message.family in ("compute-crash", "runner-terminated", "vulkan-device-lost"):
            run = runs[run_index]
            if run.phase:
                context.append(f"phase: {run.phase}" + (f" in {' → '.join(run.frames)}" if run.frames else ""))
            if run.backends:
                context.append(f"backend loaded in this run: {', '.join(run.backends)}")
        wk, absent = keep_existing(
            tuple(w for w in offered if _applies(w, target, workarounds)),
            workarounds,
            target,
            version_at(hit.index),
            kind,
        )  # diagnose/remedy.py: only what the log's release has
        context += absent
        line_attrs = attrs(hit.line.text) if "=" in hit.line.text else {}
        wk, left_out = keep_overrides(
            wk,
            workarounds,
            listed_targets(  # diagnose/remedy.py: only overrides to listed code
                hit.get("supported")
                or hit.get("available")
                or line_attrs.get("supported_types")
                or line_attrs.get("supported")
            ),
        )
        context += left_out
        wk, remedy_notes = _remedies_from_log(wk, workarounds, target, hsa, tensile)  # the whole log's evidence
        context += remedy_notes
        if os_name == WINDOWS:
            wk = tuple(w for w in wk if w not in LINUX_ONLY)
        printed_at, printed_note = ((), "")
        if locator is not None:
            printed_at, printed_note = locator.find(message, kind, version_at(hit.index))
            printed_at, cross_notes = _cross_check_source(hit.line.text, printed_at)
            context += cross_notes
        if (
            advice in (None, AMD)
            and hsa == ""
            and configs
            and any(w.startswith("hsa-override-") for w in wk)
            and os_name != WINDOWS
        ):
            context.append(
                "the server's config shows HSA_OVERRIDE_GFX_VERSION unset: an override set in a systemd drop-in "
                "or a shell profile never reached the server (systemctl daemon-reload, restart ollama, and check "
                "`systemctl show ollama -p Environment`)"
            )
        remedy = fill_remedy(
            template,
            target=target,
            version=version_at(hit.index),
            log_kind=kind,
            phase=runs[run_index].phase if run_index is not None else None,
        )  # diagnose/remedy.py
        verdict = None
        if not stale and target and message.implies is not None and message.layer:
            verdict = Verdict(
                layer=message.layer,
                target=target,
                status=message.implies,
                summary=f"{message.title} (log line {hit.line.number})",
                evidence=(evidence,),
                remedy=remedy or None,
                workarounds=wk,
            )
        findings.append(
            Finding(
                message=message.id,
                family=message.family,
                title=message.title,
                layer=message.layer or "",
                evidence=(evidence,),
                target=target,
                target_reason=target_reason,
                verdict=verdict,
                remedy=remedy,
                workarounds=wk,
                printed_at=printed_at,
                printed_note=printed_note,
                stale=stale,
                context=tuple(context),
                run=run_index,
                vendor=vendor or advice,
            )
        )
        merged[key] = len(findings) - 1

    # what could not be established
    if kind is None:
        unknowns.append(
            Unknown("log format", "no line matches a known Ollama, llama.cpp or ROCm message; is this a server log?")
        )
    if kind == "ollama" and not seen_versions:
        unknowns.append(
            Unknown(
                "Ollama version",
                "no 'Listening on … (version …)' line: the log does not reach back to the "
                "server start (journalctl -u ollama -b shows the whole boot)",
            )
        )
    if kind == "llama.cpp" and not seen_versions:
        unknowns.append(
            Unknown("llama.cpp build", "no 'build: N (commit)' line: the log does not start at the program start")
        )
    if kind and not gpus:
        unknowns.append(
            Unknown(
                "GPUs",
                "no device line (inference compute, ggml_cuda_init, Device N, ggml_vulkan): "
                + (
                    "start the server with OLLAMA_DEBUG=1 and include its start-up"
                    if kind == "ollama"
                    else "the binary may be CPU-only, or the start of its output is missing"
                ),
            )
        )
    elif gpus and not targets and not all(g.target for g in gpus) and (not vendors or AMD in vendors):
        unknowns.append(
            Unknown(
                "gfx target",
                "the device lines name no gfx target (Vulkan lines give only names); "
                "a ROCm line such as ggml's 'Device 0: …, gfx900' would",
            )
        )
    if kind == "ollama" and not configs and skips:
        unknowns.append(
            Unknown(
                "overrides",
                "no 'server config' line: HSA_OVERRIDE_GFX_VERSION is known from the "
                "discovery line that skipped its check, OLLAMA_VULKAN and the visible-device variables are not",
            )
        )
    elif kind == "ollama" and not configs:
        unknowns.append(
            Unknown(
                "overrides",
                "no 'server config' line (printed once at server start): "
                "HSA_OVERRIDE_GFX_VERSION, OLLAMA_VULKAN and visible-device variables are unknown",
            )
        )
    if kind and not runs:
        unknowns.append(
            Unknown(
                "runs",
                'no runner start (msg="starting runner"/"starting llama-server", before v0.11.5 '
                '"starting llama server") or llama.cpp start in the log: no model was loaded while it was written',
            )
        )
    if kind and not any(h.message.family in ("offload", "offload-zero") for h in live_hits):
        unknowns.append(Unknown("layers offloaded", "no 'offloaded N/M layers to GPU' line"))
    if locator is not None and any("source not available" in f.printed_note for f in findings):
        notes.append("some printing lines could not be located; pass --source NAME=PATH for a local clone, or --online")
    from gfxgate.diagnose.conclude import device_roles, first_conclusions

    firsts, derived = first_conclusions(runs, findings, live_hits, gpus, vendors, overrides, kind, catalogue)
    findings += derived
    gpus = device_roles(gpus, runs, findings, live_hits)
    conclusions = firsts + _conclusions(
        runs,
        findings,
        live_hits,
        kind,
        {m.id for m in catalogue.messages if m.printed_by_discovery},
        gpus,
        {c.kind for c in firsts},
    )
    notes += _vulkan_offered_nothing(facts, gpus, runs)
    return Diagnosis(
        log=log.name,
        log_kind=kind,
        lines=found.lines,
        recognised=found.recognised,
        conclusions=tuple(conclusions),
        facts=tuple(facts),
        gpus=tuple(gpus),
        runs=tuple(runs),
        findings=tuple(findings),
        unknowns=tuple(unknowns),
        notes=tuple(dict.fromkeys(notes)),
        vendors=tuple(sorted(vendors)),
    )


def _vulkan_offered_nothing(facts: list[Fact], gpus: list[Gpu], runs: list[Run]) -> list[str]:
    """Vulkan was switched on, yet no Vulkan device was listed and every run ran on the CPU: the Vulkan driver (Mesa
    RADV) or Ollama's Vulkan runner is missing on that machine (issue 37)."""
    vulkan = next((f for f in facts if f.name == "env:OLLAMA_VULKAN"), None)
    if (
        vulkan is None
        or vulkan.value.lower() not in ("1", "true")
        or not runs
        or any(r.outcome != "cpu-only" for r in runs)
        or any(g.backend.lower() == "vulkan" and not g.role.startswith("left out") for g in gpus)
    ):
        # a Vulkan device discovery left out (an iGPU without OLLAMA_IGPU_ENABLE=1) is no Vulkan device for the card
        return []
    where = str(vulkan.evidence[0].location) if vulkan.evidence and vulkan.evidence[0].location else "the server config"
    return [
        f"OLLAMA_VULKAN was on ({where}), yet discovery listed no Vulkan GPU and every run ran on the CPU: the "
        "Vulkan driver (vulkan-radeon on Arch, mesa-vulkan-drivers on Debian/Ubuntu) or Ollama's Vulkan runner is "
        "missing (`gfxgate doctor` says which)"
    ]


def _conclusions(
    runs: list[Run],
    findings: list[Finding],
    hits: list[Hit],
    kind: str | None,
    discovery: set[str],
    gpus: Sequence[Gpu] = (),
    decided: AbstractSet[str] = frozenset(),
) -> list[Conclusion]:
    """What a user needs first, from the runs and findings already decided (nothing here decides anything new).

    ``discovery``: the messages only Ollama's discovery prints (a device dropped there, whatever layer causes it);
    ``decided``: the kinds :func:`gfxgate.diagnose.conclude.first_conclusions` already concluded."""
    out: list[Conclusion] = []
    dropped = [
        f
        for f in findings
        if (f.layer == "discovery" or f.message in discovery) and not f.stale and f.family != "no-gpu-discovered"
    ]
    kept = [g for g in gpus if g.role.startswith(("used", "kept", "selected"))]
    if dropped and kept:  # another GPU was kept: the dropped one was left out, not "the GPU"
        left = "; ".join(
            dict.fromkeys(
                f.title + (f", log line {f.evidence[0].location.line}" if f.evidence[0].location else "")
                for f in dropped[:3]
            )
        )
        out.append(
            Conclusion(
                "device-left-out",
                f"discovery left out a device ({left}) and kept "
                + ", ".join(f"{g.name} ({g.backend})" for g in kept[:3]),
                tuple(f.evidence[0] for f in dropped[:3]),
            )
        )
        dropped = []
    if decided & {"driver-too-old", "no-kernel-for-gpu", "hidden-by-environment", "wrong-device"}:
        dropped = []  # the first conclusion already says why the device was dropped
    nothing_found = [f for f in findings if f.family == "no-gpu-discovered" and not f.stale]
    cpu_compute = [
        h
        for h in hits
        if h.message.id == "ollama-inference-compute" and attrs(h.get("attrs")).get("library", "").lower() == "cpu"
    ]
    why = "; ".join(
        dict.fromkeys(
            f"{f.title}"
            + (f" ({f.target})" if f.target else "")
            + (f", log line {f.evidence[0].location.line}" if f.evidence[0].location else "")
            for f in dropped[:3]
        )
    )
    if dropped:
        out.append(
            Conclusion(
                "dropped-by-discovery",
                "the GPU was dropped by discovery because: " + why,
                tuple(f.evidence[0] for f in dropped[:3]),
            )
        )
    last = runs[-1] if runs else None
    if last is not None and last.outcome == "failed":
        kind_of = {"load": "crashed-loading", "compute": "crashed-computing"}.get(last.phase, "failed")
        what = {
            "crashed-loading": "the runner crashed while loading the model",
            "crashed-computing": "the runner crashed while computing",
        }.get(kind_of, "the run failed")
        out.append(Conclusion(kind_of, f"{what} (run {last.index + 1}: {last.summary})", last.evidence[:3]))
    elif last is not None and last.outcome == "cpu-only":
        out.append(
            Conclusion(
                "ran-on-cpu",
                f"this model ran on the CPU (run {last.index + 1}: {last.summary})"
                + (f"; the GPU was dropped by discovery: {why}" if dropped else ""),
                last.evidence[:3],
            )
        )
    elif last is not None and last.outcome == "ok" and last.offload:
        devices = ", ".join(last.gpu_devices)
        out.append(
            Conclusion(
                "ran-on-gpu",
                f"this model ran with {last.offload} layers on the GPU"
                + (f" ({devices})" if devices else "")
                + f" (run {last.index + 1})",
                last.evidence[:3],
            )
        )
    elif (nothing_found or cpu_compute) and kind == "ollama":  # no run in the log, but discovery already decided
        evidence = tuple(f.evidence[0] for f in nothing_found[:1]) + tuple(
            evidence_of(h.line, h.message.id) for h in cpu_compute[:1]
        )
        out.append(
            Conclusion(
                "ran-on-cpu",
                "models run on the CPU: discovery kept no GPU (inference compute library=cpu)"
                + (f"; dropped because: {why}" if dropped else ""),
                evidence,
            )
        )
    if (
        last is not None
        and last.outcome == "failed"
        and decided & {"out-of-memory", "driver-too-old", "no-kernel-for-gpu"}
    ):
        out = [c for c in out if not c.kind.startswith(("crashed-", "failed"))] + [
            c for c in out if c.kind.startswith(("crashed-", "failed"))
        ]  # the cause first, the crash after it
    if (
        not out and not decided and (failed := [f for f in findings if f.verdict is not None])
    ):  # an excerpt without a run: its verdict
        first = failed[0]
        out.append(
            Conclusion(
                "failed",
                f"the GPU failed at the {first.layer} layer: {first.title} ({first.target}, log line "
                f"{first.evidence[0].location.line if first.evidence[0].location else '?'}); the log holds no "
                "run around it, so when (loading or computing) is not known",
                (first.evidence[0],),
            )
        )
    return out


def _cross_check_source(text: str, located: tuple) -> tuple[tuple, list[str]]:
    """Ollama's slog lines carry ``source=FILE:LINE``; keep the located lines in that file and compare the numbers."""
    if "source=" not in text or not located:
        return located, []
    file, _, number = attrs(text).get("source", "").rpartition(":")
    if not file or not number.isdigit():
        return located, []
    same = tuple(loc for loc in located if loc.path.rsplit("/", 1)[-1] == file)
    if not same:  # logged elsewhere (e.g. the scheduler logging an error the runner code created)
        return located, [
            f"the log line was written at {file}:{number}; the message text comes from the printing code below"
        ]
    near = min(same, key=lambda loc: abs((loc.line or 0) - int(number)))
    if abs((near.line or 0) - int(number)) <= 3:
        return same, [f"the log's source={file}:{number} agrees with the located printing code ({near})"]
    return same, [
        f"the log's source={file}:{number} differs from the located line {near}: the binary was built from other sources than that tag"
    ]


def _own_device(text: str) -> str | None:
    """A device the line itself identifies by a non-gfx compute value (e.g. Vulkan's compute=0.0)."""
    if "compute=" not in text:
        return None
    a = attrs(text)
    compute = a.get("compute", "")
    if compute and not compute.startswith("gfx"):
        return " ".join(f"{k}={a[k]}" for k in ("library", "compute", "description") if a.get(k))
    return None


def _gfx_attr(text: str) -> str | None:
    if "=gfx" not in text:
        return None
    a = attrs(text)
    for key in ("gpu_type", "gfx_target", "compute"):
        value = a.get(key, "")
        if value.startswith("gfx"):
            return value
    return None


def _remedies_from_log(
    wk: tuple[str, ...], workarounds, target: str | None, hsa: str, tensile: list[str]
) -> tuple[tuple[str, ...], list[str]]:
    """The workarounds the log's own evidence leaves: none already in effect, an override only toward a target whose
    TensileLibrary files the log lists (when it lists any); each kept override said with its exact value."""
    if workarounds is None:
        return wk, []
    by_id = {w.id: w for w in workarounds}
    kept: list[str] = []
    notes: list[str] = []
    for wid in wk:
        item = by_id.get(wid)
        override = getattr(item, "override", None) if item else None
        if item is None or not override:
            kept.append(wid)
            continue
        goal = _override_target(override)
        if hsa and override == hsa:
            notes.append(
                f"not suggested: {item.setting} is already in effect (the log shows it) and this failure happened with it"
            )
            continue
        if tensile and goal and goal not in tensile:
            notes.append(
                f"not suggested: {item.setting} (→ {goal}): the log's rocBLAS lists TensileLibrary files only for "
                + ", ".join(tensile)
            )
            continue
        kept.append(wid)
        if target and goal and target.split(":")[0] != goal:
            notes.append(
                f"exact value: {item.setting} makes the runtime report {target.split(':')[0]} as {goal}"
                + (f" (the log's rocBLAS has TensileLibrary files for {goal})" if goal in tensile else "")
            )
    return tuple(kept), notes


WINDOWS_LOOKS = 4  # lines of each message looked at for Windows words: a crash loop's repeats add no new form


def _windows_line(hits: list[Hit]) -> Hit | None:
    """The first recognised line that shows the log was written on Windows; at most WINDOWS_LOOKS lines per message
    are looked at (counted work bounded by the catalogue's size, not the log's)."""
    looked: dict[str, int] = {}
    for hit in hits:
        seen = looked.get(hit.message.id, 0)
        if seen >= WINDOWS_LOOKS:
            continue
        looked[hit.message.id] = seen + 1
        if shows_windows(hit.message.id, hit.line.text):
            return hit
    return None


_BACKEND_FILE = compile_pattern(r"ggml-([a-z]+)\.(?:dll|so)")


def _backend_file_vendor(hit: Hit) -> str | None:
    """The vendor of a backend library ggml could not load (``ggml-hip.dll`` AMD's, ``libggml-cuda.so`` NVIDIA's): the
    line is about that vendor's GPU even where the log names no device (the log's vendors stay what it found)."""
    if hit.message.id != "ggml-backend-load-failed":
        return None
    named = _BACKEND_FILE.search(hit.get("path") or "")
    return backend_vendor(named[1]) if named else None


def _log_vendors(gpus: list[Gpu], hits: list[Hit]) -> frozenset[str]:
    """The GPU vendors a log names: its devices', and the backends it found devices with or loaded (CUDA, ROCm)."""
    found = {g.vendor for g in gpus if g.vendor}
    for hit in hits:
        if hit.message.id in ("ggml-cuda-found", "ggml-load-backend", "ggml-cuda-init-failed"):
            found.add(backend_vendor(hit.get("backend")) or "")
        elif hit.message.vendor and hit.message.vendor != AMD:  # an NVIDIA-only failure names the vendor by itself
            found.add(hit.message.vendor)
        elif hit.message.id == "ggml-cuda-archs":
            found.add(NVIDIA)
    return frozenset(v for v in found if v)


def _target_order(name: str) -> tuple:
    return (len(name), name)


def _override_target(hsa: str) -> str | None:
    try:
        return posed_target(hsa)
    except TargetError:  # an override that names no known target: say nothing rather than guess
        return None


def _applies(workaround_id: str, target: str | None, workarounds) -> bool:
    if workarounds is None or target is None:
        return True
    item = next((w for w in workarounds if w.id == workaround_id), None)
    return item is None or not item.applies_to or target.split(":", 1)[0] in item.applies_to


def _target_note(gfx: str | None, how: str) -> str:
    """How a device name became its target, or why it did not (devices.device_target's words) where there is more to
    say than "no gfx target" (a PCI id that did not resolve, a bus address)."""
    if not how or (not gfx and how == NO_CHIP):
        return ""
    return f"; target from {how}" if gfx else f"; no gfx target: {how}"


def _gpus(hits: list[Hit]) -> list[Gpu]:
    out: dict[tuple, Gpu] = {}
    key: tuple  # per kind of line, what tells one device from another
    gfx: str | None
    for hit in hits:
        mid, ev = hit.message.id, evidence_of(hit.line, hit.message.id)
        if mid == "ollama-inference-compute":
            a = attrs(hit.get("attrs"))
            compute = a.get("compute", "")
            library = a.get("library", "")
            if library.lower() == "cpu":
                continue
            name = a.get("description") or a.get("name") or a.get("id", "?")
            key = ("ollama", library, a.get("id", ""), compute)
            if compute.startswith("gfx"):
                gfx, how = compute, ""
            elif library.lower().startswith("cuda") and (cc := capability_target(compute)):
                gfx, how = cc, f"compute capability {compute}"
            else:
                gfx, how = device_target(name, a.get("pci_id", ""))
            gpu = Gpu(
                name,
                gfx,
                library or "?",
                (ev,),
                detail=", ".join(f"{k}={a[k]}" for k in ("id", "type", "total", "driver") if a.get(k))
                + _target_note(gfx, how),
            )
        elif mid == "ggml-hip-device":
            key = ("ggml", "ROCm", hit.get("index"), hit.get("arch"))
            gpu = Gpu(
                hit.get("name"),
                hit.get("arch") + hit.get("features"),
                "ROCm",
                (ev,),
                detail=f"ggml device {hit.get('index')}, 0x{hit.get('cc')}",
            )
        elif mid == "ggml-cuda-device":
            key = ("ggml", "CUDA", hit.get("index"), hit.get("name"))
            capability = f"{hit.get('major')}.{hit.get('minor')}"
            gpu = Gpu(
                hit.get("name"),
                nvidia_target(hit.get("major"), hit.get("minor")),
                "CUDA",
                (ev,),
                detail=f"ggml device {hit.get('index')}, compute capability {capability}"
                + (f", {hit.get('vram')} MiB" if hit.get("vram") else ""),
            )
        elif mid in ("llama-device-info", "llama-list-devices"):
            backend = hit.get("backend")
            if backend.upper() == "CPU":
                continue
            key = ("llama", hit.get("device"), hit.get("name"))
            gfx, how = (hit.get("gfx"), "") if hit.get("gfx") else device_target(hit.get("name"))
            gpu = Gpu(
                hit.get("name"),
                gfx,
                backend,
                (ev,),
                detail=f"{hit.get('device')}, {hit.get('total')} MiB" + _target_note(gfx, how),
            )
        elif mid == "ggml-vulkan-device":
            key = ("ggml", "Vulkan", hit.get("index"), hit.get("name"))
            gfx, how = device_target(f"{hit.get('name')} ({hit.get('driver')})")
            gpu = Gpu(
                hit.get("name"),
                gfx,
                "Vulkan",
                (ev,),
                detail=f"ggml_vulkan device {hit.get('index')}, driver {hit.get('driver')}" + _target_note(gfx, how),
            )
        elif (
            hit.message.is_failure
            and (named := hit.get("gfx") or _gfx_attr(hit.line.text))
            and not any(g.processor == named.split(":")[0] for g in out.values())
        ):
            gfx = named
            a = attrs(hit.line.text) if "=" in hit.line.text else {}
            name = a.get("device") or a.get("description") or (f"gpu {a['gpu']}" if a.get("gpu") else gfx)
            key = ("failure", gfx)
            library = a.get("library") or ""
            gpu = Gpu(
                name,
                gfx,
                library if library.isalpha() else "ROCm",
                (ev,),
                detail=f"named by a failure line ({hit.message.id})",
            )
        else:
            continue
        if key in out:
            if len(out[key].evidence) < MAX_EVIDENCE:
                out[key] = dataclasses.replace(out[key], evidence=out[key].evidence + (ev,))
        else:
            out[key] = gpu
    return [dataclasses.replace(g, vendor=gpu_vendor(g.name, g.target, g.backend)) for g in out.values()]


def _runs(found: Scan, hits: list[Hit], kind: str | None) -> tuple[list[Run], dict[int, int]]:
    """Split the log at runner starts (Ollama) or program starts (llama.cpp) and decide each run's outcome."""
    starts = (
        [h for h in hits if h.message.family == RUN_START]
        if kind == "ollama"
        else [h for h in hits if h.message.id == "llama-build-info"]
    )
    if kind == "llama.cpp" and not starts and hits:
        starts = [hits[0]]  # llama.cpp output without its build line: one run from the first recognised line
    runs: list[Run] = []
    run_of: dict[int, int] = {}
    hit_at = [h.index for h in hits]
    localised: dict[tuple, int] = {}  # (failure message, run start message) → the first run whose crash was localised
    for number, start in enumerate(starts):
        end = starts[number + 1].index if number + 1 < len(starts) else found.lines
        begin = start.index
        if number == 0 and kind == "llama.cpp":  # llama.cpp warns while parsing its arguments, before its build line
            begin = min(begin, hits[0].index)
        inside = hits[bisect.bisect_left(hit_at, begin) : bisect.bisect_left(hit_at, end)]
        for h in inside:
            run_of[h.index] = number
        evidence = [evidence_of(start.line, start.message.id, "run start")]
        ready = next((h for h in inside if h.message.family == RUN_READY), None)
        offloads = [h for h in inside if h.message.family in ("offload", "offload-zero") and h.get("offloaded")]
        offload = f"{offloads[-1].get('offloaded')}/{offloads[-1].get('layers')}" if offloads else ""
        # every failure a runner prints (a missing kernel, a rocBLAS error, out of memory), not discovery's
        failures = [
            h
            for h in inside
            if h.message.is_failure
            and h.message.layer not in ("discovery", "vulkan")
            and not h.message.printed_by_discovery
            and h.message.family != "offload-zero"
        ]
        backends = tuple(dict.fromkeys(h.get("backend") for h in inside if h.message.id == "ggml-load-backend"))
        buffers = {h.get("buffer"): h for h in inside if h.message.id == "llama-model-buffer"}  # the latest per device
        placement = tuple(Buffer(name, float(h.get("mib") or 0)) for name, h in buffers.items())
        # llama.cpp says "offloaded N/M layers to GPU" for -ngl N even with --device none: the buffers decide
        cpu_only_buffers = bool(placement) and all(b.on_cpu for b in placement)
        where = (
            (" on " + ", ".join(f"{b.buffer} ({b.mib:g} MiB)" for b in placement if not b.on_cpu))
            if placement and not cpu_only_buffers
            else ""
        )
        phase, frames = "", ()
        if failures:
            phase, reason, frames, label = _crash(found, start, end, failures, ready)
            key = (failures[0].message.id, start.message.id)
            if found.localised(failures[0].index):
                localised.setdefault(key, number)
            elif key in localised:  # a crash loop: this window was not kept (stream.FIRST_CRASHES)
                reason = (
                    f"the same failure as run {localised[key] + 1} (its crash report is localised there; this "
                    f"run's was not kept, a repeated crash); {reason}"
                )
            outcome = "failed"
            summary = f"failed ({label}), phase {phase}: {reason}"
            evidence += [evidence_of(h.line, h.message.id) for h in failures[:3]]
        elif ready is not None:
            evidence.append(evidence_of(ready.line, ready.message.id, "ready"))
            if offloads and offloads[-1].get("offloaded") == "0":
                outcome, summary = "cpu-only", f"loaded, but offloaded {offload} layers: the model runs on the CPU"
            elif cpu_only_buffers:
                outcome = "cpu-only"
                summary = (
                    (
                        f"loaded; the log says offloaded {offload} layers, but every"
                        if offloads and offload[:2] != "0/"
                        else "loaded; every"
                    )
                    + " model buffer is on the CPU ("
                    + ", ".join(f"{b.buffer} {b.mib:g} MiB" for b in placement)
                    + "): no GPU holds layers, the model runs on the CPU"
                )
            else:
                outcome, summary = (
                    "ok",
                    "loaded and serving" + (f", {offload} layers on the GPU{where}" if offload else ""),
                )
        else:
            outcome, summary = (
                "incomplete",
                "neither a ready line nor a failure before the log "
                + ("moves on" if number + 1 < len(starts) else "ends"),
            )
        if offloads:
            evidence.append(evidence_of(offloads[-1].line, offloads[-1].message.id, f"offloaded {offload}"))
        evidence += [evidence_of(h.line, h.message.id, "model buffer") for h in list(buffers.values())[:3]]
        runs.append(Run(number, outcome, summary, tuple(evidence), phase, offload, backends, tuple(frames), placement))
    return runs, run_of


def _crash(found: Scan, start: Hit, end: int, failures: list[Hit], ready: Hit | None) -> tuple[str, str, tuple, str]:
    """Phase, reason, key frames and label of a failed run, from the lines kept around its failures.

    The crash report follows its first line closely: the window read ends CRASH_WINDOW lines after the run's last
    failure line, so a long run (hours of request lines) is never re-scanned by the frame parser. When the kept
    window starts after the run's start (more than PRE_LINES before the failure), the run's ready line (a kept
    hit) decides what the missing head would have: after it, compute; without it, load.
    """
    first = failures[0]
    error = next((h.get("error") for h in failures if h.get("error")), "")
    begin, lines = found.window(start.index, min(end, failures[-1].index + CRASH_WINDOW), first.index)
    crash = parse_crash(lines, error)
    if crash.first_line is not None:  # a crash report: the sweep's localisation (frames, start marker)
        result = classify_phase("error", lines, crash, error, first_line_no=begin + 1)
        phase, reason = result.phase, result.reason
    else:
        phase = reason = ""
    if crash.first_line is not None:
        if begin > start.index and phase in ("unknown", "load") and not crash.key_frames:
            # the run's head is not in the window: its ready line (or its absence) decides
            phase = "compute" if ready is not None and ready.index < begin + crash.first_line else "load"
            reason = f"runner crashed ({crash.label}) " + (
                f"after the model loaded (log line {ready.line.number}: {ready.line.text.strip()[:120]})"
                if phase == "compute" and ready is not None
                else f"before the runner was ready (no ready line since the run start at log line {start.line.number})"
            )
    op = next((h for h in failures if h.message.id == "ggml-cuda-op-failed"), None)
    if op is not None and (crash.first_line is None or phase == "unknown"):
        # ggml_cuda_compute_forward runs only while a graph is computed: the op's failure dates the crash
        phase = "compute"
        reason = f"ggml_cuda_compute_forward reports {op.get('op')} failed (log line {op.line.number}): the GPU failed while computing"
    elif crash.first_line is None:  # an error line without a crash report: before or after the ready line
        phase = "compute" if ready is not None and ready.index < first.index else "load"
        reason = f"log line {first.line.number} reports it " + (
            "after the ready line" if phase == "compute" else "before the runner was ready"
        )
    label = crash.label if crash.found else first.message.title
    return phase, reason, crash.key_frames, label


def runtime_verdicts(diagnoses, targets) -> dict[str, Verdict]:
    """The gate matrix's runtime row from diagnosed logs (``scan --log``), one verdict per target."""
    out: dict[str, Verdict] = {}
    for target in targets:
        key = str(target)
        processor = target.processor
        ok_ev: list[Evidence] = []
        bad: list[Finding] = []
        for diagnosis in diagnoses:
            on_target = {g.processor for g in diagnosis.gpus if g.processor} == {processor} or any(
                g.processor == processor for g in diagnosis.gpus
            )
            for finding in diagnosis.findings:
                if (
                    finding.verdict
                    and finding.layer == "runtime"
                    and finding.target
                    and finding.target.split(":")[0] == processor
                ):
                    bad.append(finding)
            if on_target:
                for run in diagnosis.runs:
                    if run.outcome == "ok" and run.offload and not run.offload.startswith("0/"):
                        ok_ev.append(run.evidence[-1])
        if not ok_ev and not bad:
            out[key] = Verdict(
                layer="runtime",
                target=key,
                status=Status.NOT_MEASURED,
                summary=f"the log shows no run on {key}",
                reason=f"no run with layers on a {processor} GPU and no runtime failure naming it in "
                + ", ".join(d.log for d in diagnoses),
            )
            continue
        evidence = tuple(ok_ev[:3]) + tuple(f.evidence[0] for f in bad[:3])
        workarounds = tuple(dict.fromkeys(w for f in bad for w in f.workarounds))
        if ok_ev and bad:
            status, summary = (
                Status.PARTIAL,
                f"some runs use the GPU, others fail ({', '.join(sorted({f.family for f in bad}))})",
            )
        elif ok_ev:
            status, summary = Status.ALLOWED, "runs with layers on the GPU (log)"
        else:
            status, summary = (
                Status.BLOCKED,
                "every run in the log fails or runs on the CPU (" + ", ".join(sorted({f.family for f in bad})) + ")",
            )
        out[key] = Verdict(
            layer="runtime",
            target=key,
            status=status,
            summary=summary,
            evidence=evidence,
            remedy=bad[0].remedy if bad else None,
            workarounds=workarounds,
        )
    return out


def runtime_backend_verdicts(diagnoses, targets) -> dict[str, dict[str, Verdict]]:
    """Per target, the runtime verdict of each backend the logs' runs loaded (a run's ``backends``): the answer's
    routes are judged each by its own backend's runs (``gate.route``), never by a run of another backend."""

    out: dict[str, dict[str, Verdict]] = {}
    for target in targets:
        per: dict[str, list[Diagnosis]] = {}
        for diagnosis in diagnoses:
            for backend in dict.fromkeys(b.lower() for run in diagnosis.runs for b in run.backends):
                if backend == "cpu":
                    continue
                runs = tuple(r for r in diagnosis.runs if backend in (b.lower() for b in r.backends))
                kept = {r.index for r in runs}
                findings = tuple(
                    f
                    for f in diagnosis.findings
                    if f.layer != "runtime" or (f.run is not None and diagnosis.runs[f.run].index in kept)
                )
                per.setdefault(backend, []).append(dataclasses.replace(diagnosis, runs=runs, findings=findings))
        out[str(target)] = {
            b: v
            for b, ds in per.items()
            if (v := runtime_verdicts(ds, [target])[str(target)]).status.value != "not-measured"
        }
    return out


def log_versions(diagnoses) -> list[str]:
    """The Ollama versions the logs announce (``Listening on … (version X)``), in order."""
    return list(dict.fromkeys(f.value for d in diagnoses for f in d.facts if f.name == "ollama-version"))
