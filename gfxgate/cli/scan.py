"""`gfxgate scan --target T…`: the gate matrix."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, os_option, output_option, source_options, terminal


@click.command()
@click.option(
    "-t",
    "--target",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="GPU target (gfx900, gfx906:xnack-, 'RX Vega 56'); repeatable or comma-separated.",
)
@format_option(("md", "json", "text", "sarif"))
@output_option()
@source_options
@os_option
@click.option("--live", is_flag=True, help="Read the sources instead of the embedded snapshot.")
@click.option(
    "--installed",
    "installed",
    multiple=True,
    metavar="DIR",
    help="Scan installed GPU code under DIR for the artifact rows (repeatable; 'default' = the usual places).",
)
@click.option(
    "--runtime",
    type=click.Path(path_type=Path),  # read_worklog: missing, folder, FIFO, device → exit 6
    help="A `gfxgate sweep` worklog for the runtime row.",
)
@click.option(
    "--log",
    "logs",
    multiple=True,
    metavar="LOG",
    type=click.Path(allow_dash=True),  # read as diagnose reads a log: missing, folder, FIFO, device → exit 6
    help="An Ollama / llama.cpp log (as `gfxgate diagnose` reads it) for the runtime row; with --target auto, also the targets.",
)
@click.option(
    "--rules",
    "rules_root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Use gate rules from this folder (layers.yaml, gates/*.yaml) instead of the shipped ones.",
)
@click.option(
    "--snapshot",
    "snapshot_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Evaluate from this snapshot file instead of the embedded one.",
)
@click.option("-v", "--verbose", is_flag=True, help="Text format: also every cell's evidence, remedy and the notes.")
def scan(
    targets,
    fmt,
    output,
    refs,
    sources,
    offline,
    os_name,
    live,
    installed,
    runtime,
    logs,
    rules_root,
    snapshot_path,
    verbose,
) -> None:
    """The gate matrix: for each layer and target, a status with its evidence and remedy.

    Without --live, --ref or --source the evidence comes from the embedded snapshot of the
    pinned upstream tags (ollama: the newest release it knows, named in the notes with its age),
    so the command works offline on a fresh machine. The seed study's versions are a pin set
    with a snapshot of its own: --ref ollama=v0.17.5 answers from it, offline too.
    """
    from datetime import date

    from gfxgate.app.scan import ScanRequest
    from gfxgate.app.scan import scan as run
    from gfxgate.report import render
    from gfxgate.sources.resolve import parse_assignments

    matrix = run(
        ScanRequest(
            targets=tuple(targets),
            live=live,
            refs=parse_assignments(refs, "--ref"),
            sources=parse_assignments(sources, "--source"),
            offline=offline,
            installed=tuple(installed),
            runtime=runtime,
            logs=tuple(logs),
            rules_root=rules_root,
            snapshot_path=snapshot_path,
            today=date.today(),
            os=os_name,
        )
    )
    options = {**terminal(output), "verbose": verbose} if fmt == "text" else {}
    emit(render(matrix, fmt, **options), output)
