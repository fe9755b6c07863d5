"""Every name a package says it exports (``__all__``) can be imported from it.

``gfxgate.artifacts`` resolves its names lazily from submodules; after ``artifacts/report.py`` became
``artifacts/model.py`` the facade still pointed at the old module and ``from gfxgate.artifacts import
ArtifactReport`` raised ModuleNotFoundError while every test passed. This walks every package of gfxgate.
"""

from __future__ import annotations

import importlib
import pkgutil

import gfxgate


def _packages():
    yield "gfxgate"
    for info in pkgutil.walk_packages(gfxgate.__path__, "gfxgate."):
        if info.ispkg:
            yield info.name


def test_every_exported_name_imports():
    checked = 0
    for name in _packages():
        module = importlib.import_module(name)
        for export in getattr(module, "__all__", ()):
            assert getattr(module, export) is not None, f"{name}.{export}"
            checked += 1
    assert checked >= 10  # the facades of artifacts, sources and trace at least


def test_artifacts_facade_names_the_model_module():
    from gfxgate.artifacts import ArtifactReport, CodeObject, FileReport
    from gfxgate.artifacts import model

    assert (ArtifactReport, CodeObject, FileReport) == (model.ArtifactReport, model.CodeObject, model.FileReport)
