"""`artifacts(ArtifactsRequest) -> ArtifactsResult`: which GPU code is installed (read from ELF and bundle headers),
and, for the named targets, the gate matrix's artifact cells it decides."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from gfxgate.artifacts.render import ArtifactsResult
from gfxgate.records import dataclass


@dataclass(frozen=True)
class ArtifactsRequest:
    paths: tuple[Path, ...] = ()  # none: the default folders (host.install.gpu_code_dirs)
    targets: tuple[str, ...] = ()  # comma-separated allowed
    kernels: bool = False
    sha256: bool = False
    jobs: int | None = None
    progress: Callable[[str], None] | None = None  # called with each file's path as it is scanned


def artifacts(req: ArtifactsRequest) -> ArtifactsResult:
    from gfxgate.app.common import parse_targets
    from gfxgate.artifacts.scan import scan_paths
    from gfxgate.errors import InputError
    from gfxgate.host.install import gpu_code_dirs

    targets = parse_targets(req.targets)
    roots = list(req.paths) or gpu_code_dirs()
    if not roots:
        raise InputError(
            "no PATH given and none of the default folders exists",
            hint="name the files or folders to scan, e.g. gfxgate artifacts /usr/lib/ollama",
        )
    missing = [str(p) for p in roots if not p.exists() and not p.is_symlink()]
    if missing:
        raise InputError(f"no such file or folder: {', '.join(missing)}")
    if req.progress is not None:
        report = scan_paths(roots, kernels=req.kernels, sha256=req.sha256, jobs=req.jobs, progress=req.progress)
    else:
        report = scan_paths(roots, kernels=req.kernels, sha256=req.sha256, jobs=req.jobs)
    cells = {}
    if targets:
        from gfxgate.artifacts.verdicts import artifact_verdicts

        cells = artifact_verdicts(report, targets)
    return ArtifactsResult(report, tuple(str(t) for t in targets), cells)
