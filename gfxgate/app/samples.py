"""`samples(SamplesRequest) -> SamplesResult`: write (or check) the sample reports under samples/ — the gate matrices
from the embedded snapshots, the timeline from its snapshot, the H200 sweep's report and diagnoses from the inputs
committed there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gfxgate.records import dataclass

if TYPE_CHECKING:  # annotations only
    from gfxgate.timeline.model import Timeline

SAMPLE_TARGETS = ("gfx803", "gfx900", "gfx906", "gfx1030", "gfx1100", "sm_61", "sm_70")  # AMD, then NVIDIA (issue 38)


H200 = "h200"  # the real-GPU sweep (issue 27): inputs sweep.jsonl.zst and logs/ from tools/gpu-study/import.py
H200_DIAGNOSED = ("cuda-g16-r0-1cfa6161", "vulkan-g16-r0-35b3e02d", "cuda-g0-r0-c3f4aced")


def render_h200(folder: Path) -> dict[str, str]:
    """samples/h200/: the sweep report (md, json) of the H200 worklog, the soak's report (one cell repeated for ten
    minutes: soak.jsonl.zst, when committed) and diagnose of three of its logs.

    Rendered from the committed inputs in ``folder/h200`` (none when they are absent); paths are shown relative to
    the samples folder's parent (``samples/h200/…``), so the output does not depend on where the checkout is.
    """
    import dataclasses

    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.diagnose.render import render as render_diagnose
    from gfxgate.sweep.model import build_report
    from gfxgate.sweep.render import render as render_sweep
    from gfxgate.sweep.worklog import read_worklog

    base = folder / H200
    worklog = base / "sweep.jsonl.zst"  # the device's worklog, zstandard-compressed (byte for byte: `zstd -d`)
    if not worklog.is_file():
        return {}
    shown = f"{folder.name}/{H200}"
    report = dataclasses.replace(build_report(read_worklog(worklog)), worklog=f"{shown}/sweep.jsonl.zst")
    out = {
        f"{H200}/sweep-report.md": render_sweep(report, "md"),
        f"{H200}/sweep-report.json": render_sweep(report, "json"),
    }
    soak = base / "soak.jsonl.zst"
    if soak.is_file():
        report = dataclasses.replace(build_report(read_worklog(soak)), worklog=f"{shown}/soak.jsonl.zst")
        out[f"{H200}/soak-report.md"] = render_sweep(report, "md")
        out[f"{H200}/soak-report.json"] = render_sweep(report, "json")
    for run_id in H200_DIAGNOSED:
        log = base / "logs" / f"{run_id}.log"
        if log.is_file():
            text = render_diagnose(diagnose_inputs([str(log)], offline=True, locate=False), "md")
            out[f"{H200}/diagnose-{run_id}.md"] = text.replace(str(base), shown)
    return out


def render_samples(folder: Path | None = None) -> dict[str, str]:
    """File name → content of every sample (Markdown, JSON and 80-column text per target), from the snapshot: today's
    release at the top, each pin set of rules/pins.toml (the seed study's versions: ``study/``) in a folder of its
    name beside it; with ``folder``, also the H200 sweep samples rendered from the inputs committed there
    (samples/h200/)."""
    from gfxgate.app.scan import matrix as scan_matrix
    from gfxgate.app.scan import recorded_runs
    from gfxgate.gate.scan import FactsRequest
    from gfxgate.report import render
    from gfxgate.sources.resolve import load_pins
    from gfxgate.targets import catalog

    out = {}
    pin_sets = load_pins().pin_sets
    for prefix, refs in [("", None), *((f"{name}/", dict(refs)) for name, refs in sorted(pin_sets.items()))]:
        for name in SAMPLE_TARGETS:
            matrix = recorded_runs(
                scan_matrix([catalog().parse_target(name)], FactsRequest(refs=refs))
            )  # what scan prints
            out[f"{prefix}{name}.md"] = render(matrix, "md")
            out[f"{prefix}{name}.json"] = render(matrix, "json")
            out[f"{prefix}{name}.txt"] = render(matrix, "text", width=80)  # what a terminal of 80 columns shows
    from gfxgate.timeline.render import render as render_timeline

    for name, timeline in timelines().items():
        out[f"{name}.md"] = render_timeline(timeline, "md")
        out[f"{name}.svg"] = render_timeline(timeline, "svg")
    if folder is not None:
        out.update(render_h200(folder))
    return out


# the embedded timeline per vendor: one file of each kind per vendor keeps every sample under 200 KB (issue 40; the
# whole timeline was 274 KB of Markdown, 329 KB of SVG); name: samples/<name>.{md,svg,png}
TIMELINES = {
    "timeline": ("linux", "amd"),
    "timeline-nvidia": ("linux", "nvidia"),
    "timeline-windows": ("windows", None),
}
"""Sample name -> (the release's OS, the vendor whose targets it shows; None: every target of that OS's timeline)."""


def timelines() -> dict[str, Timeline]:
    """Sample name -> the embedded timeline of that OS with the rows of that vendor's targets (:data:`TIMELINES`)."""
    from gfxgate.targets import catalog
    from gfxgate.timeline import snapshot

    loaded = {os: snapshot.load(os=os) for os in sorted({os for os, _ in TIMELINES.values()})}
    out = {}
    for name, (os, which) in TIMELINES.items():
        timeline = loaded[os]
        out[name] = (
            timeline
            if which is None
            else timeline.select([t for t in timeline.targets if catalog().parse_target(t).vendor == which])
        )
    return out


def render_pictures() -> dict[str, bytes]:
    """samples/timeline.png (the README's picture, AMD) and timeline-nvidia.png. Not compared by --check: their
    pixels depend on the fonts installed."""
    from gfxgate.timeline.render import render as render_timeline

    return {f"{name}.png": render_timeline(timeline, "png") for name, timeline in timelines().items()}


@dataclass(frozen=True)
class SamplesRequest:
    folder: Path | None = None  # none: ./samples
    check: bool = False  # compare instead of writing


@dataclass(frozen=True)
class SamplesResult:
    folder: Path
    stale: tuple[str, ...]  # with check: the samples that differ from what gfxgate generates now


def samples(req: SamplesRequest) -> SamplesResult:
    from gfxgate.fsio import write_text_atomic

    folder = req.folder or Path.cwd() / "samples"
    stale = []
    for name, text in render_samples(folder).items():
        path = folder / name
        if req.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    docs = folder.parent / "docs"
    if docs.is_dir():  # the checkout's docs/ beside samples/: the generated rules reference
        from gfxgate.report.rules_reference import render_rules_reference

        text = render_rules_reference()
        if req.check:
            if not (docs / "rules.md").is_file() or (docs / "rules.md").read_text(encoding="utf-8") != text:
                stale.append("../docs/rules.md")
        else:
            write_text_atomic(docs / "rules.md", text)
    if not req.check:
        from gfxgate.fsio import write_bytes_atomic

        for name, data in render_pictures().items():
            write_bytes_atomic(folder / name, data)
    return SamplesResult(folder, tuple(stale))
