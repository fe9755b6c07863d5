"""The cache of the shipped rules: identical to a fresh parse, used when valid, ignored when not ours."""

from __future__ import annotations

import datetime
import os
import shutil
import stat
import subprocess
import sys

import pytest

from gfxgate import datacache, datafiles
from gfxgate.resources import rules_dir

pytestmark = pytest.mark.empty_cache  # the cache itself: a first run, missing, damaged and foreign caches


@pytest.fixture(autouse=True)
def _fresh_store():
    datacache.reset()  # the conftest gives every test its own GFXGATE_CACHE_DIR
    yield
    datacache.reset()


def _shipped():
    """(path, loader, schema) for every shipped data file a command reads."""
    root = rules_dir()
    files = [
        (root / "layers.yaml", "yaml", "layers"),
        (root / "targets.yaml", "yaml", "targets"),
        (root / "workarounds.yaml", "yaml", "workarounds"),
        (root / "routes.yaml", "yaml", "routes"),
        (root / "pins.toml", "toml", "pins"),
        (root / "snapshots" / "pins.json", "json", "snapshot"),
    ]
    files += [(p, "yaml", "gates") for p in sorted((root / "gates").glob("*.yaml"))]
    files += [(p, "yaml", "trace") for p in sorted((root / "traces").glob("*.yaml"))]
    return files


def _load(path, kind, schema):
    if kind == "yaml":
        return datafiles.load_yaml(path, schema)
    if kind == "toml":
        return datafiles.load_toml(path, schema)
    return datafiles.load_json(path, path.read_bytes(), schema)


