"""Where upstream code comes from: git repositories read at a tag, plain folders, and layouts.

``Source`` is the one interface the matchers see; ``SourceError`` (and ``NetworkError``) the one
error family the CLI turns into a message and an exit code.

The names below are imported when first asked for: a module that needs one submodule (the log catalogue reads
``sources.base`` and ``sources.versions``) does not load the pins and git machinery of ``sources.resolve``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
import importlib

if TYPE_CHECKING:
    from gfxgate.sources.base import FileHit, Source
    from gfxgate.sources.resolve import SourceSet

__all__ = ["FileHit", "Source", "SourceSet"]
_WHERE = {"FileHit": "gfxgate.sources.base", "Source": "gfxgate.sources.base", "SourceSet": "gfxgate.sources.resolve"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gfxgate.sources' has no attribute {name!r}")

    return getattr(importlib.import_module(_WHERE[name]), name)
