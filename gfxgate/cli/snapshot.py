"""`gfxgate snapshot build|show`: regenerate or inspect the embedded evidence snapshot."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, source_options


@click.group()
def snapshot() -> None:
    """The embedded snapshot of evidence at the pinned tags (rules/snapshots/pins.json)."""


@snapshot.command("build")
@source_options
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the snapshot of the pins (default: the shipped rules/snapshots/pins.json, and "
                   "pins-NAME.json beside it for each [pin_sets.NAME] of rules/pins.toml).")
def build_cmd(refs, sources, offline, output) -> None:
    """Read every gate rule's files at the pins and write the snapshot, and one per named pin set (`study`: the
    seed study's versions). --ref is refused: the snapshot is of the pins."""
    from gfxgate.gate import snapshot as snap
    from gfxgate.errors import UsageError
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.sources.resolve import SourceSet, load_pins, parse_assignments

    if refs:
        raise UsageError("the snapshot records the pins; use `gfxgate pins bump` or edit rules/pins.toml to change a version")
    pins = load_pins()
    # the pins, then (unless -o names one file) each pin set of rules/pins.toml into its own pins-NAME.json
    jobs = [(pins, output or snap.default_path())]
    if output is None:
        jobs += [(pins.with_pin_set(name), snap.pin_set_path(name)) for name in sorted(pins.pin_sets)]
    for chosen, target in jobs:
        sourceset = SourceSet(chosen, sources=parse_assignments(sources, "--source"), offline=offline)
        try:
            data = snap.build(default_rules(), sourceset, chosen)
        finally:
            sourceset.close()
        target.parent.mkdir(parents=True, exist_ok=True)
        emit(snap.dumps(data), target)
        states: dict[str, int] = {}
        for rf in data["rules"].values():
            states[rf["state"]] = states.get(rf["state"], 0) + 1
        click.echo(f"gfxgate: {target.name}: rules " + ", ".join(f"{k}: {v}" for k, v in sorted(states.items())), err=True)


@snapshot.command("show")
def show_cmd() -> None:
    """Summarise the embedded snapshot: sources, commits and each rule's state."""
    from gfxgate.gate import snapshot as snap

    data = snap.load()
    for s in data.sources:
        click.echo(f"{s.name:14} {s.ref:12} {s.commit or '-'}")
    for rule_id, rf in sorted(data.facts.items()):
        click.echo(f"  {rule_id:42} {rf.state:15} {rf.reason or ''}")


@snapshot.command("timeline")
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help="Only these targets (default: every target a rule names, as `gfxgate timeline`).")
@source_options(refs=False)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write (default: the shipped rules/snapshots/timeline.json).")
def timeline_cmd(targets, sources, offline, output) -> None:
    """Compute the timeline over every ollama release and store it, so `gfxgate timeline` works offline."""
    from gfxgate.cli.common import parse_targets
    from gfxgate.cli.timeline import compute_live
    from gfxgate.timeline import snapshot as snap

    names = [str(t) for t in parse_targets(targets)] or snap.default_targets()
    result = compute_live(names, None, None, sources, offline, False, False)
    target = output or snap.default_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    emit(snap.dumps(snap.build(result)), target)
    click.echo(f"gfxgate: {len(result.targets)} targets, {len(result.tags)} releases ({result.tags[0]} … {result.tags[-1]}), "
               f"{result.probed} probed", err=True)
    from gfxgate.cli.timeline import report_unreadable

    report_unreadable(result, False)
