"""Every process gfxgate starts: :func:`run_bounded` for a command that answers and ends, :func:`spawn` for a
server that lives a while. One policy for both:

* **No shell.** An argument list, executed as it is.
* **Its own process group** (a new session), and that whole group is killed with SIGKILL when gfxgate is done
  with the command: after it ended normally (a helper it forked, which PR_SET_PDEATHSIG does not reach, must not
  outlive it), at a timeout, at the output budget, or when gfxgate itself is interrupted. The leader's exit is
  seen without reaping it (``waitid(WNOWAIT)``) until the group is killed, so the group's id (the leader's pid)
  cannot be reused by an unrelated process meanwhile.
* **One timeout**, wall clock, for the whole exchange: writing stdin, reading the output and the exit.
* **One output budget**: at most ``max_output`` bytes of each stream are read; a command writing more is killed
  there (:attr:`Result.over_budget`), so its memory and time stay bounded however much it prints.
"""

from __future__ import annotations

import errno
import os
import select
import selectors
import signal
import subprocess
import threading
import time
from typing import IO, Any, Mapping, Sequence

from gfxgate.records import dataclass

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
STDOUT = subprocess.STDOUT
READ_CHUNK = 1 << 16
_PIPE_BUF = getattr(select, "PIPE_BUF", 512)


@dataclass(frozen=True)
class Result:
    """What a bounded command did. ``returncode`` is the leader's (negative: the signal that ended it, -9 when
    the timeout or the budget killed it); ``stdout``/``stderr`` the bytes read (``b""`` for a stream not piped)."""

    args: list[str]
    returncode: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    over_budget: bool = False


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when gfxgate dies (even by SIGKILL), so no server outlives its sweep.

    Linux ``prctl(PR_SET_PDEATHSIG)``; it survives the exec of ``env …`` and wrappers, but not a fork: a helper the
    command forks is reached through the process group instead (:meth:`Process.close`). Elsewhere a no-op.
    SIGKILL, not SIGTERM: on SIGTERM llama-server first cancels its in-flight request, which waits for the HTTP
    handler to notice its client is gone; with the sweep dead there is nobody left to escalate, and a CI run saw
    a server still running 10 s after its sweep was killed mid-generation. A server whose sweep is gone has
    nothing left to finish for anyone.
    """
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):
        pass


class Process:
    """A started command in its own process group. Use it as a context manager (or call :meth:`close`): the
    group is killed and the leader reaped at the end, whatever happened."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        stdin: Any = DEVNULL,
        stdout: Any = DEVNULL,
        stderr: Any = DEVNULL,
        env: Mapping[str, str] | None = None,
        cwd: Any = None,
        die_with_parent: bool = False,
    ) -> None:
        self.args = [os.fspath(a) for a in argv]
        # OSError (FileNotFoundError, PermissionError …) from here: the command did not start; the caller words it
        self._popen = subprocess.Popen(
            self.args,
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            env=None if env is None else dict(env),
            cwd=cwd,
            start_new_session=True,
            preexec_fn=_die_with_parent if die_with_parent else None,
        )
        self.pid = self._popen.pid
        self.stdin: IO[bytes] | None = self._popen.stdin
        self.stdout: IO[bytes] | None = self._popen.stdout
        self.stderr: IO[bytes] | None = self._popen.stderr
        self._status: int | None = None
        self._closed = False
        self._pidfd = -1
        if hasattr(os, "pidfd_open"):
            try:
                self._pidfd = os.pidfd_open(self.pid)
            except OSError:
                self._pidfd = -1

    # -- the leader's exit, seen without reaping it ---------------------------------------------------------
    def poll(self) -> int | None:
        """The leader's exit status once it ended (negative: killed by that signal), else None. Not reaped yet."""
        if self._status is None and not self._closed:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
                rc = self._popen.poll()  # reaped elsewhere (it should not be): take what Popen knows
                if rc is not None:
                    self._status = rc
            if info is not None and info.si_pid:
                self._status = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        return self._status if self._status is not None else self._popen.returncode

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait up to ``timeout`` seconds (None: as long as it takes) for the leader to end; its status, or None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.0005
        while True:
            rc = self.poll()
            if rc is not None:
                return rc
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            if self._pidfd >= 0:
                select.select([self._pidfd], [], [], left)
            else:
                time.sleep(pause if left is None else min(pause, left))
                pause = min(pause * 2, 0.05)

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the whole group; False when nothing of it is left."""
        if self._closed:
            return False
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    def stop(self, grace: float, *, resume: bool = False) -> tuple[int, bool]:
        """Ask the group to end (SIGTERM, and SIGCONT when ``resume``: a stopped process must run to act on it),
        SIGKILL after ``grace`` seconds; then :meth:`close`. Returns (the leader's status, whether SIGKILL was
        needed for the leader)."""
        try:
            self.signal_group(signal.SIGTERM)
            if resume:
                self.signal_group(signal.SIGCONT)
            killed = self.wait(grace) is None
        finally:  # also when a second Ctrl-C lands while it waits
            rc = self.close()
        return rc, killed

    def close(self) -> int:
        """Kill what is left of the group (SIGKILL), reap the leader, close the pipes; the leader's status."""
        if not self._closed:
            try:
                os.killpg(self.pid, signal.SIGKILL)  # the leader is unreaped: its pid is still the group's id
            except (ProcessLookupError, PermissionError):
                pass
            self._closed = True
            rc = self._popen.wait()
            self._status = rc if self._status is None else self._status
            if self._pidfd >= 0:
                os.close(self._pidfd)
                self._pidfd = -1
            for stream in (self.stdin, self.stdout, self.stderr):  # not a stream handed to a LogPump
                if stream is not None:
                    try:
                        stream.close()
                    except OSError:
                        pass
        return self._status if self._status is not None else self._popen.returncode

    def pump_output(self, sink: IO[bytes], **caps: int) -> LogPump:
        """Hand stdout to a started :class:`LogPump` writing into ``sink``; the pump owns both from now on (it
        closes them once the pipe ends), so closing this process loses none of the output still in the pipe."""
        stream, self.stdout = self.stdout, None
        assert stream is not None, "stdout is not a pipe"
        pump = LogPump(stream, sink, **caps)
        pump.start()
        return pump

    def __enter__(self) -> Process:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- a bounded exchange ---------------------------------------------------------------------------------
    def communicate(
        self, data: bytes | None, timeout: float, max_output: int | None
    ) -> tuple[bytes, bytes, bool, bool]:
        """Write ``data`` to stdin, read stdout and stderr until both end and the leader exited, within
        ``timeout`` seconds and ``max_output`` bytes per stream: (stdout, stderr, timed out, over budget)."""
        deadline = time.monotonic() + timeout
        chunks: dict[int, list[bytes]] = {}
        sizes: dict[int, int] = {}
        timed_out = over = False
        with selectors.DefaultSelector() as sel:
            for stream in (self.stdout, self.stderr):
                if stream is not None:
                    sel.register(stream.fileno(), selectors.EVENT_READ)
                    chunks[stream.fileno()], sizes[stream.fileno()] = [], 0
            view = memoryview(data or b"")
            if self.stdin is not None:
                if data:
                    sel.register(self.stdin.fileno(), selectors.EVENT_WRITE)
                else:
                    self._close_stdin()
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                for key, _ in sel.select(left):
                    fd = key.fd
                    if fd in chunks:
                        block = os.read(fd, READ_CHUNK)
                        if not block:
                            sel.unregister(fd)
                            continue
                        if max_output is not None and sizes[fd] + len(block) > max_output:
                            block = block[: max_output - sizes[fd]]
                            over = True
                        chunks[fd].append(block)
                        sizes[fd] += len(block)
                    else:
                        try:
                            view = view[os.write(fd, view[:_PIPE_BUF]) :]
                        except BrokenPipeError:
                            view = view[:0]
                        if not view:
                            sel.unregister(fd)
                            self._close_stdin()
                if over:
                    break
        if not (timed_out or over) and self.wait(max(0.0, deadline - time.monotonic())) is None:
            timed_out = True
        outs = [b"".join(chunks.get(s.fileno(), [])) if s is not None else b"" for s in (self.stdout, self.stderr)]
        return outs[0], outs[1], timed_out, over

    def _close_stdin(self) -> None:
        if self.stdin is not None:
            try:
                self.stdin.close()
            except OSError as exc:
                if exc.errno != errno.EPIPE:
                    raise


