"""The release tags at which a layer's status changed, found by bisecting over an upstream's tags.

Release tags are ordered by semantic version (``v0.9.0`` < ``v0.10.0``); pre-releases (``-rc1``)
are left out unless asked for. At each probed tag the gate rules of that repository (and of the
layouts vendored in it, such as ggml inside ollama) run through :func:`gfxgate.gate.engine.collect_facts`
on blobs read straight from the object database — no checkout — and the verdicts come from
:func:`gfxgate.gate.engine.build_matrix`, exactly as ``gfxgate scan --ref`` would compute them.

Bisection: the tags between two probes whose verdicts agree are assumed to agree as well, so a
status that changes and changes back between two such probes is not seen (``every_tag=True``
probes every tag). A probe's signature per (layer, target) is the status *and* the rules that
decide it, so a layer that keeps its status but is decided by another mechanism (ollama's
rocBLAS-file allowlist → deep-initialisation probe) counts as a change too.

Facts are cached per (rule digest, commit, tag) in memory and on disk under the gfxgate cache,
so a second run re-reads and re-parses nothing that a first run already saw.
"""

from __future__ import annotations

import json
import os
from dataclasses import field
from pathlib import Path
from typing import Any, Callable, Mapping
import hashlib
import stat

from gfxgate.gate.engine import MATCHED, NO_MATCH, NOT_APPLICABLE, RuleFacts, build_matrix, collect_facts
from gfxgate.errors import GfxgateError, SourceError, UsageError
from gfxgate.fsio import write_bytes_atomic
from gfxgate.gate.matrix import GateMatrix, Layer
from gfxgate.prcheck.diff import EVIDENCE, classify, slim_verdict
from gfxgate.gate.ruleset import GateRule, RuleSet
from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord, document, json_dataclass, json_field
from gfxgate.sources.gitrepo import GitRepo, cache_root, local_git_dir, tag_commits
from gfxgate.sources.resolve import Pins, SourceSet
from gfxgate.sources.versions import base_version, is_prerelease, nearest_tags, sort_tags
from gfxgate.saferegex import rule_regex
from gfxgate.jsontext import loads_input

CACHEABLE = (MATCHED, NO_MATCH, NOT_APPLICABLE)  # deterministic given (rule, commit, tag); "unavailable" is not


# -- tags ---------------------------------------------------------------------------------------------
def release_tags(tags: list[str], pattern: str | None, *, prereleases: bool = False) -> list[str]:
    """Release tags in semantic-version order; pre-releases only when asked (and then matched without their suffix)."""
    rx = rule_regex(pattern) if pattern else None
    out = []
    for tag in tags:
        pre = is_prerelease(tag)
        if pre and not prereleases:
            continue
        base = base_version(tag) if pre else tag  # the suffixes of gfxgate.sources.versions, e.g. -rc1, -ci3
        if rx is None or rx.search(base):
            out.append(tag)
    return sort_tags(out)


def tag_window(tags: list[str], first: str | None, last: str | None, all_tags: list[str]) -> list[str]:
    """The tags from ``first`` to ``last`` inclusive; an unknown bound fails with the nearest release tags."""
    for bound in (first, last):
        if bound is not None and bound not in tags:
            near = nearest_tags(bound, tags) or nearest_tags(bound, all_tags)
            known = "it is a pre-release (add --prereleases)" if bound in all_tags else "no such release tag"
            raise SourceError(f"{bound!r}: {known}", hint=("nearest tags: " + ", ".join(near)) if near else None)
    lo = tags.index(first) if first else 0
    hi = tags.index(last) if last else len(tags) - 1
    if lo > hi:
        raise UsageError(f"--from {first} comes after --to {last} in release order")
    return tags[lo : hi + 1]


# -- facts cache --------------------------------------------------------------------------------------
FACTS_FORMAT = 2  # 2: a header line with the entries' checksum, then the entries (1: the bare entries object)
MAX_FACTS_BYTES = 16 << 20  # a commit's facts are tens of KB (ollama, every rule at every tag of one commit)
_FACT_FIELDS: dict[str, type | tuple[type, ...]] = {
    "rule_id": str,
    "digest": str,
    "state": str,
    "reason": (str, type(None)),
    "repo": (str, type(None)),
    "ref": (str, type(None)),
    "commit": (str, type(None)),
    "root": (str, type(None)),
    "facts": (dict, type(None)),
    "note": (str, type(None)),
    "unreadable": (str, type(None)),
}


