"""`rocblas(RocblasRequest) -> ArtifactsResult`: the rocBLAS / Tensile library files of an install, and the gate
matrix's artifact cells they decide for the named targets (ARCHITECTURE.md's worked example of a new command, step 1;
it would be gfxgate/app/rocblas.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from gfxgate.artifacts.render import ArtifactsResult


@dataclass(frozen=True)
class RocblasRequest:
    targets: tuple[str, ...]  # comma-separated allowed
    paths: tuple[Path, ...] = ()  # none: where installed GPU code is searched by default


def rocblas(req: RocblasRequest) -> ArtifactsResult:
    from gfxgate.app.common import parse_targets
    from gfxgate.artifacts.scan import scan_paths
    from gfxgate.artifacts.verdicts import artifact_verdicts
    from gfxgate.errors import InputError, UsageError
    from gfxgate.host.install import gpu_code_dirs

    targets = parse_targets(req.targets)
    if not targets:
        raise UsageError("name at least one --target", hint="e.g. gfxgate rocblas --target gfx1030")
    roots = list(req.paths) or gpu_code_dirs()
    if not roots:
        raise InputError("no PATH given and none of the default folders exists")
    report = scan_paths(roots)
    libraries = dataclasses.replace(report, files=tuple(f for f in report.files if f.library is not None))
    return ArtifactsResult(libraries, tuple(str(t) for t in targets), artifact_verdicts(report, targets))
