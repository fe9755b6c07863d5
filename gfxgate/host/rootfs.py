"""The machine as a folder: every file doctor reads goes through one :class:`RootFS`, which reads ``root`` as ``/``.

One safe reader for captured files (issue 41), used for the live machine too:

* **Links resolve inside the root.** Every path is walked one component at a time with ``lstat``; a symbolic link
  is followed as the captured machine would follow it, with ``root`` as ``/`` (an absolute target starts again at
  the root, ``..`` at the root stays there, as in a chroot), at most 40 links per path (``ELOOP``). No path, link
  or ``..`` reaches a file outside the root.
* **Regular files only.** The resolved file is opened ``O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`` and checked again on
  the descriptor: a FIFO, socket, device or folder is not read (a FIFO cannot block, ``/dev/zero`` cannot fill
  memory), a link swapped in after the walk is not followed.
* **Bounded.** A read keeps at most ``limit`` bytes (a cap per kind, given by the caller: a ``comm`` is 64 bytes,
  a KFD ``properties`` file 64 KiB, a unit file 1 MiB), all reads together at most :data:`TOTAL_BYTES`; a folder
  listing or a glob looks at most ``cap`` entries (:data:`GLOB_CAP`), in directory order, and says so in
  :attr:`RootFS.notes` when it stopped early. Nothing recurses.

Reads are recorded, so ``gfxgate doctor --collect`` can write exactly the files that were read. What cannot be
read (permissions, missing files) is recorded too, so the report can say what it could not see without root.
Device nodes are not files a capture can hold: their mode, owner and group are recorded as ``stat`` facts, and a
captured tree carries them in ``.gfxgate-doctor/stat.json``, whose every field is checked (a wrong shape is
dropped with a note, never an internal error).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat as statmod
from pathlib import Path

MANIFEST = ".gfxgate-doctor"
MAX_LINKS = 40  # the kernel's MAXSYMLINKS
TOTAL_BYTES = 96 << 20  # all files read by one RootFS together
GLOB_CAP = 4096  # entries one folder listing or one glob step looks at
MANIFEST_LIMIT = 4 << 20
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
_MODE = re.compile(r"[0-7]{3,4}")
_NAME = re.compile(r"[^\x00-\x1f\x7f:/\\]{1,255}")
KINDS = ("char", "block", "dir", "file", "fifo", "socket", "link")


class RootFS:
    def __init__(self, root: Path | str = "/", *, limit: int = 1 << 20, total: int = TOTAL_BYTES) -> None:
        self.root = Path(root)
        self.live = str(self.root) == "/"
        self._base = "/" if self.live else os.path.realpath(self.root)
        self.limit = limit
        self.total = total
        self.spent = 0  # bytes read so far (kept or not)
        self.read: dict[str, bytes] = {}  # "/etc/group" -> bytes as --collect keeps them, in the order read
        self._cache: dict[str, bytes] = {}  # what the files held (a kept file reduced by keep() is read whole)
        self.denied: list[str] = []  # paths that exist but could not be read
        self.notes: list[str] = []  # what the reader refused or cut (a FIFO, a cap reached), once each
        self.stats: dict[str, dict] = {}
        self.reduced: dict[str, dict[str, str]] = {}  # what a reader keeps of a file it reduces (/etc/passwd's users)
        self.probes: dict[str, str] = {}  # name -> text (live probes, kept for --collect)
        self._captured = self._load_manifest()

    # -- paths -----------------------------------------------------------------------------------------
    def host(self, path: str) -> Path:
        """The path ``path`` ("/sys/…") names under the root, links not resolved (for messages; read through
        :meth:`real`)."""
        parts = [p for p in Path(path).parts if p not in ("/", "..", ".")]
        return self.root.joinpath(*parts)

    def note(self, text: str) -> None:
        if text not in self.notes and len(self.notes) < 100:
            self.notes.append(text)

    def _walk(self, path: str, follow_last: bool = True) -> tuple[str, os.stat_result] | None:
        """(real path, its lstat) of ``path`` read with the root as ``/``, every link resolved inside the root;
        None when a component is missing, not a folder, unreadable, or the links loop."""
        pending = [p for p in reversed(path.split("/")) if p and p != "."]
        done: list[str] = []  # the real path after each component walked so far (the root's for none)
        prefix = self._base.rstrip("/")  # "" for the live machine's /
        links = 0
        st = None
        try:
            st = os.lstat(self._base)
        except OSError:
            return None
        while pending:
            name = pending.pop()
            if name == "..":
                if done:
                    done.pop()
                continue
            if "\0" in name or len(name) > 255:
                return None
            real = (done[-1] if done else prefix) + "/" + name  # no name holds a "/": split on it above
            try:
                st = os.lstat(real)
            except (OSError, ValueError):
                return None
            if statmod.S_ISLNK(st.st_mode) and (pending or follow_last):
                links += 1
                if links > MAX_LINKS:
                    return None
                try:
                    target = os.readlink(real)
                except OSError:
                    return None
                if target.startswith("/"):
                    done = []
                pending.extend(p for p in reversed(target.split("/")) if p and p != ".")
                continue
            if pending and not statmod.S_ISDIR(st.st_mode):
                return None
            done.append(real)
        return (done[-1] if done else self._base), st

    def real(self, path: str) -> Path | None:
        """The real path of ``path`` under the root after every link (inside the root), or None when missing."""
        found = self._walk(path)
        return Path(found[0]) if found else None

    def inside(self, real: Path) -> bool:
        try:
            Path(os.path.realpath(real)).relative_to(os.path.realpath(self._base))
        except (ValueError, OSError):
            return False
        return True

    def exists(self, path: str) -> bool:
        return self._walk(path) is not None or path in self._captured.get("stat", {})

    def is_dir(self, path: str) -> bool:
        found = self._walk(path)
        return found is not None and statmod.S_ISDIR(found[1].st_mode)

    def is_file(self, path: str) -> bool:
        found = self._walk(path)
        return found is not None and statmod.S_ISREG(found[1].st_mode)

    def listdir(self, path: str, *, cap: int = GLOB_CAP) -> list[str]:
        """The names in folder ``path`` (sorted), at most ``cap`` of them (a note says when there were more)."""
        found = self._walk(path)
        if found is None or not statmod.S_ISDIR(found[1].st_mode):
            return []
        names: list[str] = []
        try:
            with os.scandir(found[0]) as entries:
                for entry in entries:
                    if len(names) >= cap:
                        self.note(f"{path}: more than {cap} entries; only {cap} were looked at")
                        break
                    names.append(entry.name)
        except OSError:
            return sorted(names)
        return sorted(names)

    def glob(self, pattern: str, *, cap: int = GLOB_CAP) -> list[str]:
        """Absolute machine paths matching ``pattern`` (``*``, ``?``, ``[…]`` within one component; no ``**``)
        under the root, sorted; each folder it lists is listed at most ``cap`` entries deep."""
        paths = ["/"]
        for part in [p for p in pattern.strip("/").split("/") if p]:
            step = []
            for base in paths:
                if any(ch in part for ch in "*?["):
                    step += [
                        base.rstrip("/") + "/" + n for n in self.listdir(base, cap=cap) if fnmatch.fnmatchcase(n, part)
                    ]
                else:
                    step.append(base.rstrip("/") + "/" + part)
                if len(step) > cap:
                    self.note(f"{pattern}: more than {cap} matches; only {cap} were read")
                    step = step[:cap]
                    break
            paths = step
        return sorted(p for p in paths if self._walk(p) is not None)

    # -- reads -----------------------------------------------------------------------------------------
    def read_bytes(self, path: str, *, limit: int | None = None, keep: bool = True) -> bytes | None:
        """At most ``limit`` bytes of the regular file ``path`` (links resolved inside the root), or None.
        ``keep=False``: read, not kept for ``--collect`` (a process name that is not the server's)."""
        if path in self._cache:
            if keep and path not in self.read:
                self.read[path] = self._cache[path]
            return self._cache[path]
        found = self._walk(path)
        if found is None:
            return None
        real, st = found
        if not statmod.S_ISREG(st.st_mode):
            if not statmod.S_ISDIR(st.st_mode):
                self.note(f"{path}: not a regular file ({_kind(st.st_mode)}); not read")
            return None
        cap = min(limit or self.limit, self.total - self.spent)
        if cap <= 0:
            self.note(f"{path}: not read: the files read already hold {self.total >> 20} MiB, all doctor reads")
            return None
        try:
            fd = os.open(real, _FLAGS)
        except PermissionError:
            self.denied.append(path)
            return None
        except OSError:
            return None
        try:
            if not statmod.S_ISREG(os.fstat(fd).st_mode):  # swapped after the walk
                return None
            chunks, size = [], 0
            while size < cap:
                chunk = os.read(fd, min(cap - size, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError:
            return None
        finally:
            os.close(fd)
        data = b"".join(chunks)
        self.spent += len(data)
        if keep:
            self._cache[path] = self.read[path] = data
        return data

    def read_text(self, path: str, *, limit: int | None = None, keep: bool = True) -> str | None:
        data = self.read_bytes(path, limit=limit, keep=keep)
        return None if data is None else data.decode("utf-8", "replace")

    def keep(self, path: str, data: bytes) -> None:
        """Replace what a capture keeps of ``path`` (an environment file filtered to the listed variables)."""
        self.read[path] = data

    def forget(self, path: str) -> None:
        """Keep nothing of ``path`` for ``--collect`` (it was read, it is not the machine's GPU facts)."""
        self.read.pop(path, None)

    def stat(self, path: str) -> dict | None:
        """mode (octal text), uid, gid and kind of ``path``; from the capture's manifest when the tree has one."""
        if path in self._captured.get("stat", {}):
            info = self._captured["stat"][path]
        else:
            found = self._walk(path)
            if found is None:
                return None
            st = found[1]
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
        data = self.read_bytes(f"/{MANIFEST}/stat.json", limit=MANIFEST_LIMIT + 1, keep=False)
        if data is None:
            return {}
        if len(data) > MANIFEST_LIMIT:
            self.note(f"{MANIFEST}/stat.json: larger than {MANIFEST_LIMIT >> 20} MiB; not read")
            return {}
        try:
            raw = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):
            self.note(f"{MANIFEST}/stat.json: not JSON; not read")
            return {}
        manifest, dropped = check_manifest(raw)
        if dropped:
            self.note(f"{MANIFEST}/stat.json: {dropped} field(s) of the wrong shape ignored")
        return manifest

    def regular_file(self, path: str) -> str | None:
        """The real path of ``path`` when it is a regular file inside the root (links resolved inside it), else None:
        a file handed to another reader (a Windows tree's server.log to diagnose)."""
        real = self._walk(path)
        return real[0] if real is not None and statmod.S_ISREG(real[1].st_mode) else None

    def captured_logs(self) -> list[str]:
        """The logs a capture carries (``doctor --collect`` with ``--log``), as real paths of this folder: regular
        files inside the root only."""
        out = []
        for name in self._captured.get("logs", []):
            real = self._walk(f"/{MANIFEST}/logs/{name}")
            if real is not None and statmod.S_ISREG(real[1].st_mode):
                out.append(real[0])
            else:
                self.note(f"{MANIFEST}/logs/{name}: not a regular file in the capture; not read")
        return out

    def manifest(self) -> dict:
        return {"stat": self.stats, "probes": self.probes, "user": self.invoking_user()}


def _kind(mode: int) -> str:
    for test, name in (
        (statmod.S_ISFIFO, "a FIFO"),
        (statmod.S_ISCHR, "a character device"),
        (statmod.S_ISBLK, "a block device"),
        (statmod.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _id(value: object) -> bool:
    return type(value) is int and 0 <= value < 1 << 32


def check_manifest(raw: object) -> tuple[dict, int]:
    """The fields of a capture's stat.json that have the shape ``doctor --collect`` writes, and how many were
    dropped: ``stat`` {machine path: {mode "0660", uid, gid, kind}}, ``probes`` {name: text}, ``user`` (a user
    name), ``logs`` [file names]."""
    if not isinstance(raw, dict):
        return {}, 1
    out: dict = {}
    dropped = 0
    stats = raw.get("stat", {})
    if isinstance(stats, dict):
        good = {}
        for path, info in list(stats.items())[:GLOB_CAP]:
            if (
                isinstance(path, str)
                and path.startswith("/")
                and "\0" not in path
                and len(path) < 4096
                and isinstance(info, dict)
                and isinstance(info.get("mode"), str)
                and _MODE.fullmatch(info["mode"])
                and _id(info.get("uid"))
                and _id(info.get("gid"))
                and info.get("kind") in KINDS
            ):
                good[path] = {
                    "mode": f"{int(info['mode'], 8):04o}",
                    "uid": info["uid"],
                    "gid": info["gid"],
                    "kind": info["kind"],
                }
            else:
                dropped += 1
        dropped += max(0, len(stats) - GLOB_CAP)
        out["stat"] = good
    else:
        dropped += 1
    probes = raw.get("probes", {})
    if isinstance(probes, dict):
        out["probes"] = {k: v[:4000] for k, v in list(probes.items())[:64] if isinstance(k, str) and isinstance(v, str)}
        dropped += len(probes) - len(out["probes"])
    else:
        dropped += 1
    user = raw.get("user")
    if isinstance(user, str) and _NAME.fullmatch(user):
        out["user"] = user
    elif user is not None:
        dropped += 1
    logs = raw.get("logs", [])
    if isinstance(logs, list):
        out["logs"] = [n for n in logs[:64] if isinstance(n, str) and _NAME.fullmatch(n) and n[:1] != "."]
        dropped += len(logs) - len(out["logs"])
    else:
        dropped += 1
    return out, dropped


CODE_FILES = 20000
MAX_DEPTH = 16  # folders below a GPU-code path (a bundled rocBLAS is one level)  # files of the GPU-code folders handed to the artifacts scanner


def gpu_code(fs: RootFS, paths: list[str], *, cap: int = CODE_FILES) -> list[Path]:
    """The real paths of :func:`gpu_code_pairs`."""
    return [real for _, real in gpu_code_pairs(fs, paths, cap=cap)]


def gpu_code_pairs(fs: RootFS, paths: list[str], *, cap: int = CODE_FILES) -> list[tuple[str, Path]]:
    """(machine path, real path) of the regular files under ``paths`` (files or folders of the machine), as real paths inside the root, for the
    artifacts scanner: folders walked here (iteratively, links resolved inside the root, each folder once), so the
    scanner, which follows links, is only handed files; at most ``cap`` files (a note says when there were more)."""
    out: list[tuple[str, Path]] = []
    seen: set[str] = set()
    stack: list[tuple[str, int, str | None]] = [(p, 0, None) for p in reversed(paths)]
    while stack:
        path, depth, parent = stack.pop()
        found = None
        if parent is not None:  # an entry of a folder already resolved: one lstat unless it is a link
            try:
                st = os.lstat(os.path.join(parent, path.rsplit("/", 1)[-1]))
            except OSError:
                continue
            if not statmod.S_ISLNK(st.st_mode):
                found = os.path.join(parent, path.rsplit("/", 1)[-1]), st
        if found is None:
            found = fs._walk(path)
        if found is None:
            continue
        real, st = found
        if statmod.S_ISREG(st.st_mode):
            if real not in seen:
                seen.add(real)
                out.append((path, Path(real)))
                if len(out) >= cap:
                    fs.note(f"the GPU-code folders hold more than {cap} files; only {cap} were scanned")
                    break
        elif statmod.S_ISDIR(st.st_mode) and real not in seen:
            seen.add(real)
            if depth >= MAX_DEPTH:
                fs.note(f"{path}: more than {MAX_DEPTH} folders deep; not scanned further")
                continue
            stack.extend(reversed([(f"{path.rstrip('/')}/{n}", depth + 1, real) for n in fs.listdir(path)]))
    return out