def _entry_ok(key: Any, raw: Any) -> bool:
    """The shape RuleFacts.to_json writes for a cacheable state (anything else: the file is not trusted)."""
    return (
        isinstance(key, str)
        and key.count("\0") == 1
        and isinstance(raw, dict)
        and raw.keys() <= _FACT_FIELDS.keys()
        and all(isinstance(raw.get(name), kind) for name, kind in _FACT_FIELDS.items() if name in raw or kind is str)
        and raw["state"] in CACHEABLE
        and key.endswith("\0" + raw["digest"])
    )


def _checksum(body: bytes) -> str:
    return hashlib.blake2b(body, digest_size=32).hexdigest()


_CODE: list[str] = []


def code_digest() -> str:
    """The digest of the code that turns a rule into facts (gfxgate/matchers/, gate/engine.py): a cached fact is keyed
    by its rule's definition, so facts written by other matcher code (another gfxgate, a matcher fixed since) are
    not taken; the cache file of a commit written by other code is read as empty and rewritten."""
    if not _CODE:
        package = Path(__file__).resolve().parents[1]
        h = hashlib.blake2b(digest_size=16)
        for path in sorted((package / "matchers").glob("*.py")) + [package / "gate" / "engine.py"]:
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        _CODE.append(h.hexdigest())
    return _CODE[0]


def _unsafe_folder(base: Path, path: Path) -> str | None:
    """Why ``path``'s folders may not be used, from ``base`` down (``base`` itself may be a link the user made:
    the cache moved to another disk): a folder below it that is a symbolic link or not a folder; None when every
    one is a real folder or missing."""
    current = base
    for part in path.parent.relative_to(base).parts:
        current = current / part
        try:
            mode = os.lstat(current).st_mode
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"{current}: {exc.strerror}"
        if stat.S_ISLNK(mode):
            return f"{current} is a symbolic link (gfxgate follows no link inside its cache folder)"
        if not stat.S_ISDIR(mode):
            return f"{current} is not a folder"
    return None


class FactsCache:
    """RuleFacts per (rule digest, commit, tag): in memory, and one file per commit under ``root``.

    A convenience, never an authority: a file is read only when it is a regular file (``O_NOFOLLOW``,
    ``O_NONBLOCK``: a link, FIFO or device is never opened through), under every folder from ``root`` down a real
    folder, at most ``MAX_FACTS_BYTES``, and its entries match the checksum in its header line and the shape and
    states that are cached (``"state": "bogus"`` or any hand edit: the file is dropped and its facts recomputed).
    A cache that cannot be written only costs speed: ``warning`` says why, once, and the answer is unchanged.
    """

    def __init__(self, root: Path | None, *, base: Path | None = None) -> None:
        self.root = root
        self.base = base or root  # the folder from which no link is followed (gfxgate's cache folder)
        self._entries: dict[str, dict[str, dict[str, Any]]] = {}
        self._dirty: set[str] = set()
        self.hits = self.misses = 0
        self.dropped: list[str] = []  # commits whose cache file was there but not trusted
        self.warning: str | None = None

    @staticmethod
    def _path(root: Path, commit: str) -> Path:
        return root / commit[:2] / f"{commit}.json"

    def _load(self, commit: str) -> dict[str, dict[str, Any]]:
        if commit not in self._entries:
            data = self._read(self.base or self.root, self._path(self.root, commit)) if self.root is not None else None
            self._entries[commit] = data if data is not None else {}
        return self._entries[commit]

    def _read(self, base: Path, path: Path) -> dict[str, dict[str, Any]] | None:
        if _unsafe_folder(base, path) is not None:
            self.dropped.append(path.stem)
            return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return None
        except OSError:  # a symbolic link (ELOOP), a folder we may not read, ...
            self.dropped.append(path.stem)
            return None
        try:
            info = os.fstat(fd)
            blob = (
                os.read(fd, MAX_FACTS_BYTES + 1)
                if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_FACTS_BYTES
                else None
            )
            while blob is not None and len(blob) < min(info.st_size, MAX_FACTS_BYTES + 1):  # os.read may return less
                more = os.read(fd, MAX_FACTS_BYTES + 1 - len(blob))
                if not more:
                    break
                blob += more
        except OSError:
            blob = None
        finally:
            os.close(fd)
        data = self._decode(blob) if blob is not None and len(blob) <= MAX_FACTS_BYTES else None
        if data is None:
            self.dropped.append(path.stem)
        return data

    @staticmethod
    def _decode(blob: bytes) -> dict[str, dict[str, Any]] | None:
        head, sep, body = blob.partition(b"\n")
        try:
            header = loads_input(head)
            if (
                not sep
                or not isinstance(header, dict)
                or header.get("format") != FACTS_FORMAT
                or header.get("blake2b") != _checksum(body)
            ):
                return None
            data = loads_input(body)
        except ValueError:
            return None
        if not isinstance(data, dict) or not all(_entry_ok(k, v) for k, v in data.items()):
            return None
        if header.get("code") != code_digest():
            return {}  # well-formed facts of other matcher code: none taken (a miss, not an untrusted file)
        return data

    def get(self, rule: GateRule, commit: str, tag: str) -> RuleFacts | None:
        raw = self._load(commit).get(f"{tag}\0{rule.digest}")
        if raw is None or raw.get("rule_id") != rule.id:
            self.misses += 1
            return None
        self.hits += 1
        return RuleFacts.from_json(raw)

    def put(self, rule: GateRule, commit: str, tag: str, facts: RuleFacts) -> None:
        if facts.state in CACHEABLE:
            self._load(commit)[f"{tag}\0{rule.digest}"] = facts.to_json()
            self._dirty.add(commit)

    def flush(self) -> None:
        """Write the new facts; best effort: the first failure stops the writing and is kept in ``warning``."""
        root = self.root
        if root is None:
            return
        base = self.base or root  # base is None only without a root
        for commit in sorted(self._dirty):
            path = self._path(root, commit)
            body = json.dumps(self._entries[commit], sort_keys=True).encode("utf-8")
            header = json.dumps({"format": FACTS_FORMAT, "blake2b": _checksum(body), "code": code_digest()}).encode(
                "utf-8"
            )
            try:
                unsafe = _unsafe_folder(base, path)
                if unsafe is not None:
                    raise OSError(unsafe)
                path.parent.mkdir(parents=True, exist_ok=True)
                if os.path.lexists(path) and not path.is_file() or path.is_symlink():
                    os.unlink(
                        path
                    )  # a link, FIFO or device in the place of a cache file: replaced, never written through
                write_bytes_atomic(path, header + b"\n" + body)
            except (OSError, GfxgateError) as exc:
                if isinstance(exc, GfxgateError):
                    reason = exc.message
                else:
                    reason = f"{exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
                self.warning = (
                    f"the history facts cache cannot be written ({reason}); "
                    "the answer is the same, the next run computes these facts again"
                )
                break
        self._dirty.clear()


