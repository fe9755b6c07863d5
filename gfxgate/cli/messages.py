"""`gfxgate messages`: the log-message catalogue, each message checked against the pinned sources."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, output_option, source_options, terminal


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
    from gfxgate.app.messages import MessagesRequest
    from gfxgate.app.messages import messages as run
    from gfxgate.errors import ExitCode
    from gfxgate.report.messages import render
    from gfxgate.sources.resolve import parse_assignments

    result = run(
        MessagesRequest(
            sources=parse_assignments(sources, "--source"), refs=parse_assignments(refs, "--ref"), offline=offline
        )
    )
    emit(
        render(list(result.checks), fmt, sources=result.sources, **(terminal(output) if fmt == "text" else {})), output
    )
    if fail_on_stale and result.stale:
        raise SystemExit(int(ExitCode.FINDINGS))