def _same(a, b) -> bool:
    """Equal and of the same types all the way down (True == 1 == 1.0 would pass a plain ==)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(k, j) and _same(a[k], b[j]) for k, j in zip(a, b))
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("path,kind,schema", _shipped(), ids=lambda v: getattr(v, "name", None))
def test_cached_data_is_identical_to_a_fresh_parse(path, kind, schema, monkeypatch):
    monkeypatch.setenv("GFXGATE_NO_RULES_CACHE", "1")
    fresh = _load(path, kind, schema)
    monkeypatch.delenv("GFXGATE_NO_RULES_CACHE")
    first = _load(path, kind, schema)  # parses, validates and stores
    assert _same(first, fresh)
    datacache.reset()  # a new process: only the file on disk is left
    calls = []
    monkeypatch.setattr(datafiles, "validate", lambda *a, **k: calls.append(a))
    cached = _load(path, kind, schema)
    assert _same(cached, fresh) and not calls, "the second load must come from the cache, unvalidated"
    assert cached is not first and _load(path, kind, schema) is not cached  # fresh objects every time


def test_a_scan_from_the_cache_never_imports_yaml_or_jsonschema(tmp_path):
    env = {**os.environ, "GFXGATE_CACHE_DIR": str(tmp_path)}
    code = (
        "import sys; from gfxgate.cli import main\n"
        "try:\n    main(['scan', '-t', 'gfx900', '--format', 'json', '-o', sys.argv[1]])\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in ('yaml', 'jsonschema', 'tomllib') if m in sys.modules))"
    )
    out = [
        subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / f"m{i}.json")],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        for i in range(2)
    ]
    assert out[0] != "[]", "the first run parses (otherwise this test proves nothing)"
    assert out[1] == "[]"
    assert (tmp_path / "m0.json").read_bytes() == (tmp_path / "m1.json").read_bytes()


def _corrupt(blob: bytes) -> bytes:
    return blob[:-5] + bytes(b ^ 0xFF for b in blob[-5:])


@pytest.mark.parametrize(
    "damage", ["flip-bytes", "truncate", "garbage", "empty", "wrong-magic", "group-writable", "symlink", "folder"]
)
def test_a_damaged_or_foreign_cache_is_ignored_and_rebuilt(damage, monkeypatch, tmp_path):
    path = rules_dir() / "targets.yaml"
    fresh = datafiles.load_yaml(path, "targets")
    cache = datacache.cache_file()
    blob = cache.read_bytes()
    if damage == "flip-bytes":
        cache.write_bytes(_corrupt(blob))
    elif damage == "truncate":
        cache.write_bytes(blob[: len(blob) // 2])
    elif damage == "garbage":
        cache.write_bytes(os.urandom(len(blob)))
    elif damage == "empty":
        cache.write_bytes(b"")
    elif damage == "wrong-magic":
        cache.write_bytes(b"X" + blob[1:])
    elif damage == "group-writable":
        cache.chmod(0o664)
    elif damage == "symlink":
        (tmp_path / "elsewhere").write_bytes(blob)
        cache.unlink()
        cache.symlink_to(tmp_path / "elsewhere")
    else:
        cache.unlink()
        cache.mkdir()
    datacache.reset()
    parsed = []
    real = datafiles._parse_yaml
    monkeypatch.setattr(datafiles, "_parse_yaml", lambda *a: parsed.append(a) or real(*a))
    assert _same(datafiles.load_yaml(path, "targets"), fresh)
    assert parsed, "a cache that is not trustworthy must not be used"
    if damage != "folder":
        assert cache.is_file() and not cache.is_symlink() and not cache.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        datacache.reset()
        parsed.clear()
        assert _same(datafiles.load_yaml(path, "targets"), fresh)
        assert not parsed, "the rebuilt cache is used again"


def test_a_well_formed_cache_entry_for_other_bytes_is_never_served(monkeypatch):
    """Entries are keyed by the content hash of the file: an entry made for other bytes is a miss."""
    path = rules_dir() / "layers.yaml"
    fresh = datafiles.load_yaml(path, "layers")
    store = datacache._store()
    slot = next(s for s in store.entries if s.startswith("layers.yaml|"))
    key = store.entries[slot][0]
    store.put(slot, "0" * len(key), {"layers": []})  # a forged entry under a wrong key, correctly checksummed
    datacache.reset()
    assert _same(datafiles.load_yaml(path, "layers"), fresh)


def test_user_rules_are_never_cached(tmp_path):
    root = tmp_path / "rules"
    shutil.copytree(rules_dir(), root)
    from gfxgate.gate.ruleset import load_rules

    load_rules(root)
    assert not datacache.cache_file().exists()


def test_edited_shipped_bytes_are_parsed_again(monkeypatch):
    path = rules_dir() / "layers.yaml"
    datafiles.load_yaml(path, "layers")
    raw = path.read_bytes() + b"\n# edited\n"
    original = datafiles._read  # the one reader of rules files (size-checked before the read)
    monkeypatch.setattr(datafiles, "_read", lambda p: raw if p == path else original(p))
    parsed = []
    real = datafiles._parse_yaml
    monkeypatch.setattr(datafiles, "_parse_yaml", lambda *a: parsed.append(a) or real(*a))
    datafiles.load_yaml(path, "layers")
    assert parsed


def test_values_msgpack_cannot_give_back_unchanged_are_not_cached():
    store = datacache._store()
    for value in (
        {"when": datetime.date(2024, 1, 1)},
        {"n": 1 << 70},
        {"s": {1, 2}},
        {"t": (1, 2)},
        {"x": float("nan")},
    ):
        store.put("probe", "k", value)
        assert store.get("probe", "k") == (False, None)


def test_two_installations_sharing_the_cache_both_keep_their_entries(monkeypatch):
    """Two contents of one shipped file (a release and a checkout) alternate without parsing again; only the
    last VERSIONS contents of a file are kept."""
    path = rules_dir() / "layers.yaml"
    original = datafiles._read  # the one reader of rules files (size-checked before the read)
    contents = [original(path)] + [original(path) + f"\n# edit {i}\n".encode() for i in range(datacache.VERSIONS + 1)]
    parsed = []
    real = datafiles._parse_yaml
    monkeypatch.setattr(datafiles, "_parse_yaml", lambda *a: parsed.append(a) or real(*a))

    def load(raw: bytes):
        monkeypatch.setattr(datafiles, "_read", lambda p: raw if p == path else original(p))
        datacache.reset()  # each load is a new process
        return datafiles.load_yaml(path, "layers")

    first, edited = load(contents[0]), load(contents[1])
    parsed.clear()
    assert _same(load(contents[0]), first) and _same(load(contents[1]), edited)
    assert not parsed, "both contents come from the cache"
    for raw in contents[2:]:
        load(raw)
    parsed.clear()
    load(contents[-1])
    assert not parsed
    load(contents[0])  # the oldest content was dropped
    assert parsed