def spawn(
    argv: Sequence[str],
    *,
    stdin: Any = DEVNULL,
    stdout: Any = DEVNULL,
    stderr: Any = DEVNULL,
    env: Mapping[str, str] | None = None,
    cwd: Any = None,
    die_with_parent: bool = True,
) -> Process:
    """Start a long-lived command (a server) in its own process group; killed with gfxgate by default
    (``die_with_parent``). Raises OSError when it cannot start. Stop it with :meth:`Process.stop` or
    :meth:`Process.close` (always, in a ``finally`` or a ``with``)."""
    return Process(argv, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd, die_with_parent=die_with_parent)


def run_bounded(
    argv: Sequence[str],
    *,
    timeout: float,
    input: bytes | None = None,
    max_output: int | None,
    merge_stderr: bool = False,
    capture_stderr: bool = True,
    env: Mapping[str, str] | None = None,
    cwd: Any = None,
    die_with_parent: bool = False,
) -> Result:
    """Run a command that answers and ends: ``timeout`` seconds and ``max_output`` bytes per stream at most
    (None: unlimited), its process group killed at the end. ``merge_stderr``: stderr into stdout;
    ``capture_stderr=False``: stderr discarded. Raises OSError when it cannot start."""
    stderr = STDOUT if merge_stderr else PIPE if capture_stderr else DEVNULL
    with Process(
        argv,
        stdin=PIPE if input is not None else DEVNULL,
        stdout=PIPE,
        stderr=stderr,
        env=env,
        cwd=cwd,
        die_with_parent=die_with_parent,
    ) as proc:
        out, err, timed_out, over = proc.communicate(input, timeout, max_output)
        rc = proc.close()
    return Result(proc.args, rc, out, err, timed_out, over)