def default_cache_root(repo: str) -> Path:
    return cache_root() / "history-facts" / repo


def default_facts_cache(repo: str) -> FactsCache:
    """The facts cache of ``repo`` in gfxgate's cache folder (no link followed below that folder)."""
    return FactsCache(default_cache_root(repo), base=cache_root())


# -- the probes ---------------------------------------------------------------------------------------
def rules_of_repo(ruleset: RuleSet, pins: Pins, repo: str, coupled: tuple[str, ...] = ()) -> RuleSet:
    """The source layers and rules that read ``repo`` directly or through a layout vendored in it, and those that read
    the ``coupled`` sources (each one whose ref ``repo``'s files choose, as a scan at that tag chooses it: clr at the
    ROCm version of ollama's Dockerfile)."""
    unknown = [name for name in coupled if name not in pins.couplings or pins.couplings[name].by != repo]
    if unknown:
        raise UsageError(f"{', '.join(unknown)}: no coupling of rules/pins.toml is chosen by {repo}")
    names = {repo} | {name for name, spec in pins.layouts.items() if spec.vendored_in == repo} | set(coupled)
    rules = tuple(r for r in ruleset.rules if r.repo in names)
    layer_ids = {r.layer for r in rules}
    layers = tuple(layer for layer in ruleset.layers if layer.id in layer_ids and layer.kind == "source")
    return RuleSet(layers=layers, rules=rules)


def signature(matrix: GateMatrix) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    """Per (layer, target): the status and the rules whose evidence decides it."""
    return {key: (v.status.value, tuple(sorted({e.source for e in v.evidence}))) for key, v in matrix.cells.items()}


