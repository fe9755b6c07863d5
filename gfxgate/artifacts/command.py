"""``gfxgate artifacts`` itself, apart from its command line: the click command (``gfxgate.cli.artifacts``) calls
:func:`run` with the parsed options."""

from __future__ import annotations

import sys
from pathlib import Path

DEFAULT_DIRS = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/opt/rocm/lib")


def default_paths() -> list[Path]:
    """The issue's default search: Ollama's folders, ROCm, and the multiarch library folder."""
    import sysconfig

    dirs = list(DEFAULT_DIRS)
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        dirs.append(f"/usr/lib/{multiarch}")
    return [Path(d) for d in dirs if Path(d).is_dir()]


def run(paths: tuple[Path, ...], target_values: tuple[str, ...], kernels: bool, sha256: bool, jobs: int | None,
        fmt: str, output: Path | None) -> None:
    from gfxgate.artifacts.render import ArtifactsResult, render
    from gfxgate.artifacts.scan import scan_paths
    from gfxgate.cli.io import echo, emit, parse_targets
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
    from gfxgate.cli.common import terminal_text

    emit(terminal_text(render(result, fmt), fmt, output), output)
    errors = sum(len(f.errors) for f in report.files)
    echo(f"gfxgate: {len(report.files)} file(s), {len(report.target_counts())} target(s), {errors} error(s)", err=True)
