"""The shipped rules, parsed and validated once: a cache of the data each shipped file yields.

Parsing the YAML under ``rules/`` and validating it against its JSON Schema costs more than a scan of
the embedded snapshot itself, yet the shipped files only change with gfxgate. So the first run stores
each shipped file's validated data in one msgpack file in the user cache folder, keyed by the BLAKE2b
hash of the file's bytes, of the schema it was checked against, the loader and gfxgate's version; later
runs hash the file (microseconds) and take the data from the cache without importing YAML or
jsonschema. Files outside the shipped rules (``--rules DIR``, ``--snapshot FILE``) are never cached.

Several gfxgate installations (a release and a development checkout, two virtual environments) share
one user cache: each file keeps the entries of its last few contents (``VERSIONS``), so alternating
between them does not parse and rewrite the cache on every run.

The cache is a convenience, never an authority: a file that is missing, not ours, writable by others,
fails its own checksum or does not decode is ignored and rebuilt; a key is a content hash, so an
entry can only ever be the data of the very same bytes. Data a cache cannot hold faithfully (dates,
sets, huge integers) is simply not cached.
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import Any, Callable

import msgpack

from gfxgate import __version__
from gfxgate.resources import cache_dir, rules_dir, schemas_dir
from gfxgate.errors import GfxgateError
from gfxgate.fsio import write_bytes_atomic

try:  # CPython's own BLAKE2 module: importing hashlib also loads OpenSSL's libcrypto (12 M instructions, the
    # largest part of a warm cache lookup), which nothing else on the paths that read the rules needs
    from _blake2 import blake2b as _blake2b
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import blake2b as _blake2b


def _hash(data: bytes = b"") -> Any:
    return _blake2b(data, digest_size=32)


FORMAT = 3  # bump when the stored layout or a loader's semantics change (2: an entry per content, not per file;
# 3: BLAKE2b keys and checksum instead of SHA-256)
_MAGIC = b"gfxgate-rules-cache\n"
_DIGEST = 32  # bytes of BLAKE2b-256 over the payload, right after the magic
MAX_CACHE_BYTES = 16 << 20  # the shipped rules are ~150 KB; anything far bigger is not ours
VERSIONS = 4  # entries kept per shipped file and way of reading it (the most recently stored ones)


def cache_file() -> Path:
    return cache_dir() / f"rules-{FORMAT}.msgpack"


def _disabled() -> bool:
    return os.environ.get("GFXGATE_NO_RULES_CACHE", "") not in ("", "0")


@functools.cache
def _shipped_root() -> Path:
    return rules_dir().resolve()


def is_shipped(path: Path) -> bool:
    """Whether ``path`` is one of gfxgate's own data files (the only ones this cache holds)."""
    return _shipped_relpath(path) is not None


def _shipped_relpath(path: Path) -> str | None:
    """``path`` relative to the shipped rules (its real path: links resolved), or None when it is not one of them."""
    try:
        real = Path(os.path.realpath(path))
        return str(real.relative_to(_shipped_root())) if real.is_relative_to(_shipped_root()) else None
    except (OSError, ValueError):
        return None


@functools.cache
def _schema_digest(schema: str | None) -> str:
    if schema is None:
        return "-"

    h = _hash((schemas_dir() / f"{schema}.schema.json").read_bytes())
    if schema == "gates":  # each matcher's params schema is part of it (gfxgate.matchers.gates_schema)
        for module in sorted((Path(__file__).parent / "matchers").glob("*.py")):
            h.update(module.name.encode() + b"\0" + module.read_bytes())
    return h.hexdigest()


def digest(data: bytes) -> bytes:
    """The content key of ``data`` (BLAKE2b-256, as the cache's keys): for a memo of what some bytes determine."""
    return _hash(data).digest()


def key(kind: str, raw: bytes, schema: str | None) -> str:
    """Content key: the file's bytes, how they are read (kind), the schema's bytes, gfxgate's version."""
    h = _hash()
    for part in (str(FORMAT), __version__, kind, _schema_digest(schema)):
        h.update(part.encode() + b"\0")
    h.update(raw)
    return h.hexdigest()


