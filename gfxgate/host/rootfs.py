"""The machine as a folder: every file doctor reads goes through one :class:`RootFS`, which reads ``root`` as ``/``.

Reads are bounded (a sysfs or unit file is small; a larger one is cut at ``limit``), never follow a path out of the
root, and are recorded, so ``gfxgate doctor --collect`` can write exactly the files that were read. What cannot be
read (permissions, missing files) is recorded too, so the report can say what it could not see without root.
Device nodes are not files a capture can hold: their mode, owner and group are recorded as ``stat`` facts, and a
captured tree carries them in ``.gfxgate-doctor/stat.json``.
"""

from __future__ import annotations

import json
import os
import stat as statmod
from pathlib import Path

MANIFEST = ".gfxgate-doctor"


class RootFS:
    def __init__(self, root: Path | str = "/", *, limit: int = 1 << 20) -> None:
        self.root = Path(root)
        self.live = str(self.root) == "/"
        self.limit = limit
        self.read: dict[str, bytes] = {}  # "/etc/group" -> bytes, in the order read
        self.denied: list[str] = []  # paths that exist but could not be read
        self.stats: dict[str, dict] = {}
        self.probes: dict[str, str] = {}  # name -> text (live probes, kept for --collect)
        self._captured = self._load_manifest()

    # -- paths -----------------------------------------------------------------------------------------
    def host(self, path: str) -> Path:
        """The real path of ``path`` ("/sys/…") under the root; ``..`` cannot leave it."""
        parts = [p for p in Path(path).parts if p not in ("/", "..", ".")]
        return self.root.joinpath(*parts)

    def inside(self, real: Path) -> bool:
        try:
            real.resolve().relative_to(self.root.resolve())
        except (ValueError, OSError, RuntimeError):
            return False
        return True

    def glob(self, pattern: str) -> list[str]:
        """Absolute machine paths matching ``pattern`` under the root, sorted."""
        base = self.host("/")
        return sorted("/" + str(p.relative_to(base)) for p in base.glob(pattern.lstrip("/")))

    def exists(self, path: str) -> bool:
        return self.host(path).exists() or path in self._captured.get("stat", {})

    def is_dir(self, path: str) -> bool:
        return self.host(path).is_dir()

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.host(path)))
        except OSError:
            return []

    # -- reads -----------------------------------------------------------------------------------------
    def read_bytes(self, path: str, *, limit: int | None = None) -> bytes | None:
        if path in self.read:
            return self.read[path]
        real = self.host(path)
        if not self.live and not self.inside(real):
            return None  # a captured tree's link out of it (etc/group -> /etc/shadow) is not followed
        try:
            with open(real, "rb") as handle:
                data = handle.read(limit or self.limit)
        except PermissionError:
            self.denied.append(path)
            return None
        except OSError:
            return None
        self.read[path] = data
        return data

    def read_text(self, path: str, *, limit: int | None = None) -> str | None:
        data = self.read_bytes(path, limit=limit)
        return None if data is None else data.decode("utf-8", "replace")

    def keep(self, path: str, data: bytes) -> None:
        """Replace what a capture keeps of ``path`` (an environment file filtered to the listed variables)."""
        self.read[path] = data

    def stat(self, path: str) -> dict | None:
        """mode (octal text), uid, gid and kind of ``path``; from the capture's manifest when the tree has one."""
        if path in self._captured.get("stat", {}):
            info = self._captured["stat"][path]
        else:
            try:
                st = os.stat(self.host(path))
            except OSError:
                return None
            kind = "char" if statmod.S_ISCHR(st.st_mode) else "dir" if statmod.S_ISDIR(st.st_mode) else "file"
            info = {"mode": f"{statmod.S_IMODE(st.st_mode):04o}", "uid": st.st_uid, "gid": st.st_gid, "kind": kind}
        self.stats[path] = info
        return info

    def probe(self, name: str) -> str | None:
        """A probe's text from the capture (``ollama --version`` of the captured machine), or None."""
        value = self._captured.get("probes", {}).get(name)
        if value is not None:
            self.probes[name] = value
        return value

    def invoking_user(self) -> str | None:
        if not self.live:
            return self._captured.get("user")
        import pwd

        try:
            return pwd.getpwuid(os.getuid()).pw_name
        except KeyError:
            return None

    def _load_manifest(self) -> dict:
        if self.live:
            return {}
        try:
            data = json.loads((self.root / MANIFEST / "stat.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def captured_logs(self) -> list[str]:
        """The logs a capture carries (``doctor --collect`` with ``--log``), as real paths of this folder."""
        names = self._captured.get("logs", [])
        return [str(self.root / MANIFEST / "logs" / n) for n in names if isinstance(n, str) and "/" not in n and n[:1] != "."]

    def manifest(self) -> dict:
        return {"stat": self.stats, "probes": self.probes, "user": self.invoking_user()}
