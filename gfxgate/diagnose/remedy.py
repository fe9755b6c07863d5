"""Remedies as templates filled from the facts, never fixed claims about a release.

A remedy in ``rules/messages.yaml`` may name ``{target}``, ``{processor}``, ``{version}``, ``{release_rocblas}``,
``{crash_phase}`` and ``{vulkan_backend}``;
``fill`` replaces them from what the diagnosis established (the line's gfx target, the Ollama version the log
announced) and from the matrix facts of that release (``release_status``: a layer's row of the embedded timeline at
that version, with its evidence: release-packaging for the rocBLAS files, vulkan for the backend to switch to). A fact that is not known is said to be unknown, in words — no
placeholder ever reaches the output, and no sentence claims what a release deletes unless its row shows it.
"""

from __future__ import annotations

import functools
import re
from typing import Mapping
from gfxgate.answer.override import posed_target
from gfxgate.answer.route import BackendAnswer, ruled_out, step_ruled_out
from gfxgate.errors import GfxgateError, TargetError
from gfxgate.gate.route import default_routes, override_check
from gfxgate.timeline import snapshot

FIELDS = ("target", "processor", "version", "release_rocblas", "crash_phase", "vulkan_backend")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def placeholders(template: str) -> list[str]:
    """The ``{name}`` placeholders of a remedy template (for the catalogue's load-time check)."""
    return _PLACEHOLDER.findall(template)


def unknown_placeholders(template: str) -> list[str]:
    return [name for name in placeholders(template) if name not in FIELDS]


def fill(
    template: str, *, target: str | None, version: str | None, log_kind: str | None = "ollama", phase: str | None = None
) -> str:
    """The remedy for one finding: every placeholder filled from the facts (or said to be unknown)."""
    if "{" not in template:
        return template
    processor = target.split(":", 1)[0] if target else None
    values: Mapping[str, str] = {
        "target": target or "the GPU's target",
        "processor": processor or "the GPU's target",
        "version": version or "an unknown version",
    }
    values = {**values, "crash_phase": _CRASH_PHASE.get(phase or "", _CRASH_PHASE[""])}
    if "{release_rocblas}" in template:
        values = {**values, "release_rocblas": release_rocblas(processor, version if log_kind == "ollama" else None)}
    if "{vulkan_backend}" in template:
        values = {**values, "vulkan_backend": vulkan_backend(processor, version if log_kind == "ollama" else None)}
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


_CRASH_PHASE = {  # what a crash means, by the phase of the run it ended (diagnose: before or after the ready line)
    "load": (
        "The runner crashed while loading the model, before it was ready: the library or the model could not be "
        "set up on this GPU (a rocBLAS, HIP or Vulkan error just above says which)"
    ),
    "compute": (
        "The runner crashed after it was ready, in compute: the backend's kernels fail on this GPU "
        "(ggml_backend_sched_graph_compute_async in the frames)"
    ),
    "": (
        "Read the stack frames around this line: in compute frames the backend's kernels fail on this GPU; in load "
        "frames the library or the model cannot be set up"
    ),
}


def _tag(version: str) -> str:
    return version if version.startswith("v") else f"v{version}"


@functools.cache
def _timeline():
    try:
        return snapshot.load_cells()  # the rows the remedies read, decoded when asked for
    except GfxgateError:  # a stale or unreadable snapshot: the clause then says the release was not checked
        return None


def release_status(
    processor: str | None, version: str | None, layer: str = "release-packaging"
) -> tuple[str | None, str]:
    """The status of ``layer`` (release-packaging unless said) for ``processor`` at ollama ``version`` in the embedded
    timeline, and where it was read (the flip that set it, ``repo@tag:path:line``, or the range of releases)."""
    if not processor or not version:
        return None, ""
    return _release_status(_timeline(), processor, version, layer)


# Per timeline (its identity: a new one is new answers) and arguments: a crash loop asks the same question for each of
# its thousands of findings.
@functools.lru_cache(maxsize=4096)
def _release_status(timeline, processor: str, version: str, layer: str) -> tuple[str | None, str]:
    if timeline is None:
        return None, ""
    return timeline.status_where(processor, _tag(version), layer)