class _Store:
    """The cache file's entries as read at start-up: ``{slot: [key, packed data]}``, a slot per shipped file,
    way of reading it and content key (at most ``VERSIONS`` per file, oldest dropped first); ``put`` rewrites
    the whole file atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.foreign = False  # a file at the path that is not a cache this user wrote: replaced, never trusted
        self.entries: dict[str, list] = self._read()

    def _read(self) -> dict[str, list]:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except FileNotFoundError:
            return {}
        except OSError:
            self.foreign = True  # e.g. a symbolic link (O_NOFOLLOW)
            return {}
        try:
            info = os.fstat(fd)
            if (
                not stat.S_ISREG(info.st_mode)
                or info.st_size > MAX_CACHE_BYTES
                or (hasattr(os, "getuid") and info.st_uid != os.getuid())
                or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
            ):
                self.foreign = True
                return {}  # not a file this user wrote for itself: ignored, and replaced on the next write
            blob = os.read(fd, MAX_CACHE_BYTES + 1)
        except OSError:
            return {}
        finally:
            os.close(fd)
        head, digest, payload = (
            blob[: len(_MAGIC)],
            blob[len(_MAGIC) : len(_MAGIC) + _DIGEST],
            blob[len(_MAGIC) + _DIGEST :],
        )
        if head != _MAGIC or _hash(payload).digest() != digest:
            return {}

        try:
            data = msgpack.unpackb(payload, raw=False)
        except Exception:  # noqa: BLE001 - any decoding problem means: not a cache we wrote
            return {}
        if not isinstance(data, dict):
            return {}
        return {
            slot: entry
            for slot, entry in data.items()
            if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], bytes)
        }

    def get(self, slot: str, k: str) -> tuple[bool, Any]:
        entry = self.entries.get(slot)
        if entry is None or entry[0] != k:
            return False, None

        try:  # each entry is unpacked on its own, so every caller gets fresh objects, as from a fresh parse
            return True, msgpack.unpackb(entry[1], raw=False, strict_map_key=False)
        except Exception:  # noqa: BLE001 - an entry that does not decode is recomputed
            return False, None

    def put(self, slot: str, k: str, value: Any) -> None:
        try:
            blob = msgpack.packb(value, use_bin_type=True, strict_types=True)
        except (TypeError, ValueError, OverflowError):
            return  # a type msgpack would not give back unchanged (datetime, set, tuple, big int): not cached
        if msgpack.unpackb(blob, raw=False, strict_map_key=False) != value:
            return  # e.g. NaN: not equal to itself, so not provably the same after a round trip
        self.entries.pop(slot, None)
        self.entries[slot] = [k, blob]  # last in order: the most recent
        same_file = slot.rpartition("|")[0] + "|"
        older = [s for s in self.entries if s.startswith(same_file)][:-VERSIONS]
        for s in older:
            del self.entries[s]
        payload = msgpack.packb(self.entries, use_bin_type=True)
        _write(self.path, _MAGIC + _hash(payload).digest() + payload, replace_foreign=self.foreign)
        self.foreign = False


def _write(path: Path, data: bytes, *, replace_foreign: bool) -> None:
    """Write the cache with gfxgate's one atomic writer; best effort (a cache that cannot be written only
    costs speed). A file that was not ours (a link, wrong owner or mode) is removed first, never written through."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if replace_foreign and (path.is_symlink() or path.is_file()):
            path.unlink()
        write_bytes_atomic(path, data)
    except (OSError, GfxgateError):
        pass


@functools.cache
def _store() -> _Store:
    return _Store(cache_file())


_MEMOS: list[dict] = []


def memo() -> dict:
    """A dict for what some bytes determine, kept for the life of the process (the pins of a pins file's bytes, the
    timeline's cells of the snapshot's): keyed by content, so it never answers for other bytes. Not a functools cache,
    which the in-process test runner (tests/inprocess.py) clears between two commands; :func:`reset` empties it, as
    a new process starts."""
    kept: dict = {}
    _MEMOS.append(kept)
    return kept


_KEPT: dict[str, Any] = memo()  # cached(keep=True): content key -> value


def reset() -> None:
    """Forget what this process read from the cache and what it derived from the rules' bytes (tests: as a new
    process; after GFXGATE_CACHE_DIR changes)."""
    _store.cache_clear()
    _shipped_root.cache_clear()
    _schema_digest.cache_clear()
    for kept in _MEMOS:
        kept.clear()


def side_file(path: Path, raw: bytes, kind: str) -> Path | None:
    """Where a derived form of the shipped file ``path`` (content ``raw``) is kept beside the rules cache, named by
    its content key: for data too large for the one store every start-up reads (the timeline's rows, read by the
    remedies). None when the cache is off or the file is not gfxgate's own."""
    if _disabled() or not is_shipped(path):
        return None
    return cache_dir() / f"{kind}-{FORMAT}-{key(kind, raw, None)[:32]}.msgpack"


def cached(
    path: Path, raw: bytes, kind: str, schema: str | None, parse: Callable[[], Any], *, keep: bool = False
) -> Any:
    """``parse()`` (which reads and validates ``raw``), or the data it gave last time for these very bytes.

    Only gfxgate's shipped files are cached; errors from ``parse`` propagate and are never cached. ``keep``: the
    value is also kept in this process by its content key (:func:`memo`) and that very object is answered again, so
    only for a value nobody changes (a verdict: True, a list its caller copies); a process whose cache folder is new or
    unwritable then judges each content once, not at every call.
    """
    if _disabled():
        return parse()
    relative = _shipped_relpath(path)  # one realpath for both questions: every rules file a start-up reads is here
    if relative is None:
        if not is_shipped(path):
            return parse()
        relative = os.path.relpath(os.path.realpath(path), _shipped_root())  # a stand-in is_shipped (tests)
    k = key(kind, raw, schema)
    if keep and k in _KEPT:
        return _KEPT[k]
    value = _cached(relative, k, kind, schema, parse)
    if keep:
        _KEPT[k] = value
    return value


def _cached(relative: str, k: str, kind: str, schema: str | None, parse: Callable[[], Any]) -> Any:
    slot = f"{relative}|{kind}|{schema or ''}|{k}"
    store = _store()
    hit, value = store.get(slot, k)
    if hit:
        return value
    value = parse()
    store.put(slot, k, value)
    return value