class TagProber:
    """Verdicts of one repository's layers at any of its tags, facts cached per (rule, commit, tag)."""

    def __init__(
        self,
        pins: Pins,
        ruleset: RuleSet,
        repo: str,
        targets: list,
        catalog,
        *,
        sources: Mapping[str, str] | None = None,
        offline: bool = False,
        cache: FactsCache | None = None,
        on_probe: Callable[[str], None] | None = None,
        coupled: tuple[str, ...] = (),
    ) -> None:
        if repo not in pins.sources:
            raise UsageError(f"unknown repository {repo!r}", hint="known: " + ", ".join(sorted(pins.sources)))
        self.pins, self.repo, self.targets, self.catalog = pins, repo, targets, catalog
        self.ruleset = rules_of_repo(ruleset, pins, repo, coupled)
        if not self.ruleset.rules:
            raise UsageError(
                f"no gate rule reads {repo}", hint="history follows repositories that gate rules read, e.g. ollama"
            )
        self.sources = dict(sources or {})
        self.offline = offline
        self.cache = cache or FactsCache(None)
        self.on_probe = on_probe  # called with each tag before its facts are read (a progress display)
        self.notes: set[str] = set()
        self.unavailable: dict[tuple[str, str], RuleFacts] = {}  # (rule id, tag) → facts whose source could not be read
        self._matrices: dict[str, GateMatrix] = {}
        # the git repositories every probe reads (ollama, and llama.cpp, ROCm's where ollama's files name their tags):
        # opened once for the walk, their refs resolved once; closed by close() (a later probe opens them again)
        self._repos: dict[str, GitRepo] = {}
        self.commits = self._tag_commits()

    def close(self) -> None:
        """End the ``git cat-file`` processes of the repositories the probes read."""
        for repo in self._repos.values():
            repo.close()

    def __enter__(self) -> TagProber:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tag_commits(self) -> dict[str, str]:
        sourceset = SourceSet(self.pins, sources=self.sources, offline=self.offline)
        url = sourceset.url(self.repo)
        path = Path(url).expanduser()
        if "://" not in url and path.is_dir() and local_git_dir(path) is None:
            raise UsageError(
                f"{self.repo}: {url} is a folder, not a git repository",
                hint="history walks tags: point --source at a clone (bare or with a work tree)",
            )
        repo = GitRepo(self.repo, url, offline=self.offline)
        if repo.managed:
            repo.ensure_clone()
            repo.fetch_tags()  # new releases since the clone was made (not --offline); commits and trees, no blobs
        elif not Path(url).expanduser().exists():
            raise SourceError(f"{self.repo}: source path {url} does not exist")
        repo.close()
        return tag_commits(repo.git_dir)

    def release_tags(self, *, prereleases: bool = False) -> list[str]:
        return release_tags(sorted(self.commits), self.pins.sources[self.repo].release_tags, prereleases=prereleases)

    def facts_at(self, tag: str) -> dict[str, RuleFacts]:
        if self.on_probe is not None:
            self.on_probe(tag)
        commit = self.commits[tag]
        facts: dict[str, RuleFacts] = {}
        missing: list[GateRule] = []
        for rule in self.ruleset.rules:
            cached = self.cache.get(rule, commit, tag)
            if cached is None or cached.repo not in (None, self.repo):  # older caches held other sources' facts
                missing.append(rule)
            else:
                facts[rule.id] = cached
        if missing:
            sourceset = SourceSet(
                self.pins, sources=self.sources, refs={self.repo: tag}, offline=self.offline, repos=self._repos
            )
            try:
                fresh = collect_facts(RuleSet(layers=self.ruleset.layers, rules=tuple(missing)), sourceset)
            finally:
                sourceset.close()
            for rule in missing:
                facts[rule.id] = fresh[rule.id]
                # only facts read from this repository at this commit are keyed by it; a layout resolved to another
                # source (ggml from the llama.cpp tag or folder in LLAMA_CPP_VERSION) depends on that source too
                if fresh[rule.id].repo in (None, self.repo):
                    self.cache.put(rule, commit, tag, fresh[rule.id])
                if fresh[rule.id].state not in CACHEABLE:
                    self.notes.add(f"{rule.id}: {fresh[rule.id].reason}")
                    self.unavailable[(rule.id, tag)] = fresh[rule.id]
        return facts

    def matrix_at(self, tag: str) -> GateMatrix:
        if tag not in self._matrices:
            self._matrices[tag] = build_matrix(self.ruleset, self.facts_at(tag), self.targets, self.catalog)
        return self._matrices[tag]


def change_points(count: int, sig: Callable[[int], Any], *, every: bool = False) -> list[int]:
    """Indices ``i`` where ``sig(i - 1) != sig(i)``, by bisection (or by probing every index)."""
    if count < 2:
        if count == 1:
            sig(0)
        return []
    if every:
        return [i for i in range(1, count) if sig(i - 1) != sig(i)]
    points: list[int] = []
    stack = [(0, count - 1)]
    while stack:
        lo, hi = stack.pop()
        if sig(lo) == sig(hi):
            continue
        if hi - lo == 1:
            points.append(hi)
            continue
        mid = (lo + hi) // 2
        stack += [(mid, hi), (lo, mid)]
    return sorted(points)


