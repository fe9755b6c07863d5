"""Pins, overrides and layouts → the Source objects a scan reads.

``rules/pins.toml`` names each repository's URL and tag; ``--source NAME=URL_OR_PATH`` /
``GFXGATE_SOURCE_<NAME>`` and ``--ref NAME=TAG`` override them per run. A *layout* (ggml) is a
code base that lives inside another repository at some versions and in its own at others.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, NamedTuple

from gfxgate import datacache
from gfxgate.datafiles import load_toml, read_toml
from gfxgate.errors import RuleError, SourceError, UsageError
from gfxgate.lazyre import lazy_compile
from gfxgate.model import Location
from gfxgate.records import dataclass
from gfxgate.resources import rules_dir
from gfxgate.saferegex import RuleRegexError, rule_regex
from gfxgate.sources.base import FileHit, Source, safe_relpath
from gfxgate.sources.versions import is_prerelease, sort_tags, version_key

if TYPE_CHECKING:
    from gfxgate.sources.gitrepo import GitRepo


class Pin(NamedTuple):
    """One source of ``rules/pins.toml``: where it lives and the tag the snapshot reads."""

    name: str
    url: str
    ref: str
    release_tags: str | None = None
    beyond: bool = False  # a source of a route beyond the release (docs/forks.md): a live scan that cannot read it
    # answers from the embedded snapshot's facts of its pin, and says so, instead of failing


class LayoutSpec(NamedTuple):
    """Where another source's code is vendored inside a repository, and which file names its version."""

    name: str
    vendored_in: str
    vendored_roots: tuple[str, ...]
    version_file: str
    upstream: str
    upstream_root: str


class Coupling(NamedTuple):
    """One source's ref chosen by another's files: ollama's Dockerfile ``ARG ROCMVERSION=7.2.1`` → rocm-docs@rocm-7.2.1."""

    name: str  # the source whose ref is chosen
    by: str  # the source that names it
    files: tuple[str, ...]
    pattern: str  # a regex with a (?P<version>…) group, matched line by line
    ref: str  # the ref template, e.g. "rocm-{version}"
    # a release line's branch tried before a nearer tag when the tag cannot be read, e.g. rocBLAS has no rocm-6.3.3 tag
    # but a branch release-staging/rocm-rel-6.3: "{minor}" is the version's first two parts
    branch: str | None = None
    # false: a release that names no version is not read at the pin as if it were its own (the note makes the
    # source a substitution, so a matcher that reads substitutions decides nothing from it)
    pin_unnamed: bool = True
    # true: a source that only adds evidence where it can be read (rocBLAS's target lists): missing offline, its rules
    # fall back to the embedded snapshot's facts, marked as read elsewhere (deciding nothing), instead of exit 5
    optional: bool = False


@dataclass(frozen=True)
class Pins:
    """Everything ``rules/pins.toml`` declares: sources, vendoring layouts, version couplings."""

    sources: dict[str, Pin]
    layouts: dict[str, LayoutSpec] = field(default_factory=dict)
    path: Path | None = None
    couplings: dict[str, Coupling] = field(default_factory=dict)
    pin_sets: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> {source: ref}: [pin_sets.NAME]

    def pin_set_for(self, refs: Mapping[str, str]) -> str | None:
        """The pin set whose refs include every one of ``refs`` (``--ref ollama=v0.17.5`` is the study's), else None."""
        for name, chosen in sorted(self.pin_sets.items()):
            if refs and all(chosen.get(source) == ref for source, ref in refs.items()):
                return name
        return None

    def with_pin_set(self, name: str) -> Pins:
        """These pins with the refs of pin set ``name`` (and no pin sets of their own)."""
        chosen = self.pin_sets[name]
        sources = {key: pin._replace(ref=chosen.get(key, pin.ref)) for key, pin in self.sources.items()}
        return dataclasses.replace(self, sources=sources, pin_sets={})


