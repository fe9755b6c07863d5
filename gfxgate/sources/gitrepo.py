"""The one git layer: every git command gfxgate runs goes through :func:`run_git` or :class:`CatFileBatch`.

Git sources are partial clones in the cache (``--filter=blob:none``), tags fetched on demand, blobs
read from the object database. No checkout and no work tree: files at a tag are read through one
persistent ``git cat-file --batch`` process per repository. Clones go to a temporary folder first
and are renamed into place when complete, so an interrupted clone never leaves a half-written cache.

gfxgate drives the git command line itself (no GitPython): partial clones, ``cat-file --batch``,
``rev-list --missing=print`` and the offline transport guard are command-line features, and one
runner gives every call the same environment, timeout (``GFXGATE_GIT_TIMEOUT``, exit 5 when it
expires) and error mapping (:class:`NetworkError` for an unreachable remote, else :class:`SourceError`).
"""

from __future__ import annotations

import contextlib
import hashlib
import locale
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import IO, Any, NamedTuple
import fcntl

from gfxgate.errors import NetworkError, SourceError, UsageError
from gfxgate.host import proc
from gfxgate.records import dataclass
from gfxgate.resources import cache_dir
from gfxgate.sources.base import MAX_BLOB_BYTES, FileHit, Source, blob_too_large
from gfxgate.sources.versions import is_prerelease, nearest_tags, sort_tags

DEFAULT_GIT_TIMEOUT = 600
MAX_GIT_TIMEOUT = 86400  # a day; far larger values overflow the poll timeout of a selector
_OFFLINE_ENV = {"GIT_ALLOW_PROTOCOL": "gfxgate-offline"}  # forbids every transport: no lazy fetches
_BASE_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true", "GCM_INTERACTIVE": "never"}
# gfxgate only reads a user's repository (no hooks, no checkout), so its owner does not matter.
_READ_ENV = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory", "GIT_CONFIG_VALUE_0": "*"}


def cache_root() -> Path:
    return cache_dir()


