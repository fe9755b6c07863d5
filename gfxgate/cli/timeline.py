"""`gfxgate timeline`: every target × every release — the route at each, as a table, JSON, SVG or PNG."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, output_option, source_options, terminal
from gfxgate.cli.io import echo  # message lines: their controls made visible


@click.command()
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET",
              help="GPU target; repeatable or comma-separated (default: every target a rule names).")
@click.option("--from", "first", metavar="TAG", help="First release (default: the oldest).")
@click.option("--to", "last", metavar="TAG", help="Last release (default: the newest).")
@format_option(("md", "json", "text", "svg", "png"))
@output_option()
@click.option("--live", is_flag=True, help="Recompute from the release tags instead of the embedded timeline snapshot.")
@source_options(refs=False, note="implies --live")
@click.option("--prereleases", is_flag=True, help="Include pre-release tags (implies --live).")
@click.option("--every-tag", is_flag=True, help="Probe every release instead of bisecting (implies --live).")
@click.option("-v", "--verbose", is_flag=True,
              help="List every rule and release whose source could not be read (Markdown and stderr; JSON always has them).")
def timeline(targets, first, last, fmt, output, live, sources, offline, prereleases, every_tag, verbose) -> None:
    """The support timeline: per target and release, the shortest route (ROCm out of the box, override, build +
    rocBLAS files, Vulkan, CPU), the flips between with their evidence, and each target's answer sentence.

    Without --live the default targets and releases come from the embedded timeline snapshot (offline);
    --live walks the ollama release tags with the same rules and facts cache as `gfxgate history`.
    """
    from gfxgate.cli.common import parse_targets, stdout_is_terminal
    from gfxgate.errors import SourceError, UsageError
    from gfxgate.timeline import snapshot as snap
    from gfxgate.timeline.render import render

    if fmt == "png" and output is None and stdout_is_terminal():
        raise UsageError("a PNG is binary: write it with -o FILE (or redirect stdout)")
    names = [str(t) for t in parse_targets(targets)] or None
    live = live or bool(sources) or prereleases or every_tag
    if live:
        result = compute_live(names or snap.default_targets(), first, last, sources, offline, prereleases, every_tag)
    else:
        stored = snap.load()
        if names:
            missing = [n for n in names if n not in stored.targets]
            if missing:
                raise UsageError(f"not in the embedded timeline: {', '.join(missing)}", hint="use --live (with --source ollama=CLONE)")
        for bound in (first, last):
            if bound is not None and bound not in stored.tags:
                from gfxgate.sources.versions import nearest_tags

                near = nearest_tags(bound, list(stored.tags))
                raise SourceError(f"{bound!r} is not a release of the embedded timeline ({stored.tags[0]} … {stored.tags[-1]})",
                                  hint=("nearest tags: " + ", ".join(near)) if near else "use --live for other tags")
        if first and last and stored.tags.index(first) > stored.tags.index(last):
            raise UsageError(f"--from {first} comes after --to {last} in release order")
        result = stored.select(names, first, last)
    emit(render(result, fmt, verbose=verbose, **(terminal(output) if fmt == "text" else {})), output)
    cells = sum(len(r.cells) for r in result.rows)
    echo(f"gfxgate: {len(result.targets)} targets, {len(result.tags)} releases, {result.probed} probed, {cells} cells"
         f" ({result.origin})", err=True)
    report_unreadable(result, verbose)


def report_unreadable(result, verbose: bool) -> None:
    """One stderr line per source that could not be read (count, releases, rules, how to supply it); every
    rule and release with --verbose."""
    for missing in result.missing_sources():
        echo(f"gfxgate: note: {missing.line}", err=True)
    if verbose:
        for u in result.unreadable:
            echo(f"gfxgate: note: {u.tag} {u.rule}: {u.reason}", err=True)


def compute_live(names, first, last, sources, offline, prereleases, every_tag):
    from gfxgate.gate.route import extra_targets
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.history.walk import TagProber, default_facts_cache
    from gfxgate.sources.resolve import load_pins, parse_assignments
    from gfxgate.targets import catalog
    from gfxgate.timeline.compute import compute

    cat = catalog()
    parsed = [cat.parse(n) for n in names]
    probe_targets = parsed + [cat.parse(n) for n in extra_targets(parsed)]
    from gfxgate.cli.common import probe_progress

    with probe_progress("timeline of ollama") as on_probe:
        prober = TagProber(load_pins(), default_rules(), "ollama", probe_targets, cat,
                           sources=parse_assignments(sources, "--source"), offline=offline,
                           cache=default_facts_cache("ollama"), on_probe=on_probe)
        result = compute(prober, [str(t) for t in parsed], first=first, last=last, prereleases=prereleases,
                         every_tag=every_tag)
    if prober.cache.warning:
        click.echo(f"gfxgate: warning: {prober.cache.warning}", err=True)
    return result
