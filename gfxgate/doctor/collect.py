"""``doctor --collect OUT.tar.gz``: exactly what doctor read, so ``doctor --root`` replays it on another machine.

An allow-list writer (issue 41): what doctor kept of each file is already reduced by its reader (gfxgate/host:
unit files and environment files keep only the listed ``NAME=VALUE`` GPU assignments per logical line, every other
line a ``#`` so each ``file:line`` stays right; a server's ``cmdline`` is its program name and ``serve``; of
/etc/passwd only the users looked up), the GPU code files the artifacts scanner read (regular files inside the
root, each up to :data:`MAX_BINARY`, all together up to :data:`BUDGET`; a file over either is an empty member
listed in the manifest's ``omitted``, so its name still replays), the logs given with ``--log`` (regular files, up
to :data:`MAX_BINARY` each), and ``.gfxgate-doctor/stat.json``: device modes and groups, the probes' output, the
invoking user. Never a model, never another variable.

The archive is streamed into an unnamed temporary file (``O_TMPFILE``: nothing visible) and copied to ``OUT``
through gfxgate.fsio, so memory stays small whatever the machine holds. Member names are machine paths without
``..``; a name that is not one is left out.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import tarfile
import tempfile
from pathlib import Path

from gfxgate.host.rootfs import MANIFEST, gpu_code_pairs
from gfxgate.errors import UsageError
from gfxgate.fsio import write_bytes_atomic

MAX_BINARY = 16 << 20  # one file
BUDGET = 64 << 20  # all GPU code files and logs together
_SAFE = re.compile(r"[^A-Za-z0-9._+-]")


def member(path: str) -> str | None:
    """A machine path as an archive member name (``usr/lib/…``), or None when it is not a plain absolute path."""
    parts = path.split("/")
    if not path.startswith("/") or any(p in ("", ".", "..") for p in parts[1:]) or "\0" in path or len(path) > 4000:
        return None
    return path.lstrip("/")


def _add(tar: tarfile.TarFile, name: str | None, data: bytes | None = None, *, handle=None, size: int = 0) -> bool:
    if name is None:
        return False
    info = tarfile.TarInfo(name)
    info.size = len(data) if data is not None else size
    info.mode, info.mtime = 0o644, 0
    tar.addfile(info, io.BytesIO(data) if data is not None else handle)
    return True


def _open_regular(path: str):
    """(handle, size) of a regular file opened without following a final link and without blocking, or None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb"), st.st_size


class _Cut(io.RawIOBase):
    """At most ``size`` bytes of ``handle``, then zeros if the file shrank meanwhile (the header said ``size``)."""

    def __init__(self, handle, size: int) -> None:
        self.handle, self.left = handle, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        want = min(len(buffer), self.left)
        if want <= 0:
            return 0
        data = self.handle.read(want) or b"\0" * want
        buffer[: len(data)] = data
        self.left -= len(data)
        return len(data)


def check_paths(collect: Path | None, output: str | None, root: Path, logs: tuple[str, ...]) -> None:
    """--collect and -o name two different files, neither one of the inputs (a --log, a file of a captured
    --root), and --collect is not the standard output the report goes to."""

    def ident(path) -> tuple[int, int] | None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        return st.st_dev, st.st_ino

    def stdout_ident() -> tuple[int, int] | None:
        try:
            st = os.fstat(1)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    to_stdout = output in (None, "-")
    named = {"--collect": collect, "-o": None if to_stdout else output}
    for flag, value in named.items():
        if value is None:
            continue
        if str(value) == "-" and flag == "--collect":
            raise UsageError(
                "--collect -: the archive is binary; name a file", hint="the report goes to standard output"
            )
        real = Path(os.path.abspath(value))
        if str(root) != "/" and os.path.realpath(real).startswith(os.path.realpath(root).rstrip("/") + "/"):
            raise UsageError(f"{flag} {value}: inside the captured --root {root}; name a file outside it")
        for log in logs:
            if log != "-" and (
                os.path.abspath(log) == str(real) or (ident(log) is not None and ident(log) == ident(real))
            ):
                raise UsageError(f"{flag} {value}: is the --log {log}; name another file")
    if collect is not None:
        if not to_stdout and (
            os.path.abspath(collect) == os.path.abspath(str(output))
            or (ident(collect) is not None and ident(collect) == ident(str(output)))
        ):
            raise UsageError(f"--collect {collect} and -o {output} name the same file; name two files")
        if to_stdout and ident(collect) is not None and ident(collect) == stdout_ident():
            raise UsageError(f"--collect {collect}: is the standard output the report goes to; name a file")


def write(out: Path, report, fs) -> int:
    manifest = fs.manifest()
    omitted: list[str] = []
    count = 0
    spent = 0
    try:
        spool = tempfile.TemporaryFile()
    except OSError as exc:
        raise UsageError(f"--collect {out}: no temporary file: {exc.strerror or exc}") from None
    with spool:
        try:
            with tarfile.open(fileobj=spool, mode="w:gz", compresslevel=6, format=tarfile.PAX_FORMAT) as tar:
                names: set[str] = set()
                for path, data in fs.read.items():
                    if _add(tar, member(path), data):
                        names.add(path)
                        count += 1
                for path, real in gpu_code_pairs(fs, report.installs.gpu_code_files()):
                    name = member(path)
                    if name is None or path in names:
                        continue
                    opened = _open_regular(str(real))
                    if opened is None:
                        continue
                    handle, size = opened
                    with handle:
                        if size > MAX_BINARY or spent + size > BUDGET:
                            omitted.append(path)
                            _add(tar, name, b"")
                        else:
                            _add(tar, name, handle=_Cut(handle, size), size=size)
                            spent += size
                    names.add(path)
                    count += 1
                for path in [i.binary for i in report.installs.ollama if i.binary] + list(report.installs.llama_server):
                    if path not in names and _add(tar, member(path), b""):  # where it is installed, never the program
                        names.add(path)
                for folder in [r.path for i in report.installs.ollama for r in i.runners]:
                    for entry in fs.listdir(folder):
                        rel = f"{folder}/{entry}"
                        if (
                            entry.startswith("libggml")
                            and rel not in names
                            and not fs.is_dir(rel)
                            and _add(tar, member(rel), b"")
                        ):
                            names.add(rel)
                manifest["logs"] = []
                for n, log in enumerate(p for p in report.logs if p != "-"):
                    opened = _open_regular(os.path.realpath(log))
                    if opened is None:
                        continue
                    handle, size = opened
                    name = f"{n}-{_SAFE.sub('_', Path(log).name)[:100].lstrip('.') or 'log'}"
                    size = min(size, MAX_BINARY, max(0, BUDGET - spent))
                    with handle:  # read as diagnose read it (the same bound); only the log, never a model
                        _add(tar, f"{MANIFEST}/logs/{name}", handle=_Cut(handle, size), size=size)
                    spent += size
                    manifest["logs"].append(name)
                    count += 1
                manifest["omitted"] = omitted
                _add(tar, f"{MANIFEST}/stat.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
        except OSError as exc:
            raise UsageError(f"--collect {out}: {exc.strerror or exc}") from None
        write_bytes_atomic(out, spool)
    return count + 1
