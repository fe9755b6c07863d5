"""A plain folder as a source (an unpacked release tarball, an air-gapped copy): files as they are."""

from __future__ import annotations

import os
from pathlib import Path

from gfxgate.errors import SourceError
from gfxgate.sources.base import MAX_BLOB_BYTES, Source, blob_too_large, safe_relpath


class DirectorySource(Source):
    def __init__(self, name: str, root: Path, ref: str = "worktree") -> None:
        self.name = name
        self.url = str(root)
        self.ref = ref
        self.commit = None
        self.origin = "directory"
        self.folder = root.resolve()
        self._files: list[str] | None = None

    def read(self, path: str) -> bytes | None:
        target = (self.folder / safe_relpath(path)).resolve()
        if not target.is_relative_to(self.folder) or not target.is_file():
            return None
        size = target.stat().st_size
        if size > MAX_BLOB_BYTES:
            raise SourceError(blob_too_large(path, size, f" in {self.folder}"))
        with target.open("rb") as handle:
            data = handle.read(MAX_BLOB_BYTES + 1)
        if len(data) > MAX_BLOB_BYTES:  # grew since the stat
            raise SourceError(blob_too_large(path, len(data), f" in {self.folder}"))
        return data

    def list_files(self) -> list[str]:
        if self._files is None:
            files: list[str] = []
            for folder, dirs, names in os.walk(self.folder):
                dirs[:] = sorted(d for d in dirs if d != ".git")
                rel = Path(folder).relative_to(self.folder)
                files.extend((rel / n).as_posix() for n in names)
            self._files = sorted(files)
        return self._files
