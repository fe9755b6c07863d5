"""`gfxgate messages`: the log-message catalogue, each message checked against the pinned sources."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, output_option, require_source, source_options, terminal


@click.command()
@format_option(("md", "json", "text"))
@output_option()
@source_options
@click.option("--fail-on-stale", is_flag=True, help="Exit 1 when a message is stale at the checked versions.")
def messages(fmt, output, refs, sources, offline, fail_on_stale) -> None:
    """Where upstream prints each message `gfxgate diagnose` recognises, at the pins or any --ref.

    live = printed there (repo@tag:path:line); stale = the catalogue says it is printed there but the printing
    code is gone (or the reverse); retired = not printed at that version, as the catalogue says; unknown =
    the source could not be read; not-available = its printer is not among gfxgate's sources.
    """
    from gfxgate.diagnose.catalogue import default_catalogue
    from gfxgate.report.messages import render
    from gfxgate.diagnose.upstream import STALE, check_catalogue
    from gfxgate.errors import ExitCode
    from gfxgate.sources.resolve import SourceSet, load_pins, parse_assignments

    sourceset = SourceSet(load_pins(), sources=parse_assignments(sources, "--source"), refs=parse_assignments(refs, "--ref"),
                          offline=offline)
    try:
        # the messages are located in ollama's code at its version: without it nothing can be checked (exit 5/4
        # naming the --source to give), never a catalogue of unknowns
        require_source(sourceset, "ollama", "messages")
        checks = check_catalogue(default_catalogue(), sourceset)
        infos = tuple(s.info() for s in sourceset.opened())
    finally:
        sourceset.close()
    emit(render(checks, fmt, sources=infos, **(terminal(output) if fmt == "text" else {})), output)
    if fail_on_stale and any(c.state == STALE for c in checks):
        raise SystemExit(int(ExitCode.FINDINGS))