# The Pins of each content of a pins file (its path and bytes), kept for the life of the process: a scan at every
# release asks for them at each release (FactsRequest.at_release, origin). Deliberately a plain dict, not a functools
# cache (which the in-process test runner, tests/inprocess.py, clears between two commands): the Pins of some bytes are
# the same whatever the call, and each caller gets its own copy of the tables (``_copy``).
_PINS: dict[tuple[str, bytes], Pins] = datacache.memo()
_PINS_KEPT = 8


def load_pins(path: Path | None = None) -> Pins:
    path = path or rules_dir() / "pins.toml"
    raw = read_toml(path)
    key = (str(path), raw)
    pins = _PINS.get(key)
    if pins is None:
        pins = _PINS[key] = _parse_pins(path, raw)
        for old in list(_PINS)[:-_PINS_KEPT]:
            del _PINS[old]
    return _copy(pins)


def _copy(pins: Pins) -> Pins:
    return dataclasses.replace(
        pins,
        sources=dict(pins.sources),
        layouts=dict(pins.layouts),
        couplings=dict(pins.couplings),
        pin_sets={name: dict(refs) for name, refs in pins.pin_sets.items()},
    )


def _parse_pins(path: Path, raw: bytes) -> Pins:
    data = load_toml(path, "pins", raw)
    sources = {name: Pin(name=name, **spec) for name, spec in data["sources"].items()}
    for name, pin in sources.items():  # the one dialect of regexes from rules data (RE2), like every gate rule's
        if pin.release_tags is not None:
            _check_pins_regex(path, f"sources.{name}", "release_tags", f"source {name}", pin.release_tags)
    layouts = {}
    for name, spec in data.get("layouts", {}).items():
        layout = LayoutSpec(name=name, **{**spec, "vendored_roots": tuple(spec["vendored_roots"])})
        for repo in (layout.vendored_in, layout.upstream):
            if repo not in sources:
                raise RuleError(f"{path}: layout {name} names unknown source {repo!r}")
        layouts[name] = layout
    couplings = {}
    for name, spec in data.get("couplings", {}).items():
        coupling = Coupling(
            name=name,
            by=spec["by"],
            files=tuple(spec["files"]),
            pattern=spec["pattern"],
            ref=spec["ref"],
            branch=spec.get("branch"),
            pin_unnamed=spec.get("pin_unnamed", True),
            optional=spec.get("optional", False),
        )
        for repo in (name, coupling.by):
            if repo not in sources:
                raise RuleError(f"{path}: coupling {name} names unknown source {repo!r}")
        _check_pins_regex(path, f"couplings.{name}", "pattern", f"coupling {name}", coupling.pattern, group="version")
        couplings[name] = coupling
    pin_sets = {name: dict(refs) for name, refs in data.get("pin_sets", {}).items()}
    for name, refs in pin_sets.items():
        for repo in refs:
            if repo not in sources:
                raise RuleError(f"{path}: pin set {name} names unknown source {repo!r}")
    return Pins(sources=sources, layouts=layouts, path=path, couplings=couplings, pin_sets=pin_sets)


def _check_pins_regex(path: Path, table: str, key: str, what: str, pattern: str, group: str | None = None) -> None:
    """A regex of pins.toml compiles with RE2 (and has the named ``group``), or a RuleError at its line."""
    try:
        if group is not None and group not in rule_regex(pattern).groupindex:
            raise RuleRegexError(f"needs a (?P<{group}>…) group")
        if group is None:
            rule_regex(pattern)
    except RuleRegexError as exc:
        line = _key_line(path, table, key)
        raise RuleError(
            f"{path}:{line}: {what}: {key}: {exc.message}" if line else f"{path}: {what}: {key}: {exc.message}"
        ) from None


def _key_line(path: Path, table: str, key: str) -> int:
    """1-based line of ``key = …`` in the TOML table ``[table]`` of ``path`` (0: not written that way)."""
    inside = False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            inside = stripped.split("#")[0].strip().replace('"', "") == f"[{table}]"
        elif inside and re.match(rf"{re.escape(key)}\s*=", stripped):
            return number
    return 0