class LogPump(threading.Thread):
    """Copies a process's output pipe into a log file, bounded: the first ``head_lines`` lines (``head_bytes`` at
    most), then only the newest ``tail_lines`` lines (``tail_bytes`` at most), written at the end after one line
    saying how much was left out between them; every line cut to ``max_line`` bytes. The pipe is always drained
    (a server must never block on a full pipe), whatever the file can take: a write error (a full disk) stops
    the writing and is kept in :attr:`error`. Memory: one read chunk plus twice the tail. It owns the pipe and
    the file and closes both when the pipe ends (when every process holding its write end is gone), so a
    caller waits for it with ``join`` and never closes either under it."""

    def __init__(
        self,
        stream: IO[bytes],
        sink: IO[bytes],
        *,
        max_line: int,
        head_lines: int,
        head_bytes: int,
        tail_lines: int,
        tail_bytes: int,
    ) -> None:
        super().__init__(daemon=True, name="gfxgate-log-pump")
        self._stream, self._sink = stream, sink
        self.max_line, self.head_lines, self.head_bytes = max_line, head_lines, head_bytes
        self.tail_lines, self.tail_bytes = tail_lines, tail_bytes
        self.error = ""
        self.dropped_lines = 0
        self.dropped_bytes = 0
        self.cut_lines = 0
        self._written = self._lines = 0

    def run(self) -> None:
        try:
            self._copy()
        finally:
            for handle in (self._stream, self._sink):
                try:
                    handle.close()
                except OSError as exc:  # the sink's last flush on a full disk
                    self.error = self.error or (exc.strerror or str(exc))

    def _copy(self) -> None:
        fd = self._stream.fileno()
        line = bytearray()  # the head's current line (at most max_line bytes kept)
        over = 0  # bytes cut from it
        tail = bytearray()
        in_head = True
        while True:
            try:
                block = os.read(fd, READ_CHUNK)
            except OSError:
                block = b""
            if not block:
                break
            if not in_head:
                self._to_tail(tail, block)
                continue
            start = 0
            while start < len(block):
                end = block.find(b"\n", start)
                piece = block[start:] if end < 0 else block[start:end]
                room = self.max_line - len(line)
                if len(piece) > room:
                    line += piece[: max(room, 0)]
                    over += len(piece) - max(room, 0)
                else:
                    line += piece
                if end < 0:
                    break
                self._write(self._cap(bytes(line), over) + b"\n")
                self._lines += 1
                line.clear()
                over = 0
                start = end + 1
                if self._lines >= self.head_lines or self._written >= self.head_bytes:
                    in_head = False
                    self._to_tail(tail, block[start:])
                    break
        if in_head:
            if line or over:
                self._write(self._cap(bytes(line), over))  # the last line, without its newline as the server left it
        else:
            self._finish(tail)

    def _to_tail(self, tail: bytearray, block: bytes) -> None:
        tail += block
        if len(tail) > 2 * self.tail_bytes:
            cut = len(tail) - self.tail_bytes
            self.dropped_lines += tail.count(b"\n", 0, cut)
            self.dropped_bytes += cut
            del tail[:cut]

    def _finish(self, tail: bytearray) -> None:
        lines = bytes(tail).split(b"\n")
        last = lines.pop()  # b"" after a final newline, else a line the server did not end
        if self.dropped_bytes and lines:  # the first line kept was cut at its start: drop what is left of it
            self.dropped_bytes += len(lines[0]) + 1
            self.dropped_lines += 1
            lines.pop(0)
        if len(lines) > self.tail_lines:
            extra = lines[: len(lines) - self.tail_lines]
            self.dropped_lines += len(extra)
            self.dropped_bytes += sum(len(x) + 1 for x in extra)
            lines = lines[len(lines) - self.tail_lines :]
        if self.dropped_lines or self.dropped_bytes:
            self._write(
                f"[gfxgate: {self.dropped_lines} lines ({self.dropped_bytes} bytes) of the server's output "
                "left out here]\n".encode()
            )
        for one in lines:
            self._write(self._cap(one, 0) + b"\n")
        if last:
            self._write(self._cap(last, 0))

    def _cap(self, line: bytes, over: int) -> bytes:
        if len(line) > self.max_line:
            over += len(line) - self.max_line
            line = line[: self.max_line]
        if not over:
            return line
        self.cut_lines += 1
        return line + f" [gfxgate: {over} more bytes of this line left out]".encode()

    def _write(self, data: bytes) -> None:
        self._written += len(data)
        if self.error:
            return
        try:
            view = memoryview(data)
            while view:  # unbuffered: the file shows each line as the server writes it (people tail it)
                view = view[os.write(self._sink.fileno(), view) :]
        except OSError as exc:
            self.error = exc.strerror or str(exc)
