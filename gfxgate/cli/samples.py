"""`gfxgate samples [DIR]`: regenerate the sample gate matrices under samples/ from the embedded snapshot."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False, path_type=Path))
@click.option("--check", is_flag=True, help="Exit 1 when a sample differs from what gfxgate generates now.")
def samples(folder: Path | None, check: bool) -> None:
    """Write samples/<target>.md, .json and .txt for gfx803, gfx900, gfx906, gfx1030 and gfx1100 at the pins (today's
    release), the same at each pin set of rules/pins.toml (samples/study/: the seed study's versions), the support
    timeline per vendor (timeline.md/.svg/.png: AMD; timeline-nvidia.*: NVIDIA) from the embedded timeline
    snapshot, and the H200 sweep's report
    and diagnose samples (samples/h200/) from the worklog and logs committed there."""
    import sys

    from gfxgate.app.samples import SamplesRequest
    from gfxgate.app.samples import samples as run

    result = run(SamplesRequest(folder, check))
    if check and result.stale:
        click.echo("gfxgate: stale samples: " + ", ".join(result.stale) + " (run `gfxgate samples`)", err=True)
        sys.exit(1)
    click.echo(f"gfxgate: samples {'checked' if check else 'written'} in {result.folder}", err=True)