def parse_assignments(values: tuple[str, ...] | list[str], what: str) -> dict[str, str]:
    """``NAME=VALUE`` pairs from repeated options (e.g. ``--ref ollama=v0.12.3``)."""
    out = {}
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name.strip() or not rest.strip():
            raise UsageError(f"bad {what} {_excerpt(value)}", hint="the form is NAME=VALUE, e.g. ollama=v0.12.3")
        if what == "--ref" and len(rest.strip()) > MAX_REF_CHARS:  # the error line quotes its start, not 100 KB
            raise UsageError(
                f"bad --ref {_excerpt(value)}: {len(rest.strip())} characters; a tag or branch name "
                f"gfxgate reads has at most {MAX_REF_CHARS}"
            )
        if what == "--source" and (
            len(rest.strip()) > MAX_SOURCE_CHARS or max(map(len, rest.strip().split("/"))) > MAX_REF_CHARS
        ):
            raise UsageError(
                f"bad --source {_excerpt(value)}: longer than a path or URL can be "
                f"({MAX_SOURCE_CHARS} characters, {MAX_REF_CHARS} per folder name)"
            )
        if what == "--ref" and not _REF_NAME.match(rest.strip()):
            raise UsageError(
                f"bad --ref {_excerpt(value)}: {_excerpt(rest.strip())} is not a tag or branch name",
                hint="a ref starts with a letter, digit or _ and has no spaces or '..', e.g. ollama=v0.12.3",
            )
        out[name.strip()] = rest.strip()
    return out


LATEST = "latest"  # `--ref NAME=latest`: the newest release tag
MAX_REF_CHARS = 255  # a ref is a file name in git's refs/ (NAME_MAX); real tags are under 40
MAX_SOURCE_CHARS = 4095  # PATH_MAX: a longer path is ENAMETOOLONG at the first stat