def is_git_dir(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir()


def local_git_dir(path: Path) -> Path | None:
    """The git directory of a local repository path (bare or with a work tree), else None."""
    if is_git_dir(path):
        return path
    if is_git_dir(path / ".git"):
        return path / ".git"
    return None


def git_timeout() -> int:
    """``GFXGATE_GIT_TIMEOUT`` in whole seconds (unset or empty: 600); any other value is a usage error (exit 2)."""
    value = os.environ.get("GFXGATE_GIT_TIMEOUT", "").strip()
    if not value:
        return DEFAULT_GIT_TIMEOUT
    seconds = int(value) if value.isascii() and value.isdigit() else 0
    if not 1 <= seconds <= MAX_GIT_TIMEOUT:
        raise UsageError(
            f"GFXGATE_GIT_TIMEOUT={value!r}: not a whole number of seconds from 1 to {MAX_GIT_TIMEOUT}",
            hint=f"unset it for the default ({DEFAULT_GIT_TIMEOUT} s), or e.g. GFXGATE_GIT_TIMEOUT=1200",
        )
    return seconds


def _git_env(offline: bool) -> dict[str, str]:
    return {**os.environ, **_BASE_ENV, **_READ_ENV, **(_OFFLINE_ENV if offline else {})}


def run_git(
    args: list[str],
    *,
    git_dir: Path | None = None,
    cwd: Path | None = None,
    offline: bool = False,
    timeout: int | None = None,
    stdin: str | None = None,
    text: bool = True,
) -> GitResult:
    """Run ``git ARGS`` (never through a shell); a timeout is a :class:`NetworkError`, a missing git a :class:`SourceError`.

    The command runs in its own process group (``host.proc``), killed when it ends or times out, so the helpers
    git started (``git-remote-https``, ``index-pack``) end with it. ``text=False`` returns stdout and stderr as bytes.
    """
    timeout = git_timeout() if timeout is None else timeout
    env = _git_env(offline)
    cmd = ["git"] + (["--git-dir", str(git_dir)] if git_dir else []) + args
    if cwd is not None and not Path(cwd).is_dir():
        raise SourceError(f"{cwd}: no such folder")
    encoding = locale.getpreferredencoding(False)
    try:
        done = proc.run_bounded(
            cmd,
            timeout=timeout,
            input=None if stdin is None else stdin.encode(encoding),
            max_output=None,
            env=env,
            cwd=cwd,
        )
    except FileNotFoundError as exc:
        raise SourceError("git is not installed", hint="install git (Debian: apt-get install git)") from exc
    if done.timed_out:
        raise NetworkError(
            f"git {' '.join(args[:2])} timed out after {timeout} s",
            hint="a slow or unreachable remote? GFXGATE_GIT_TIMEOUT sets the limit in seconds",
        )
    if not text:
        return GitResult(cmd, done.returncode, done.stdout, done.stderr)
    return GitResult(cmd, done.returncode, _text(done.stdout, encoding), _text(done.stderr, encoding))


@dataclass(frozen=True)
class GitResult:
    """A finished git command (the fields of ``subprocess.CompletedProcess``)."""

    args: list[str]
    returncode: int
    stdout: Any
    stderr: Any


def _text(data: bytes, encoding: str) -> str:
    """Bytes as text mode would give them: the locale's encoding, universal newlines."""
    return data.decode(encoding).replace("\r\n", "\n").replace("\r", "\n")


def _last_error(stderr: str) -> str:
    """The most telling line of git's stderr: its last ``fatal:``/``error:`` line, else its last line."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
    return (fatal or lines or [""])[-1]


def _git_failure(name: str, what: str, stderr: str, **kwargs) -> SourceError:
    """The error for a failed git command: :class:`NetworkError` when the remote was unreachable."""
    kind = NetworkError if _is_network_failure(stderr) else SourceError
    return kind(f"{name}: {what}: {_last_error(stderr) or 'git failed'}", **kwargs)


def _clone_into(name: str, url: str, dest: Path) -> None:
    """A bare partial clone (commits and trees, no blobs) of ``url`` into the empty folder ``dest``."""
    out = run_git(["clone", "--bare", "--filter=blob:none", "--quiet", "--", url, str(dest)])
    if out.returncode != 0:
        raise _git_failure(
            name, f"cannot clone {url}", out.stderr, hint=f"give --source {name}=CLONE (a local clone with its tags)"
        )


def tag_commits(git_dir: Path) -> dict[str, str]:
    """Every tag of a git directory and the commit it points at (annotated tags peeled), in one git call."""
    out = run_git(
        ["for-each-ref", "refs/tags", "--format=%(refname:strip=2)%00%(objectname)%00%(*objectname)"],
        git_dir=git_dir,
        offline=True,
    )
    if out.returncode != 0:
        raise SourceError(f"{git_dir}: cannot list tags: {_last_error(out.stderr)}")
    commits = {}
    for line in out.stdout.splitlines():
        name, obj, peeled = (line.split("\0") + ["", ""])[:3]
        commits[name] = peeled or obj
    return commits


def work_tree_root(path: Path) -> Path | None:
    """The top folder of the git work tree holding ``path`` (a file or a folder), else None."""
    folder = path if path.is_dir() else path.parent
    if not folder.is_dir():
        return None
    out = run_git(["rev-parse", "--show-toplevel"], cwd=folder)
    top = out.stdout.strip() if out.returncode == 0 else ""
    return Path(top).resolve() if top else None


def _is_network_failure(stderr: str) -> bool:
    return bool(
        re.search(
            r"Could not resolve host|unable to access|Connection refused|Connection timed out|"
            r"does not appear to be a git repository|Could not read from remote|not allowed|"
            r"repository .* not found|No such device or address|Failed to connect",
            stderr,
            re.IGNORECASE,
        )
    )


class _CatFile(NamedTuple):
    """A running ``git cat-file --batch[-check]`` and the two pipes it was started with."""

    process: proc.Process
    stdin: IO[bytes]
    stdout: IO[bytes]


def _cat_file(argv: list[str], env: dict[str, str]) -> _CatFile:
    process = proc.spawn(argv, stdin=proc.PIPE, stdout=proc.PIPE, env=env, die_with_parent=False)
    if process.stdin is None or process.stdout is None:  # both piped: never
        process.close()
        raise OSError(f"{argv[0]} started without its pipes")
    return _CatFile(process, process.stdin, process.stdout)


class CatFileBatch:
    """One persistent ``git cat-file --batch`` process: many blob reads, one process.

    Beside it, one ``git cat-file --batch-check`` process answers each object's type and size first (from the
    object's header: nothing is inflated), so a blob over :data:`MAX_BLOB_BYTES` is never read — neither by
    gfxgate nor by git, which inflates a whole object below ``core.bigFileThreshold`` before writing it out.
    """

    def __init__(self, git_dir: Path, *, offline: bool) -> None:
        self._git_dir, self._offline = git_dir, offline
        self._start()

    def _start(self) -> None:
        self._proc, self._check = (
            _cat_file(["git", "--git-dir", str(self._git_dir), "cat-file", mode], _git_env(self._offline))
            for mode in ("--batch", "--batch-check")
        )

    def _restart(self) -> None:
        for cat in (self._proc, self._check):
            cat.process.close()  # killed with its group, reaped
        self._start()

    def _header(self, cat: _CatFile, spec: str) -> list[bytes]:
        cat.stdin.write(spec.encode() + b"\n")
        cat.stdin.flush()
        header = cat.stdout.readline()
        if not header:  # git exits when a partial clone's blob is missing and may not be fetched
            self._restart()
            hint = "run once without --offline to fetch it" if self._offline else None
            raise SourceError(f"{spec.split(':', 1)[1]} at {spec[:12]} is not in the local object database", hint=hint)
        return header.split()

    def blob_size(self, spec: str) -> int | None:
        """The size of the blob ``<commit>:<path>`` (None: missing, or not a blob), from ``--batch-check``;
        over :data:`MAX_BLOB_BYTES` a :class:`SourceError`."""
        if "\n" in spec:
            return None
        fields = self._header(self._check, spec)
        if len(fields) != 3 or fields[1] != b"blob":  # "<spec> missing" or "<spec> ambiguous", a tree
            return None
        if int(fields[2]) > MAX_BLOB_BYTES:
            raise SourceError(blob_too_large(spec.split(":", 1)[1], int(fields[2]), f" at {spec[:12]}"))
        return int(fields[2])

    def read(self, spec: str) -> bytes | None:
        """Object bytes for ``<commit>:<path>``; None when missing or not a blob. A blob over
        :data:`MAX_BLOB_BYTES` is a :class:`SourceError` (the rule reading it gets an error entry)."""
        if self.blob_size(spec) is None:
            return None
        fields = self._header(self._proc, spec)
        if len(fields) != 3:
            return None
        size = int(fields[2])
        if size > MAX_BLOB_BYTES:  # the same object as checked: never; but never read an oversized one
            self._restart()
            raise SourceError(blob_too_large(spec.split(":", 1)[1], size, f" at {spec[:12]}"))
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)  # the newline after the content
        return data if fields[1] == b"blob" else None

    def close(self) -> None:
        for cat in (self._proc, self._check):
            if cat.process.poll() is None:
                cat.stdin.close()
                cat.process.wait(5)
            cat.process.close()  # what is left of its group is killed, the process reaped


@contextlib.contextmanager
def _clone_lock(git_dir: Path):
    """An exclusive lock on ``<cache>/locks/<clone>.lock``, held while the clone is made (lock files live
    apart from the clones, so a folder of clones holds only clones)."""
    locks = git_dir.parent.parent / "locks"
    locks.mkdir(parents=True, exist_ok=True)
    fd = os.open(locks / (git_dir.name + ".lock"), os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _remove_orphan_clones(git_dir: Path) -> None:
    """Temporary clones of ``git_dir`` left by a cloner killed with SIGKILL. Called under the clone lock:
    only the lock holder clones, so every temporary clone found then is an orphan."""
    for leftover in git_dir.parent.glob(f".{git_dir.name}.*"):
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)


class GitRepo:
    """A git directory: either a partial clone in gfxgate's cache or a user's local repository."""

    def __init__(self, name: str, url: str, *, offline: bool, cache: Path | None = None) -> None:
        self.name = name
        self.url = url
        self.offline = offline
        local = None if re.match(r"^[a-z][a-z0-9+.-]*://", url) else local_git_dir(Path(url).expanduser())
        self.managed = local is None  # gfxgate owns (clones, fetches) only its cache copies
        if local is not None:
            self.git_dir = local.resolve()
        else:
            digest = hashlib.sha256(url.encode()).hexdigest()[:12]
            self.git_dir = (cache or cache_root()) / "repos" / f"{name}-{digest}.git"
        self._batch: CatFileBatch | None = None
        self._tags: list[str] | None = None
        # what resolve() answered, per ref: asked again at every probe of a walk (a coupled source's ref, an unknown
        # LLAMA_CPP_VERSION with its hint over every tag), answered once; forgotten when tags are fetched
        self._resolved: dict[str, str] = {}
        self._unknown: dict[str, SourceError] = {}
        self._blobs: dict[str, dict[str, str]] = {}  # commit -> path -> blob id (prefetch)
        self._missing: dict[str, set[str]] = {}  # commit -> ids of its tree not in the local database (prefetch)

    # -- clone and fetch ---------------------------------------------------------------------------
    def ensure_clone(self) -> None:
        if not self.managed or is_git_dir(self.git_dir):
            return
        if self.offline:
            raise NetworkError(
                f"{self.name}: no cached clone of {self.url}, and this run is offline (it clones nothing)",
                hint=f"give --source {self.name}=CLONE (a local clone with its tags), or clone it once (a run without "
                "--offline; for diagnose, with --online)",
            )
        self.git_dir.parent.mkdir(parents=True, exist_ok=True)
        # One cloner per cache clone: two cold scans sharing a cache used to race to rename their temporary
        # clones into place (ENOTEMPTY). The second now waits, then finds the clone done.
        with _clone_lock(self.git_dir):
            if is_git_dir(self.git_dir):
                return
            _remove_orphan_clones(self.git_dir)
            tmp = Path(tempfile.mkdtemp(prefix=f".{self.git_dir.name}.", dir=self.git_dir.parent))
            try:
                _clone_into(self.name, self.url, tmp)
                tmp.rename(self.git_dir)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)

    def fetch_tags(self) -> None:
        """Fetch every tag of a cache clone (commits and trees only, no blobs): new releases since the clone."""
        if not self.managed or self.offline:
            return
        out = run_git(["fetch", "--filter=blob:none", "--tags", "--quiet", "origin"], git_dir=self.git_dir)
        if out.returncode != 0:
            raise _git_failure(
                self.name,
                f"cannot fetch the tags of {self.url}",
                out.stderr,
                hint="--offline uses the tags already in the cache",
            )
        self._forget_refs()

    def _forget_refs(self) -> None:
        self._tags = None
        self._resolved.clear()
        self._unknown.clear()

    def tags(self) -> list[str]:
        if self._tags is None:
            out = run_git(["tag", "--list"], git_dir=self.git_dir, offline=True)
            self._tags = sorted(out.stdout.split())
        return self._tags

    def resolve(self, ref: str) -> str:
        """The commit SHA of ``ref``; fetches just that tag when it is missing (not offline). Answered once per ref
        (an unknown ref: the same error again, without asking git or the remote again)."""
        if ref in self._resolved:
            return self._resolved[ref]
        if ref in self._unknown:
            known = self._unknown[ref]
            raise SourceError(known.message, hint=known.hint, source=known.source)
        self._resolved[ref] = sha = self._resolve(ref)
        return sha

    def _resolve(self, ref: str) -> str:
        self.ensure_clone()
        sha = self._rev_parse(ref)
        if sha is None and self.managed and not self.offline:
            self._fetch_tag(ref)
            sha = self._rev_parse(ref)
        if sha is None:
            tags = self.tags()
            near = nearest_tags(ref, tags)
            if near:
                hint = "nearest tags: " + ", ".join(near)
            elif tags:  # none spelled like it (a name without a version number): say what there is
                ordered = sort_tags(tags)
                newest = ([t for t in ordered if not is_prerelease(t)] or ordered)[-3:][::-1]
                hint = f"no tag is spelled like it; {len(tags)} tags" + (
                    f", the newest releases: {', '.join(newest)}" if newest else ""
                )
            else:
                hint = "the repository has no tags"
            if self.offline and self.managed:
                hint += " (--offline: only cached tags are known)"
            self._unknown[ref] = error = SourceError(
                f"{self.name}: unknown tag or ref {ref!r} in {self.url}", hint=hint
            )
            raise error
        return sha

    def commit_date(self, commit: str) -> str | None:
        """The committer date (YYYY-MM-DD) of ``commit``, else None."""
        out = run_git(["show", "--no-patch", "--format=%cs", commit, "--"], git_dir=self.git_dir, offline=True)
        date = out.stdout.strip() if out.returncode == 0 else ""
        return date if re.fullmatch(r"\d{4}-\d{2}-\d{2}", date) else None

    def _rev_parse(self, ref: str) -> str | None:
        for candidate in (f"refs/tags/{ref}", ref):
            out = run_git(
                ["rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"], git_dir=self.git_dir, offline=True
            )
            if out.returncode == 0 and out.stdout.strip():
                return out.stdout.strip()
        return None

    def _fetch_tag(self, tag: str) -> None:
        out = run_git(
            ["fetch", "--filter=blob:none", "--no-tags", "origin", f"+refs/tags/{tag}:refs/tags/{tag}"],
            git_dir=self.git_dir,
        )
        if out.returncode != 0 and _is_network_failure(out.stderr):
            raise NetworkError(f"{self.name}: cannot reach {self.url}: {out.stderr.strip().splitlines()[-1]}")
        if out.returncode != 0:
            # not a tag upstream either: list what the remote has so the error can suggest
            remote = run_git(["ls-remote", "--tags", "--refs", "origin"], git_dir=self.git_dir)
            if remote.returncode == 0:
                self._tags = sorted(
                    {line.rsplit("refs/tags/", 1)[-1] for line in remote.stdout.splitlines() if "refs/tags/" in line}
                )
        else:
            self._forget_refs()

    def prefetch(self, commit: str, paths: list[str]) -> None:
        """Fetch the missing blobs of ``paths`` at ``commit`` in one round trip (partial clones only).

        A scan asks once per rule: ``commit``'s tree and what of it is missing are listed at the first call and kept
        (every rule listed both again: 19 ``rev-list --objects`` of the whole tree and 18 ``ls-tree`` for one cold
        ``scan --live``); what a fetch brought is no longer missing."""
        if not self.managed or self.offline or not paths:
            return
        blobs = self._blobs_at(commit)
        oids = set()
        for path in paths:
            path = path.rstrip("/")
            if path in blobs:
                oids.add(blobs[path])
            else:  # a folder: every blob under it, as `ls-tree -r -- FOLDER` lists them
                oids.update(oid for name, oid in blobs.items() if name.startswith(path + "/"))
        if not oids:
            return
        absent = self._missing.get(commit)
        if absent is None:
            absent = self._missing[commit] = self.missing_objects(commit)
        missing = sorted(oids & absent)
        if missing:
            out = run_git(
                [
                    "-c",
                    "fetch.negotiationAlgorithm=noop",
                    "fetch",
                    "--no-tags",
                    "--no-write-fetch-head",
                    "--stdin",
                    "origin",
                ],
                git_dir=self.git_dir,
                stdin="\n".join(missing) + "\n",
            )
            if out.returncode == 0:
                absent.difference_update(missing)

    def _blobs_at(self, commit: str) -> dict[str, str]:
        """Path -> blob id of every file of ``commit``'s tree (one ``ls-tree`` per commit; empty when it fails)."""
        if commit not in self._blobs:
            listing = run_git(["ls-tree", "-r", "-z", commit], git_dir=self.git_dir, offline=True)
            blobs = {}
            for entry in listing.stdout.split("\0") if listing.returncode == 0 else ():
                meta, _, path = entry.partition("\t")
                fields = meta.split()
                if len(fields) == 3 and fields[1] == "blob":
                    blobs[path] = fields[2]
            self._blobs[commit] = blobs
        return self._blobs[commit]

    def missing_objects(self, commit: str) -> set[str]:
        """Objects of ``commit``'s tree not in the local database (never triggers a lazy fetch)."""
        out = run_git(
            ["rev-list", "--objects", "--no-walk", "--missing=print", commit], git_dir=self.git_dir, offline=True
        )
        return {line[1:].split()[0] for line in out.stdout.splitlines() if line.startswith("?")}

    # -- reading ------------------------------------------------------------------------------------
    def _cat_file(self) -> CatFileBatch:
        if self._batch is None:
            self._batch = CatFileBatch(self.git_dir, offline=self.offline or not self.managed)
        return self._batch

    def read(self, commit: str, path: str) -> bytes | None:
        return self._cat_file().read(f"{commit}:{path}")

    def list_files(self, commit: str) -> list[str]:
        out = run_git(["ls-tree", "-r", "-z", "--name-only", commit], git_dir=self.git_dir, offline=True)
        if out.returncode != 0:
            raise SourceError(f"{self.name}: cannot list files at {commit[:12]}: {out.stderr.strip()}")
        return sorted(p for p in out.stdout.split("\0") if p)

    def grep(self, commit: str, pattern: str, paths: list[str] | None, fixed: bool) -> list[FileHit]:
        """``git grep`` at ``commit``: the fast path for fixed strings (a regex is POSIX ERE here, not the
        rule dialect; GitSource.grep sends rule regexes through Source.grep instead)."""
        args = ["grep", "-n", "-I", "--no-color", "-F" if fixed else "-E", "-e", pattern, commit]
        if paths:
            for path in paths:  # git grep prints a matching line whole: no blob over the limit (a SourceError)
                self._cat_file().blob_size(f"{commit}:{path}")
            args += ["--", *paths]
        out = run_git(args, git_dir=self.git_dir, offline=self.offline or not self.managed)
        if out.returncode not in (0, 1):
            raise SourceError(f"{self.name}: git grep failed: {out.stderr.strip()}")
        hits = []
        prefix = f"{commit}:"
        for raw in out.stdout.splitlines():
            if not raw.startswith(prefix):
                continue
            path, line, text = raw[len(prefix) :].split(":", 2)
            hits.append(FileHit(path, int(line), text))
        return hits

    def close(self) -> None:
        if self._batch is not None:
            self._batch.close()
            self._batch = None


class GitSource(Source):
    """A repository at a tag, read from a git object database."""

    def __init__(self, repo: GitRepo, ref: str, *, owns_repo: bool = True) -> None:
        """``owns_repo``: closing this source closes ``repo`` (its ``cat-file`` processes); False where the repository
        is shared with other sources and closed by whoever shares it (:class:`gfxgate.history.walk.TagProber`)."""
        self.name = repo.name
        self.url = repo.url
        self.ref = ref
        self.origin = "git"
        self._repo = repo
        self._owns_repo = owns_repo
        self.commit: str = repo.resolve(ref)
        self._files: list[str] | None = None
        self._blobs: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._blobs:
            self._blobs[path] = self._repo.read(self.commit, path)
        return self._blobs[path]

    def list_files(self) -> list[str]:
        if self._files is None:
            self._files = self._repo.list_files(self.commit)
        return self._files

    def prefetch(self, paths: list[str]) -> None:
        self._repo.prefetch(self.commit, paths)

    def commit_date(self) -> str | None:
        """When the commit at this ref was made (YYYY-MM-DD): how old a release is."""
        return self._repo.commit_date(self.commit)

    def grep(self, pattern: str, paths: list[str] | None = None, *, fixed: bool = False) -> list[FileHit]:
        if not fixed:  # git grep -E is POSIX ERE: rule regexes use RE2 on every source (Source.grep)
            return super().grep(pattern, paths)
        return self._repo.grep(self.commit, pattern, paths, fixed)

    def close(self) -> None:
        if self._owns_repo:
            self._repo.close()
