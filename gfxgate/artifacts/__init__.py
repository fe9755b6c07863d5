"""Installed-artifact scanner: which AMD GPU code is really on disk (ELF code objects, offload bundles,
compressed bundles, images embedded in host libraries, rocBLAS/Tensile/hipBLASLt files).

Public API::

    scan_paths(paths, *, kernels=False, sha256=False, jobs=None) -> ArtifactReport
    scan_file(path, *, kernels=False, sha256=False) -> FileReport
    artifact_verdicts(report, targets) -> {(layer_id, target): Verdict}
    render(ArtifactsResult(report, targets, cells), "md" | "json" | "text") -> str

The JSON Schema of the json format is ``gfxgate/schemas/artifacts.schema.json`` (``gfxgate schema artifacts``).

Imports are lazy so ``import gfxgate.artifacts`` costs nothing until used.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "scan_paths": "scan",
    "scan_file": "scan",
    "iter_files": "scan",
    "ArtifactReport": "model",
    "FileReport": "model",
    "CodeObject": "model",
    "artifact_verdicts": "verdicts",
    "ROCBLAS_LAYER": "verdicts",
    "INSTALLED_LAYER": "verdicts",
    "ArtifactsResult": "render",
    "render": "render",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"gfxgate.artifacts.{_EXPORTS[name]}"), name)
    raise AttributeError(name)
