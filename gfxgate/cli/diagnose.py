"""`gfxgate diagnose [LOG…]`: which layer stopped this GPU, from the user's own Ollama / llama.cpp log."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, fail_on_option, format_option, output_option, source_options, terminal_text
from gfxgate.cli.io import echo  # message lines: their controls made visible


@click.command()
@click.argument("logs", nargs=-1, metavar="[LOG]...")
@click.option(
    "--journal-unit",
    "units",
    multiple=True,
    metavar="UNIT",
    help="Read the systemd journal of UNIT (journalctl -u UNIT); repeatable.",
)
@click.option("--since", metavar="TIME", help="With --journal-unit: only entries since TIME (journalctl --since).")
@format_option(("md", "json", "text"))
@output_option()
@fail_on_option("layer", "LAYER|any", "Exit 1 when a finding implies a verdict on LAYER (or on any layer); repeatable.")
@source_options(refs=False, online=True, note="to locate the printing lines")
@click.option("--no-upstream", is_flag=True, help="Do not locate the printing lines in upstream sources.")
def diagnose(logs, units, since, fmt, output, fail_on, sources, online, no_upstream) -> None:
    """Read Ollama server logs (any version), journal excerpts or llama.cpp / llama-server output (LOG, '-' for
    stdin, or --journal-unit) and report what they establish (versions, GPUs and gfx targets, backends,
    overrides, runs), every recognised failure with its log:line, gate layer, implied verdict, remedies and the
    upstream line that prints it, and what could not be established.

    Exit codes: 0 diagnosed, 1 a --fail-on-layer layer has a finding, 2 usage, 3 bad message catalogue,
    6 unreadable input.
    """
    from gfxgate.app.diagnose import DiagnoseRequest
    from gfxgate.app.diagnose import diagnose as run
    from gfxgate.diagnose.render import render
    from gfxgate.errors import ExitCode

    if sources:  # the sources' module (pins, git) only when a --source is given
        from gfxgate.sources.resolve import parse_assignments

        sources = parse_assignments(sources, "--source")
    result = run(
        DiagnoseRequest(
            tuple(logs),
            tuple(units),
            since,
            tuple(fail_on),
            sources or {},
            offline=not online,
            locate=not no_upstream,
            output=output,
        )
    )
    emit(terminal_text(render(result.diagnoses, fmt), fmt, output), output)
    if result.failing:
        echo(f"gfxgate: findings on {', '.join(result.failing)}", err=True)
        raise SystemExit(int(ExitCode.FINDINGS))
