"""`gfxgate samples [DIR]`: regenerate the sample gate matrices under samples/ from the embedded snapshot."""

from __future__ import annotations

from pathlib import Path

import click

SAMPLE_TARGETS = ("gfx803", "gfx900", "gfx906", "gfx1030", "gfx1100")


def render_samples() -> dict[str, str]:
    """File name → content of every sample (Markdown, JSON and 80-column text per target), from the snapshot: today's release at the
    top, each pin set of rules/pins.toml (the seed study's versions: ``study/``) in a folder of its name beside it."""
    from gfxgate.gate.scan import scan_matrix
    from gfxgate.report import render
    from gfxgate.sources.resolve import load_pins
    from gfxgate.targets import catalog

    out = {}
    pin_sets = load_pins().pin_sets
    for prefix, refs in [("", None), *((f"{name}/", dict(refs)) for name, refs in sorted(pin_sets.items()))]:
        for name in SAMPLE_TARGETS:
            matrix = scan_matrix([catalog().parse(name)], refs=refs)
            out[f"{prefix}{name}.md"] = render(matrix, "md")
            out[f"{prefix}{name}.json"] = render(matrix, "json")
            out[f"{prefix}{name}.txt"] = render(matrix, "text", width=80)  # what a terminal of 80 columns shows
    from gfxgate.timeline import snapshot
    from gfxgate.timeline.render import render as render_timeline

    timeline = snapshot.load()
    out["timeline.md"] = render_timeline(timeline, "md")
    out["timeline.svg"] = render_timeline(timeline, "svg")
    return out


def render_picture() -> bytes:
    """samples/timeline.png (the README's picture). Not compared by --check: its pixels depend on the fonts installed."""
    from gfxgate.timeline import snapshot
    from gfxgate.timeline.render import render as render_timeline

    return render_timeline(snapshot.load(), "png")


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Exit 1 when a sample differs from what gfxgate generates now.")
def samples(folder: Path | None, check: bool) -> None:
    """Write samples/<target>.md and .json for gfx803, gfx900, gfx906, gfx1030 and gfx1100 at the pins (today's
    release), the same at each pin set of rules/pins.toml (samples/study/: the seed study's versions), and the
    support timeline (timeline.md, timeline.svg, timeline.png) from the embedded timeline snapshot."""
    import sys

    from gfxgate.fsio import write_text_atomic

    folder = folder or Path.cwd() / "samples"
    stale = []
    for name, text in render_samples().items():
        path = folder / name
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, text)
    if not check:
        from gfxgate.fsio import write_bytes_atomic

        write_bytes_atomic(folder / "timeline.png", render_picture())
    if check and stale:
        click.echo("gfxgate: stale samples: " + ", ".join(stale) + " (run `gfxgate samples`)", err=True)
        sys.exit(1)
    click.echo(f"gfxgate: samples {'checked' if check else 'written'} in {folder}", err=True)
