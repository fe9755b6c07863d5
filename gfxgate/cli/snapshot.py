"""`gfxgate snapshot build|show`: regenerate or inspect the embedded evidence snapshot."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, os_option, source_options


@click.group()
def snapshot() -> None:
    """The embedded snapshot of evidence at the pinned tags (rules/snapshots/pins.json)."""


@snapshot.command("build")
@source_options
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the snapshot of the pins (default: the shipped rules/snapshots/pins.json, and "
    "pins-NAME.json beside it for each [pin_sets.NAME] of rules/pins.toml).",
)
def build_cmd(refs, sources, offline, output) -> None:
    """Read every gate rule's files at the pins and write the snapshot, and one per named pin set (`study`: the
    seed study's versions). --ref is refused: the snapshot is of the pins."""
    from gfxgate.app.snapshot import SnapshotBuildRequest, build
    from gfxgate.sources.resolve import parse_assignments

    for built in build(SnapshotBuildRequest(parse_assignments(sources, "--source"), offline, output, tuple(refs))):
        emit(built.document, built.path)
        click.echo(
            f"gfxgate: {built.path.name}: rules " + ", ".join(f"{k}: {v}" for k, v in built.states.items()), err=True
        )


@snapshot.command("show")
def show_cmd() -> None:
    """Summarise the embedded snapshot: sources, commits and each rule's state."""
    from gfxgate.app.snapshot import show

    data = show()
    for s in data.sources:
        click.echo(f"{s.name:14} {s.ref:12} {s.commit or '-'}")
    for rule_id, rf in sorted(data.facts.items()):
        click.echo(f"  {rule_id:42} {rf.state:15} {rf.reason or ''}")


@snapshot.command("timeline")
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="Only these targets (default: every target a rule names, as `gfxgate timeline`).",
)
@source_options(refs=False)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write (default: the shipped rules/snapshots/timeline.json.zst, timeline-windows.json.zst).",
)
@os_option(default=None, help="Only this OS's timeline (default: each OS's, to its shipped file; with -o, Linux's).")
def timeline_cmd(targets, sources, offline, output, os_name) -> None:
    """Compute the timeline over every ollama release and store it, so `gfxgate timeline` works offline (one table
    per OS: Linux's and Windows')."""
    from gfxgate.app.timeline import StoreRequest, store
    from gfxgate.cli.common import probe_progress
    from gfxgate.cli.timeline import report_unreadable
    from gfxgate.sources.resolve import parse_assignments

    with probe_progress("timeline of ollama") as on_probe:
        tables = store(
            StoreRequest(tuple(targets), parse_assignments(sources, "--source"), offline, output, on_probe, os_name)
        )
    for stored in tables:
        if stored.cache_warning:
            click.echo(f"gfxgate: warning: {stored.cache_warning}", err=True)
        result = stored.result
        emit(stored.document, stored.path)
        click.echo(
            f"gfxgate: {result.os}: {len(result.targets)} targets, {len(result.tags)} releases ({result.tags[0]} … "
            f"{result.tags[-1]}), {result.probed} probed",
            err=True,
        )
        report_unreadable(result, False)