def release_rocblas(processor: str | None, version: str | None) -> str:
    """The clause of a rocBLAS remedy that says what the release itself does with the target's rocBLAS files."""
    if not version:
        return "the log names no Ollama version, so whether its release ships them is not known here"
    if not processor:
        return f"the log names no gfx target, so whether ollama {_tag(version)} ships its files is not known here"
    status, where = release_status(processor, version)
    if status is None:
        return f"whether ollama {_tag(version)} ships {processor}'s rocBLAS files is not in gfxgate's timeline"
    if status == "allowed":
        return (
            f"ollama {_tag(version)}'s release deletes no rocBLAS file for {processor} (release-packaging allowed: "
            f"{where}): the missing files are not the release's doing"
        )
    return f"ollama {_tag(version)}'s release deletes them (release-packaging {status}: {where})"


def _first_with(processor: str, after: str | None, layer: str, statuses: set[str]) -> str | None:
    """The first release (after ``after``, else the first of all) whose ``layer`` for ``processor`` has one of
    ``statuses`` in the embedded timeline."""
    timeline = _timeline()
    if timeline is None or processor not in timeline.targets:
        return None
    start = timeline.tags.index(after) if after in timeline.tags else -1
    return next(
        (
            cell.first
            for cell in timeline.row(processor).cells
            if timeline.tags.index(cell.first) > start and dict(cell.layers).get(layer) in statuses
        ),
        None,
    )


def vulkan_backend(processor: str | None, version: str | None) -> str:
    """How to reach the Vulkan backend from the release the log ran (its vulkan row in the embedded timeline): on by
    default, opt-in with OLLAMA_VULKAN=1, or not in that release at all (then the first release that has it)."""
    reachable = {"allowed", "partial", "override-required"}
    status, where = release_status(processor, version, "vulkan")
    if processor is None or status is None:
        first = _first_with(processor or "gfx1030", None, "vulkan", reachable)
        return (
            "the Vulkan backend"
            + (f" (Ollama has one from {first} in gfxgate's timeline)" if first else "")
            + ("" if version is None else f"; whether ollama {_tag(version)} has it is not in gfxgate's timeline")
        )
    tag = _tag(version or "")
    if status in ("allowed", "partial"):
        return f"the Vulkan backend (ollama {tag} turns it on by default: vulkan {status}, {where})"
    if status == "override-required":
        return f"the Vulkan backend with OLLAMA_VULKAN=1 (ollama {tag} ships it off: vulkan {status}, {where})"
    first = _first_with(processor, tag, "vulkan", reachable)
    return (
        f"the Vulkan backend of ollama {first} or newer"
        if first
        else "no Vulkan backend of any release in gfxgate's timeline"
    ) + f" (ollama {tag} has no Vulkan backend for {processor}: vulkan {status}, {where})"


def keep_existing(
    ids: tuple[str, ...], workarounds, target: str | None, version: str | None, log_kind: str | None
) -> tuple[tuple[str, ...], list[str]]:
    """The workaround ids of a finding that the release the log ran has, and why each other one was left out: an entry
    outside its ``exists_in`` at that version (the rule the scan's routes and ``gfxgate workarounds`` apply), and a
    step of routes (``rules/routes.yaml``) that the embedded timeline's row of the target at that version rules out
    whatever the steps do (OLLAMA_VULKAN at a release that builds no Vulkan backend: its vulkan cell is blocked, and
    the step lifts only override-required)."""
    if workarounds is None or not version or log_kind != "ollama":
        return ids, []
    tag = _tag(version)
    by_id = {w.id: w for w in workarounds}
    kept, notes, last = [], [], []
    for wid in ids:
        w = by_id.get(wid)
        if w is not None and w.exists_in is not None and not w.exists_at({"ollama": tag}.get):
            notes.append(f"{wid} left out: it exists in {w.exists_in.describe()} only, not at the log's ollama {tag}")
            continue
        ruled_out = _route_ruled_out(wid, target.split(":", 1)[0] if target else None, tag)
        if ruled_out:
            notes.append(f"{wid} left out: {ruled_out}")
            continue
        if w is not None and w.override:
            needs = _override_needs(w.override, tag)
            if needs:  # an override to code the release does not ship is offered last, with what it also needs
                notes.append(f"{w.setting}: {needs}")
                last.append(wid)
                continue
        kept.append(wid)
    return tuple(kept + last), notes


