"""`gfxgate workarounds`: every documented workaround, checked against the pinned sources."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option, parse_targets, require_source, source_options, terminal


@click.command()
@click.option("-t", "--target", "targets", multiple=True, metavar="TARGET", help="Only workarounds that apply to these targets.")
@format_option(("md", "json", "text"))
@output_option()
@source_options
@click.option("--installed", "installed", multiple=True, type=click.Path(exists=True, path_type=Path), metavar="DIR",
              help="Scanned artifacts: say whether code exists for the target an HSA override selects.")
def workarounds(targets, fmt, output, refs, sources, offline, installed) -> None:
    """The workaround matrix: what each workaround does, what it unblocks, its risk, and live evidence.

    Each entry is checked at the scanned versions: is the variable still read, and where; is the build
    flag still there. An entry whose evidence disappeared is shown as "stale at <tag>".
    """
    from gfxgate.gate import workarounds as wk
    from gfxgate.report.workarounds import render
    from gfxgate.sources.resolve import SourceSet, load_pins, parse_assignments

    parsed = parse_targets(targets)
    items = wk.default_workarounds()
    if parsed:
        processors = {t.processor for t in parsed}
        items = tuple(w for w in items if not w.applies_to or processors & set(w.applies_to))
    artifacts = None
    if installed:
        from gfxgate.artifacts.scan import scan_paths
        from gfxgate.artifacts.verdicts import artifact_verdicts

        report = scan_paths(list(installed))
        artifacts = lambda target: artifact_verdicts(report, [target])  # noqa: E731 - one question per override
    sources, refs = parse_assignments(sources, "--source"), parse_assignments(refs, "--ref")
    sourceset = SourceSet(load_pins(), sources=sources, refs=refs, offline=offline)
    try:
        # the entries are checked in ollama at its version: without it there is nothing to answer from (exit 5 or 4,
        # naming the --source to give), never a table of unknowns
        ollama = require_source(sourceset, "ollama", "workarounds")
        steps = None
        if parsed:  # each entry's setting is its route step's for the targets: the same answer as `scan` at this version
            from gfxgate.gate.route import step_settings
            from gfxgate.gate.scan import scan_matrix

            pins = load_pins()
            # an embedded snapshot holds that version: the pins', or a pin set's (`--ref ollama=v0.17.5`: the study)
            pinned = (not refs and ollama.ref == pins.sources["ollama"].ref) or (bool(refs) and pins.pin_set_for(refs) is not None)
            matrix = (scan_matrix(parsed, refs=refs or None, offline=offline, strict_coupled=False) if pinned else
                      scan_matrix(parsed, refs=refs, sources=sources, offline=offline, strict_coupled=False))
            steps = step_settings(matrix.routes)
        reports = wk.check_all(items, sourceset, targets=parsed, artifacts=artifacts, steps=steps)
        absent = wk.not_applicable(items, sourceset)
        infos = tuple(s.info() for s in sourceset.opened())
    finally:
        sourceset.close()
    emit(render(reports, fmt, sources=infos, not_applicable=absent, **(terminal(output) if fmt == "text" else {})), output)
