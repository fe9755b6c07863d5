"""``gfxgate artifacts``: which GPU code is really installed, read from ELF and bundle headers.

The command line as click reads it; the use case is :func:`gfxgate.app.artifacts.artifacts`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from gfxgate.cli.common import echo, emit, format_option, output_option, terminal_text


@click.command("artifacts")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--target",
    "-t",
    "target_values",
    multiple=True,
    help="Answer for this GPU target (repeatable, comma-separated allowed), e.g. gfx900.",
)
@click.option("--kernels", is_flag=True, help="List kernel names from each code object's metadata note.")
@click.option("--sha256", is_flag=True, help="Add each file's SHA-256 (reads whole files).")
@click.option("--jobs", "-j", type=click.IntRange(1, 64), default=None, help="Files scanned in parallel.")
@format_option()
@output_option()
def artifacts(paths, target_values, kernels, sha256, jobs, fmt, output) -> None:
    """Which AMD GPU code is on disk: code objects, offload bundles (also compressed), images embedded in
    host libraries, rocBLAS/Tensile/hipBLASLt files, ROCm kpack archives — by content, from headers.

    Without PATHs it searches /usr/lib/ollama, /usr/local/lib/ollama, /opt/rocm/lib, /opt/rocm/.kpack and the
    multiarch library folder.
    """
    import contextlib

    from gfxgate.app.artifacts import ArtifactsRequest
    from gfxgate.app.artifacts import artifacts as run
    from gfxgate.artifacts.render import render

    request = ArtifactsRequest(tuple(paths), tuple(target_values), kernels, sha256, jobs)
    with contextlib.ExitStack() as stack:
        if sys.stderr.isatty():  # a spinner with the count and the file being read
            import dataclasses

            from rich.progress import Progress, SpinnerColumn, TextColumn

            bar = stack.enter_context(
                Progress(SpinnerColumn(), TextColumn("{task.completed} files · {task.description}"), transient=True)
            )
            task = bar.add_task("scanning", total=None)
            request = dataclasses.replace(request, progress=lambda p: bar.update(task, advance=1, description=p[-60:]))
        result = run(request)
    emit(terminal_text(render(result, fmt), fmt, output), output)
    report = result.report
    errors = sum(len(f.errors) for f in report.files)
    echo(
        f"gfxgate: {len(report.files)} file(s), {len(report.target_counts()) + len(report.cuda_counts())} target(s), {errors} error(s)",
        err=True,
    )
