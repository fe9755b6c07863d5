"""`gfxgate rocblas -t TARGET [PATH]...`: the rocBLAS / Tensile files an install has (ARCHITECTURE.md's worked example
of a new command, step 3; it would be gfxgate/cli/rocblas.py)."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "-t", "--target", "targets", multiple=True, metavar="TARGET", help="GPU target; repeatable or comma-separated."
)
@format_option()
@output_option()
def rocblas(paths, targets, fmt, output) -> None:
    """Which rocBLAS and Tensile library files are installed, and what they decide for TARGET."""
    from gfxgate.app.rocblas import RocblasRequest
    from gfxgate.app.rocblas import rocblas as run
    from gfxgate.artifacts.render import render

    emit(render(run(RocblasRequest(tuple(targets), tuple(paths))), fmt), output)
