"""`gfxgate diagnose [LOG…]`: which layer stopped this GPU, from the user's own Ollama / llama.cpp log."""

from __future__ import annotations

import click

from gfxgate.cli.common import emit, format_option, output_option, source_options, terminal_text
from gfxgate.cli.io import echo  # message lines: their controls made visible


@click.command()
@click.argument("logs", nargs=-1, metavar="[LOG]...")
@click.option("--journal-unit", "units", multiple=True, metavar="UNIT",
              help="Read the systemd journal of UNIT (journalctl -u UNIT); repeatable.")
@click.option("--since", metavar="TIME", help="With --journal-unit: only entries since TIME (journalctl --since).")
@format_option(("md", "json", "text"))
@output_option()
@click.option("--fail-on", "fail_on", multiple=True, metavar="LAYER|any",
              help="Exit 1 when a finding implies a verdict on LAYER (or on any layer); repeatable.")
@source_options(refs=False, online=True, note="to locate the printing lines")
@click.option("--no-upstream", is_flag=True, help="Do not locate the printing lines in upstream sources.")
def diagnose(logs, units, since, fmt, output, fail_on, sources, online, no_upstream) -> None:
    """Read Ollama server logs (any version), journal excerpts or llama.cpp / llama-server output (LOG, '-' for
    stdin, or --journal-unit) and report what they establish (versions, GPUs and gfx targets, backends,
    overrides, runs), every recognised failure with its log:line, gate layer, implied verdict, remedies and the
    upstream line that prints it, and what could not be established.

    Exit codes: 0 diagnosed, 1 a --fail-on layer has a finding, 2 usage, 3 bad message catalogue,
    6 unreadable input.
    """
    from gfxgate.cli.io import refuse_output_over_inputs
    from gfxgate.diagnose import diagnose_inputs
    from gfxgate.diagnose.render import render
    from gfxgate.errors import ExitCode, UsageError
    from gfxgate.sources.resolve import parse_assignments

    if not logs and not units:
        raise UsageError("name a log file, '-' for stdin, or --journal-unit UNIT",
                         hint="e.g. gfxgate diagnose server.log, or journalctl -u ollama | gfxgate diagnose -")
    if since and not units:
        raise UsageError("--since only applies to --journal-unit")
    layers = _check_fail_on(fail_on)
    refuse_output_over_inputs(output, logs)
    diagnoses = diagnose_inputs(list(logs), units=list(units), since=since,
                                sources=parse_assignments(sources, "--source"), offline=not online, locate=not no_upstream)
    emit(terminal_text(render(diagnoses, fmt), fmt, output), output)
    if layers:
        hits = sorted({f.layer for d in diagnoses for f in d.findings if f.verdict and ("any" in layers or f.layer in layers)})
        if hits:
            echo(f"gfxgate: findings on {', '.join(hits)}", err=True)
            raise SystemExit(int(ExitCode.FINDINGS))


def _check_fail_on(values) -> set[str]:
    if not values:
        return set()
    from gfxgate.errors import UsageError
    from gfxgate.gate.ruleset import default_rules

    known = [layer.id for layer in default_rules().layers]
    out = set()
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if part != "any" and part not in known:
                from gfxgate.suggest import did_you_mean

                layers = "layers: any, " + ", ".join(known)
                raise UsageError(f"unknown --fail-on layer {part!r}", hint=did_you_mean(part, known, n=1, then=layers, otherwise=layers))
            out.add(part)
    return out
