"""Where upstream code comes from: git repositories read at a tag, plain folders, and layouts.

``Source`` is the one interface the matchers see; ``SourceError`` (and ``NetworkError``) the one
error family the CLI turns into a message and an exit code.
"""

from gfxgate.sources.base import FileHit, Source
from gfxgate.sources.resolve import SourceSet

__all__ = ["FileHit", "Source", "SourceSet"]
