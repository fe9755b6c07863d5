"""``gfxgate artifacts``: which GPU code is really installed, read from ELF and bundle headers.

The command line as click reads it; the command itself is :func:`gfxgate.artifacts.command.run`.
"""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import format_option, output_option


@click.command("artifacts")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--target", "-t", "target_values", multiple=True,
              help="Answer for this GPU target (repeatable, comma-separated allowed), e.g. gfx900.")
@click.option("--kernels", is_flag=True, help="List kernel names from each code object's metadata note.")
@click.option("--sha256", is_flag=True, help="Add each file's SHA-256 (reads whole files).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Files scanned in parallel.")
@format_option()
@output_option()
def artifacts(paths, target_values, kernels, sha256, jobs, fmt, output) -> None:
    """Which AMD GPU code is on disk: code objects, offload bundles (also compressed), images embedded in
    host libraries, rocBLAS/Tensile/hipBLASLt files — by content, from headers.

    Without PATHs it searches /usr/lib/ollama, /usr/local/lib/ollama, /opt/rocm/lib and the multiarch
    library folder.
    """
    from gfxgate.artifacts.command import run

    run(paths, target_values, kernels, sha256, jobs, fmt, output)