def _override_needs(value: str, tag: str) -> str | None:
    """What ``HSA_OVERRIDE_GFX_VERSION=value`` also needs at ollama ``tag``: the posed target's row of the embedded
    timeline read with the override route's needs (``rules/routes.yaml``, as the scan's ``override_shipped`` reads
    the matrix), in the same words; None when the release ships the posed target's code and files (or the timeline
    does not know it)."""
    timeline = _timeline()
    if timeline is None or tag not in timeline.tags:
        return None
    try:
        check = override_check(timeline.at(tag), value)  # the same check as the scan's, over the stored release
    except TargetError:
        return None
    return check.clause(f"ollama {tag}") if check.checked else None


def _route_ruled_out(workaround: str, processor: str | None, tag: str) -> str | None:
    """Why no route that has ``workaround`` as a step can exist for ``processor`` at ollama ``tag`` (a decided layer of
    its timeline cell that neither the route accepts nor any of its steps lifts), or None when one can (or the
    workaround is no route's step, or the timeline does not know the target or the release)."""
    return _ruled_out(_timeline(), workaround, processor, tag)


@functools.lru_cache(maxsize=4096)
def _ruled_out(timeline, workaround: str, processor: str | None, tag: str) -> str | None:
    """Read from the stored Route at ``tag`` (``Cells.route_at``: the record scan computes, never re-derived): the
    workaround is left out when every route that takes it is of a backend the Route refuses; the words cite the
    refusing layer's stored status where a needed layer decides it, else the backend's stored refusal."""
    if processor is None or timeline is None or tag not in timeline.tags or processor not in timeline.targets:
        return None
    rules = default_routes()
    route = timeline.route_at(processor, tag)  # the answer's own record at that release
    refused: list[tuple[str, BackendAnswer | None]] | None = list(ruled_out(route, workaround, rules) or []) or None
    layers = {
        label: (layer, status)
        for label, layer, status in step_ruled_out(timeline.at(tag), processor, workaround, rules) or ()
    }
    if refused is None:  # a backend with another route (ROCm out of the box): the stored layers may still refuse it
        taken = any(s.workaround == workaround for b in route.backends if b.option is not None for s in b.option.steps)
        if taken or not layers:
            return None
        refused = [(label, None) for label in layers]
    out = []
    for label, answer in refused:
        if label in layers:
            layer, status = layers[label]
            why = f"{layer} {status}: {release_status(processor, tag, layer)[1]}"
        else:
            why = "; ".join(answer.refused) if answer is not None and answer.refused else "no route of its backend"
        out.append(
            f"a step of the route '{label}', which ollama {tag} cannot give {processor} whatever the steps do ({why})"
        )
    return "; ".join(out)


def listed_targets(text: str | None) -> tuple[str, ...] | None:
    """The gfx processors a log line lists as supported / available (``[gfx1030 gfx1100]``, ``map[gfx1030:true …]``,
    TensileLibrary file names); None when the line lists none (nothing is then known about what is there)."""
    if not text:
        return None
    found = tuple(dict.fromkeys(re.findall(r"gfx[0-9a-f]{3,4}", text)))
    return found or None


def keep_overrides(
    ids: tuple[str, ...], workarounds, listed: tuple[str, ...] | None
) -> tuple[tuple[str, ...], list[str]]:
    """The workaround ids of a finding without the HSA overrides whose posed target the line's own list (what the
    installed library has: supported types, available TensileLibrary files) does not name — an override to a target
    the install has no kernels for is no help by itself (9.0.6 on a list of gfx1030 and gfx1100) — and why each was
    left out."""
    if listed is None or workarounds is None:
        return ids, []

    by_id = {w.id: w for w in workarounds}
    kept, notes = [], []
    for wid in ids:
        w = by_id.get(wid)
        if w is not None and w.override:
            try:
                posed: str | None = posed_target(w.override)
            except TargetError:
                posed = None
            if posed is not None and posed not in listed:
                notes.append(
                    f"{w.setting} left out: it selects {posed}, which the line's list ({', '.join(listed)}) "
                    f"does not name, so the installed library has no {posed} kernels either"
                )
                continue
        kept.append(wid)
    return tuple(kept), notes