def _excerpt(value: str, limit: int = 80) -> str:
    """``repr(value)``, its start only when it is long (an error line stays one readable line)."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}… ({len(value)} characters)"


# git check-ref-format's rules, narrowed: never an option (--output=x was passed on to git), never a range.
_REF_NAME = lazy_compile(r"^(?!.*\.\.)(?!.*@\{)[A-Za-z0-9_][A-Za-z0-9._/+-]*$")


class RootedSource(Source):
    """A view of a sub-folder of another source (ggml inside ollama, or llama.cpp's ggml/)."""

    def __init__(self, inner: Source, root: str, *, alias: str) -> None:
        self.inner = inner
        self.root = root.strip("/")
        self.alias = alias
        self.name, self.url, self.ref, self.commit, self.origin = (
            inner.name,
            inner.url,
            inner.ref,
            inner.commit,
            inner.origin,
        )

    def _full(self, path: str) -> str:
        path = safe_relpath(path)
        return f"{self.root}/{path}" if self.root else path

    def read(self, path: str) -> bytes | None:
        return self.inner.read(self._full(path))

    def list_files(self) -> list[str]:
        prefix = f"{self.root}/" if self.root else ""
        return [p[len(prefix) :] for p in self.inner.list_files() if p.startswith(prefix)]

    def grep(self, pattern: str, paths: list[str] | None = None, *, fixed: bool = False) -> list[FileHit]:
        prefix = f"{self.root}/" if self.root else ""
        full = [self._full(p) for p in paths] if paths is not None else ([self.root] if self.root else None)
        return [
            FileHit(h.path[len(prefix) :], h.line, h.text)
            for h in self.inner.grep(pattern, full, fixed=fixed)
            if h.path.startswith(prefix)
        ]

    def location(self, path: str, line: int | None = None) -> Location:
        return self.inner.location(self._full(path), line)

    def prefetch(self, paths: list[str]) -> None:
        prefetch = getattr(self.inner, "prefetch", None)
        if prefetch:
            prefetch([self._full(p) for p in paths])


class SourceSet:
    """Opens each source once, lazily, honouring overrides; resolves layouts such as ggml."""

    def __init__(
        self,
        pins: Pins,
        *,
        sources: dict[str, str] | None = None,
        refs: dict[str, str] | None = None,
        offline: bool = False,
        repos: dict[str, GitRepo] | None = None,
    ) -> None:
        """``repos``: the git repositories of another SourceSet's sources to use as well (filled here as sources are
        opened), so that the probes of one walk start each repository's ``cat-file`` processes and resolve each ref
        once; their owner closes them (``close`` here leaves them open)."""
        self.pins = pins
        self.offline = offline
        self._url_overrides = dict(sources or {})
        for name in pins.sources:
            env = os.environ.get("GFXGATE_SOURCE_" + re.sub(r"[^A-Z0-9]", "_", name.upper()))
            if env and name not in self._url_overrides:
                self._url_overrides[name] = env
        self._refs = dict(refs or {})
        for name in list(self._url_overrides) + list(self._refs):
            if name not in pins.sources:
                from gfxgate.suggest import did_you_mean, known_names

                layout = pins.layouts.get(name)
                if layout is not None:  # ggml, llama.cpp: read inside another source, not a source of their own
                    raise UsageError(
                        f"{name!r} is not a source: gfxgate reads it inside {layout.vendored_in} "
                        f"({', '.join(r + '/' for r in layout.vendored_roots)}) or, where "
                        f"{layout.vendored_in} names a {layout.upstream} tag in {layout.version_file}, "
                        f"from {layout.upstream}",
                        hint=f"name the source that holds it: {layout.upstream} or {layout.vendored_in}",
                    )
                raise UsageError(
                    f"unknown source name {name!r}",
                    hint=did_you_mean(name, pins.sources, otherwise=known_names(pins.sources)),
                )
        self._open: dict[tuple[str, str], Source] = {}
        self._failed: dict[tuple[str, str], SourceError] = {}  # a source that could not be opened is tried once per run
        self._shared_repos = repos is not None
        self._repos: dict[str, GitRepo] = repos if repos is not None else {}
        self._coupled_refs: dict[str, tuple[str, str | None]] = {}
        self.notes: list[str] = []

    @property
    def has_overrides(self) -> bool:
        return bool(self._url_overrides or self._refs)

    def url(self, name: str) -> str:
        return self._url_overrides.get(name) or self.pins.sources[name].url

    def ref(self, name: str) -> str:
        if self._refs.get(name) == LATEST:
            self._refs[name] = self._latest(name)
        if name in self._refs:
            return self._refs[name]
        if name in self.pins.couplings:
            return self._coupled(name)[0]
        return self.pins.sources[name].ref

    def _latest(self, name: str) -> str:
        """``--ref NAME=latest``: the newest release tag of that source (pre-releases left out); the report says which."""
        from gfxgate.sources.gitrepo import local_git_dir

        pin, url = self.pins.sources[name], self.url(name)
        path = Path(url).expanduser()
        if "://" not in url and path.is_dir() and local_git_dir(path) is None:
            raise UsageError(
                f"--ref {name}=latest needs a git repository, but {url} is a plain folder",
                hint="name a tag instead, or point --source at a clone",
            )
        repo = self._repo(name, url)
        repo.ensure_clone()
        rx = rule_regex(pin.release_tags) if pin.release_tags else None
        tags = sort_tags([t for t in repo.tags() if not is_prerelease(t) and (rx is None or rx.search(t))])
        if not tags:
            raise SourceError(f"{name}: no release tags{f' matching {pin.release_tags}' if rx else ''} in {url}")
        self.notes.append(
            f"{name}: latest = {tags[-1]} (the newest release tag"
            + (f" matching {pin.release_tags}" if rx else "")
            + f" of {len(tags)})"
        )
        return tags[-1]

    def _coupled(self, name: str) -> tuple[str, str | None]:
        """(ref, substitution note) of a coupled source: the ref another source names, or the nearest readable one."""
        if name in self._coupled_refs:
            return self._coupled_refs[name]
        self._coupled_refs[name] = result = self._choose_coupled(name)
        return result

    def _choose_coupled(self, name: str) -> tuple[str, str | None]:
        coupling, pin = self.pins.couplings[name], self.pins.sources[name]
        try:
            host = self.get(coupling.by)
            texts = {path: host.read_text(path) or "" for path in coupling.files}
        except SourceError as exc:
            self.notes.append(f"{name}: pinned {pin.ref} ({coupling.by} cannot be read to choose it: {exc.message})")
            return pin.ref, f"{coupling.by} cannot be read to choose the ref: read the pin {pin.ref}"
        rx = rule_regex(coupling.pattern)
        found = None
        for path in coupling.files:
            for number, line in enumerate(texts[path].splitlines(), start=1):
                match = rx.search(line)
                if match:
                    found = (path, number, line.strip(), match["version"])
                    break
            if found:
                break
        if found is None:
            self.notes.append(
                f"{name}: pinned {pin.ref} ({coupling.by}@{host.ref} names no version in {', '.join(coupling.files)})"
            )
            if not coupling.pin_unnamed:
                return pin.ref, f"{coupling.by}@{host.ref} names no {name} version: read the pin {pin.ref}"
            return pin.ref, None
        path, number, text, version = found
        version += ".0" * (2 - version.count("."))  # ROCm tags have three parts: "7.2" is rocm-7.2.0
        wanted = coupling.ref.replace("{version}", version)
        where = f"{coupling.by}@{host.ref}:{path}:{number}"
        try:
            self.get(name, wanted)
        except SourceError as exc:
            branch = coupling.branch.replace("{minor}", ".".join(version.split(".")[:2])) if coupling.branch else None
            if branch is not None and self._readable(name, branch):
                # the release line's own branch, not another release: noted, not a substitution
                self.notes.append(
                    f"{name}: {where} ({text}) names {wanted}, which has no tag ({exc.message}); "
                    f"read its release branch {branch}"
                )
                return branch, None
            fallback = self._nearest_readable(name, wanted)
            note = (
                f"{name}: {where} ({text}) names {wanted}, which cannot be read ({exc.message}); "
                f"read {fallback} instead (the newest readable {name} release tag not newer than {wanted}, else the pin)"
            )
            self.notes.append(note)
            return fallback, f"{wanted} cannot be read here: read {fallback} instead"
        self.notes.append(f"{name}: {wanted} (chosen by {where}: {text})")
        return wanted, None

    def _readable(self, name: str, ref: str) -> bool:
        try:
            self.get(name, ref)
        except SourceError:
            return False
        return True

    def _nearest_readable(self, name: str, wanted: str) -> str:
        pin = self.pins.sources[name]
        repo = self._repos.get(name)
        tags = repo.tags() if repo is not None and hasattr(repo, "tags") else []
        rx = rule_regex(pin.release_tags) if pin.release_tags else None
        limit = version_key(wanted)
        older = [
            t
            for t in sort_tags(tags)
            if (rx is None or rx.search(t))
            and limit is not None
            and (key := version_key(t)) is not None
            and key <= limit
        ]
        return older[-1] if older else pin.ref  # no tags known (the repository cannot be opened): the pin

    def substitution(self, name: str) -> str | None:
        """Why ``name`` is read at another ref than the one its coupling names (None: it is not)."""
        if name in self.pins.layouts:
            return self._coupled_refs.get(name, (None, None))[1]  # set when the layout resolved to a plain folder
        if name in self._refs or name not in self.pins.couplings:
            return None
        return self._coupled(name)[1]

    def is_overridden(self, name: str) -> bool:
        return name in self._refs

    def get(self, name: str, ref: str | None = None) -> Source:
        """The source ``name`` at ``ref`` (default: the --ref override or the pin)."""
        if name in self.pins.layouts:
            return self.layout(name)
        if name not in self.pins.sources:
            raise SourceError(f"no source named {name!r} in {self.pins.path}")
        ref = ref or self.ref(name)
        key = (name, ref)
        if key in self._failed:  # every entry of `workarounds` / `messages` asking again used to clone again
            raise self._failed[key]
        if key not in self._open:
            try:
                self._open[key] = self._open_source(name, ref)
            except SourceError as exc:
                self._failed[key] = exc
                raise
        return self._open[key]

    def _open_source(self, name: str, ref: str) -> Source:
        from gfxgate.sources.directory import DirectorySource
        from gfxgate.sources.gitrepo import GitSource, local_git_dir

        url = self.url(name)
        path = Path(url).expanduser()
        if "://" not in url and path.is_dir() and local_git_dir(path) is None:
            return DirectorySource(name, path, ref=ref if name in self._refs else "worktree")
        if "://" not in url and not path.exists() and not re.match(r"^[\w.-]+@[\w.-]+:", url):
            raise SourceError(f"{name}: source path {url} does not exist")
        if "://" not in url and path.exists() and not path.is_dir():
            raise UsageError(
                f"{name}: source {url} is a file; give a folder, a git clone or a URL",
                hint="e.g. --source ollama=~/src/ollama or --source ollama=https://github.com/ollama/ollama.git",
            )
        self._repo(name, url)
        return GitSource(self._repos[name], ref, owns_repo=not self._shared_repos)

    def _repo(self, name: str, url: str) -> GitRepo:
        from gfxgate.sources.gitrepo import GitRepo

        repo = self._repos.get(name)
        if repo is None or repo.url != url or repo.offline != self.offline:  # a shared one of other options: never
            if repo is not None:
                repo.close()
            self._repos[name] = repo = GitRepo(name, url, offline=self.offline)
        return repo

    def layout(self, name: str) -> Source:
        """Resolve a layout: vendored inside one repository, or an upstream tag named in a version file."""
        spec = self.pins.layouts[name]
        key = (name, "")
        if key in self._open:
            return self._open[key]
        host = self.get(spec.vendored_in)
        version = host.read_text(spec.version_file)
        if version is not None and version.strip():
            tag = self._refs.get(spec.upstream) or version.strip()
            where = f"{spec.vendored_in}@{host.ref}:{spec.version_file}"
            try:
                upstream = self.get(spec.upstream, tag)
            except SourceError as exc:
                raise SourceError(
                    f"{name}: {where} names {spec.upstream} {tag}, which cannot be read: {exc.message}",
                    source=spec.upstream,
                ) from exc
            folder = f", folder {spec.upstream_root}/" if spec.upstream_root else ""  # "" = the whole repository
            if upstream.origin == "directory":
                # a plain folder has no tags: say that its version is the user's word, not checked
                self.notes.append(
                    f"{name}: {where} names {spec.upstream} {tag}; read from the folder "
                    f"{spec.upstream}@{upstream.ref} instead, whose version gfxgate cannot check{folder}"
                )
                self._coupled_refs[name] = (
                    tag,
                    f"{spec.version_file} names {spec.upstream} {tag}: read from a folder "
                    "whose version gfxgate cannot check",
                )
            else:
                self.notes.append(f"{name}: {spec.upstream}@{tag} (named by {where}){folder}")
            view = RootedSource(upstream, spec.upstream_root, alias=name)
        else:
            files = host.list_files()
            root = next((r for r in spec.vendored_roots if any(f.startswith(r.rstrip("/") + "/") for f in files)), None)
            if root is None:
                raise SourceError(
                    f"{name}: {spec.vendored_in}@{host.ref} has neither {spec.version_file} nor a vendored copy under "
                    + ", ".join(spec.vendored_roots),
                    source=name,
                )
            self.notes.append(f"{name}: vendored in {spec.vendored_in}@{host.ref} under {root}/")
            view = RootedSource(host, root, alias=name)
        self._open[key] = view
        return view

    def opened(self) -> list[Source]:
        return [s for (n, r), s in sorted(self._open.items()) if r]

    def close(self) -> None:
        for source in self._open.values():
            source.close()
