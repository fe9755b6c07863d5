"""The one way gfxgate writes a file it was asked to write (``-o``, pins, snapshot, samples, caches), and the
one way it opens an input file a user named (:func:`open_input`: a regular file, or one clear line).

Rules, decided by what is at the named path (``lstat``, then ``stat`` for a link):

* **nothing there, or a regular file**: the text goes to a *unique* temporary file created exclusively
  (``tempfile.mkstemp``: ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600) in the same folder, is fsynced and
  renamed over the target; an existing file keeps its mode (and owner when we may). A reader sees the
  old file or the new one, never half of one, and a planted ``.NAME.tmp`` (even a symlink) is never used.
* **a character device or a FIFO** (``/dev/null``, ``/dev/tty``, a named pipe with a reader): written in
  place, never replaced. A FIFO without a reader is refused instead of hanging.
* **``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``**: the already-open descriptor.
* **a symbolic link**: resolved deliberately — the file it points to is written by the rules above and
  the link itself stays a link.
* **a folder, a block device, a socket, a missing parent folder**: refused with one clear line
  (:class:`OutputError`, exit code 2), nothing written.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
import sys

from gfxgate.errors import InputError, UsageError
from gfxgate.lazyre import lazy_compile

_STD_FD = lazy_compile(r"^/(?:dev/(?:fd/(?P<fd>\d+)|(?P<std>stdout|stderr))|proc/self/fd/(?P<pfd>\d+))$")


class OutputError(UsageError):
    """A file gfxgate was asked to write cannot be written (missing folder, not a file, disk full...)."""


def write_text_atomic(path: str | os.PathLike, text: str, *, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` by the rules of this module; returns the path actually written."""
    return write_bytes_atomic(path, text.encode(encoding))


def write_bytes_atomic(path: str | os.PathLike, data) -> Path:
    """Write ``data`` (bytes, or a seekable binary file, copied in chunks) to ``path`` by the rules of this module;
    returns the path actually written."""
    path = Path(path)
    special = _STD_FD.match(os.path.abspath(path))
    if special:
        fd = int(special["fd"] or special["pfd"] or (1 if special["std"] == "stdout" else 2))
        _write_fd(path, fd, data)
        return path
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        try:
            followed = os.stat(path)
        except FileNotFoundError:
            followed = None  # a dangling link: create the file it names
        except OSError as exc:
            raise OutputError(f"{path}: cannot write through the symbolic link: {exc.strerror}") from None
        if followed is not None and not stat.S_ISREG(followed.st_mode):
            _write_special(path, followed, data)
            return path
        resolved = Path(os.path.realpath(path))
        return write_bytes_atomic(resolved, data) if not _is_link(resolved) else _refuse_loop(path)
    if st is not None and not stat.S_ISREG(st.st_mode):
        _write_special(path, st, data)
        return path
    _replace_regular(path, st, data)
    return path


def open_input(path: str | os.PathLike, what: str = ""):
    """Open a file the user named as an input (a log, a worklog, a report, a prompt) for binary reading.

    Only a regular file is read: a folder, FIFO, socket or device is an :class:`InputError` (exit 6) naming
    what it is — a FIFO without writer would block forever, ``/dev/zero`` never ends, opening some devices has
    side effects — so the path is checked before it is opened, and the opened descriptor again (``O_NONBLOCK``:
    a FIFO swapped in meanwhile cannot block the open). ``what`` prefixes the message (``"--server-log x="``).
    Other failures (missing file, permission) are the ``OSError`` of the open, for the caller to word.
    """
    path = Path(path)
    _refuse_not_regular(path, os.stat(path), what)
    fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _refuse_not_regular(path, os.fstat(fd), what)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: str | os.PathLike, what: str = "", *, limit: int) -> bytes:
    """The bytes of an input file opened by :func:`open_input`; more than ``limit`` bytes is an InputError."""
    with open_input(path, what) as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{what}{path}: larger than {limit // (1 << 20)} MiB; gfxgate reads at most that")
    return data


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages: "a folder", "a FIFO", …"""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _refuse_not_regular(path: Path, st: os.stat_result, what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what}{path}: is {file_kind(st.st_mode)}, not a regular file")


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def _refuse_loop(path: Path) -> Path:
    raise OutputError(f"{path}: the symbolic link cannot be resolved (a loop?); name a file instead")


def _write_fd(path: Path, fd: int, data) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()  # what was printed before comes before the report
        except (OSError, ValueError, AttributeError):
            pass
    try:
        _write_all(fd, data)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None


def _write_all(fd: int, data) -> None:
    """``data``: bytes, or a binary file (a spooled archive: ``doctor --collect``) copied from its start in chunks."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        data.seek(0)
        while chunk := data.read(1 << 20):
            _write_all(fd, chunk)
        return
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_special(path: Path, st: os.stat_result, data) -> None:
    """A device or FIFO: write in place; a folder, block device or socket: refuse."""
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"{path}: is a folder; name a file to write")
    if stat.S_ISBLK(mode) or stat.S_ISSOCK(mode):
        kind = "a block device" if stat.S_ISBLK(mode) else "a socket"
        raise OutputError(f"{path}: is {kind}; gfxgate writes only files, character devices and FIFOs")
    flags = os.O_WRONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    if stat.S_ISFIFO(mode):
        flags |= os.O_NONBLOCK  # ENXIO instead of waiting forever for a reader
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise OutputError(f"{path}: is a FIFO with no reader; start the reader first") from None
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        if stat.S_ISFIFO(mode):
            os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None
    finally:
        os.close(fd)


def _replace_regular(path: Path, st: os.stat_result | None, data) -> None:
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"{path}: the folder {folder} does not exist", hint="create it first, or name another file")
    try:
        import tempfile  # here: only a write needs it (with shutil, a start-up cost for every read)

        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise OutputError(f"{path}: cannot create a file in {folder}: {exc.strerror}") from None
    try:
        try:
            _write_all(fd, data)
            os.fchmod(fd, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
            if st is not None:
                try:
                    os.fchown(fd, st.st_uid, st.st_gid)
                except OSError:
                    pass  # not ours to give away: the new file stays ours, with the old mode
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as exc:
        _unlink_quietly(tmp)
        raise OutputError(f"{path}: cannot write: {exc.strerror}") from None
    except BaseException:
        _unlink_quietly(tmp)
        raise
    _fsync_folder(folder)


def _unlink_quietly(name: str) -> None:
    try:
        os.unlink(name)
    except OSError:
        pass


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current
