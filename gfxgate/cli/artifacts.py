"""``gfxgate artifacts``: which GPU code is really installed, read from ELF and bundle headers."""

from __future__ import annotations

from pathlib import Path

import click

from gfxgate.cli.common import emit, format_option, output_option, parse_targets

DEFAULT_DIRS = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/opt/rocm/lib")


def default_paths() -> list[Path]:
    """The issue's default search: Ollama's folders, ROCm, and the multiarch library folder."""
    import sysconfig

    dirs = list(DEFAULT_DIRS)
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(f"/usr/lib/{multiarch}")
    return [Path(d) for d in dirs if Path(d).is_dir()]


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
    import sys

    from gfxgate.artifacts.render import ArtifactsResult, render
    from gfxgate.artifacts.scan import scan_paths
    from gfxgate.errors import InputError

    targets = parse_targets(target_values)
    roots = list(paths) or default_paths()
    if not roots:
        raise InputError("no PATH given and none of the default folders exists",
                         hint="name the files or folders to scan, e.g. gfxgate artifacts /usr/lib/ollama")
    missing = [str(p) for p in roots if not p.exists() and not p.is_symlink()]
    if missing:
        raise InputError(f"no such file or folder: {', '.join(missing)}")

    if sys.stderr.isatty():
        from rich.progress import Progress, SpinnerColumn, TextColumn

        with Progress(SpinnerColumn(), TextColumn("{task.completed} files · {task.description}"),
                      transient=True) as bar:
            task = bar.add_task("scanning", total=None)
            report = scan_paths(roots, kernels=kernels, sha256=sha256, jobs=jobs,
                                progress=lambda p: bar.update(task, advance=1, description=p[-60:]))
    else:
        report = scan_paths(roots, kernels=kernels, sha256=sha256, jobs=jobs)

    cells = {}
    if targets:
        from gfxgate.artifacts.verdicts import artifact_verdicts

        cells = artifact_verdicts(report, targets)
    result = ArtifactsResult(report, tuple(str(t) for t in targets), cells)
    emit(render(result, fmt), output)
    errors = sum(len(f.errors) for f in report.files)
    click.echo(f"gfxgate: {len(report.files)} file(s), {len(report.target_counts())} target(s), "
               f"{errors} error(s)", err=True)