# -- the result ---------------------------------------------------------------------------------------
@json_dataclass(frozen=True)
class Step(JsonRecord):
    """A layer's verdict for one target from ``tag`` on (``previous`` is the release before it)."""

    tag: str
    previous: str | None = json_field(name="previous_tag")
    kind: str | None
    verdict: Mapping[str, Any] = json_field(name="new")  # slim verdict JSON
    before: Mapping[str, Any] | None = json_field(default=None, name="old")


@dataclass(frozen=True)
class LayerHistory:
    layer: Layer
    target: str
    first: Step
    changes: tuple[Step, ...]


@dataclass(frozen=True)
class History:
    repo: str
    targets: tuple[str, ...]
    tags: tuple[str, ...]
    probed: tuple[str, ...]
    every_tag: bool
    prereleases: bool
    rows: tuple[LayerHistory, ...]
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        layers: dict[str, dict[str, Any]] = {}
        for row in self.rows:
            entry = layers.setdefault(row.layer.id, {"id": row.layer.id, "title": row.layer.title, "targets": []})
            entry["targets"].append(
                {
                    "target": row.target,
                    "first": {"tag": row.first.tag, **row.first.verdict},
                    "changes": [s.to_json() for s in row.changes],
                }
            )
        return document(
            "gate-history",
            {
                "repo": self.repo,
                "targets": list(self.targets),
                "method": "every-tag" if self.every_tag else "bisect",
                "prereleases": self.prereleases,
                "range": {
                    "from": self.tags[0],
                    "to": self.tags[-1],
                    "tags": len(self.tags),
                    "probed": len(self.probed),
                },
                "layers": list(layers.values()),
                "notes": list(self.notes),
            },
        )


def history(
    prober: TagProber,
    *,
    first: str | None = None,
    last: str | None = None,
    layers: list[str] | None = None,
    prereleases: bool = False,
    every_tag: bool = False,
) -> History:
    """Walk the release tags of ``prober.repo`` and record every change of the selected layers."""
    all_tags = sorted(prober.commits)
    tags = tag_window(prober.release_tags(prereleases=prereleases), first, last, all_tags)
    known_layers = [layer.id for layer in prober.ruleset.layers]
    for lid in layers or ():
        if lid not in known_layers:
            raise UsageError(f"layer {lid!r} is not read from {prober.repo}", hint="layers: " + ", ".join(known_layers))
    selected = [layer for layer in prober.ruleset.layers if not layers or layer.id in layers]
    # a target's rows are its vendor's layers (an AMD layer says nothing about sm_61): rules/layers.yaml vendors
    keys = [
        (layer.id, str(t)) for layer in selected for t in prober.targets if getattr(t, "vendor", "amd") in layer.vendors
    ]
    probed: list[str] = []
    sigs: dict[int, tuple] = {}

    def sig(i: int) -> tuple:
        if i not in sigs:
            probed.append(tags[i])
            full = signature(prober.matrix_at(tags[i]))
            sigs[i] = tuple(full[k] for k in keys)
        return sigs[i]

    points = change_points(len(tags), sig, every=every_tag)
    prober.cache.flush()
    rows = []
    for layer in selected:
        for target in prober.targets:
            key = (layer.id, str(target))
            if key not in keys:
                continue
            first_cell = prober.matrix_at(tags[0]).cells[key]
            steps = []
            for i in points:
                old, new = prober.matrix_at(tags[i - 1]).cells[key], prober.matrix_at(tags[i]).cells[key]
                if sigs[i - 1][keys.index(key)] == sigs[i][keys.index(key)]:
                    continue
                kind = classify(old.status.value, new.status.value) or EVIDENCE
                steps.append(Step(tags[i], tags[i - 1], kind, slim_verdict(new.to_json()), slim_verdict(old.to_json())))
            rows.append(
                LayerHistory(
                    layer, str(target), Step(tags[0], None, None, slim_verdict(first_cell.to_json())), tuple(steps)
                )
            )
    return History(
        repo=prober.repo,
        targets=tuple(str(t) for t in prober.targets),
        tags=tuple(tags),
        probed=tuple(sorted(probed, key=tags.index)),
        every_tag=every_tag,
        prereleases=prereleases,
        rows=tuple(rows),
        notes=tuple(sorted(prober.notes)),
    )
