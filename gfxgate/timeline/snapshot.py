"""The embedded timeline snapshot (rules/snapshots/timeline.json.zst): the default timeline, so a run works offline.

``gfxgate snapshot timeline`` computes the timeline of the default targets over every release of the ollama
clone it is given and stores it with the digests of everything it was computed from (the ollama-side gate
rules and the clr rule read at each release's coupled ROCm, the clr coupling, layers, routes, workarounds and the
target list). A snapshot whose inputs changed is stale: it is
refused with the command that rebuilds it, never rendered from old facts. The file is the timeline's JSON
(`gfxgate timeline --format json`, plus the input digests) compressed with zstandard: 1.5 MB of JSON, ~12 kB stored.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from pathlib import Path
from typing import Any, Callable

import msgpack
import orjson
import zstandard

from gfxgate.errors import GfxgateError, InputError, RuleError
from gfxgate.fsio import write_bytes_atomic
from gfxgate.resources import rules_dir
from gfxgate.timeline.model import Cell, RouteKey, Row, Timeline
from gfxgate.targets import catalog
from gfxgate import datacache
from gfxgate.datafiles import validate
from gfxgate.gate.route import default_routes, routes_for_os
from gfxgate.model import Evidence, Location, Status
from gfxgate.answer.route import StoredBackend, stored_route
from gfxgate.gate.workarounds import default_workarounds
from gfxgate.sources.versions import version_key

KIND = "gfxgate-timeline-snapshot"


def default_path(os: str = "linux") -> Path:
    """The embedded timeline of ``os``'s release: ``timeline.json.zst`` (Linux), ``timeline-windows.json.zst`` beside."""
    return rules_dir() / "snapshots" / ("timeline.json.zst" if os == "linux" else f"timeline-{os}.json.zst")


def default_targets() -> list[str]:
    """Every processor of rules/targets.yaml (generic targets aside), in the catalog's order (by family), then every
    NVIDIA architecture (sm_30 … sm_121).

    Not only those a rule happens to name: a target no rule names (gfx950, gfx1011 before a release lists them) is
    still a card someone asks about, and its row shows how each layer decides it."""
    cat = catalog()  # AMD's processors, then NVIDIA's architectures (issue 38)
    return [name for name, proc in cat.by_name.items() if not proc.is_generic] + list(cat.nvidia)


def first_release(ruleset, os: str) -> str | None:
    """The first release an OS's timeline starts at: for an OS other than Linux, the oldest lower bound of the
    ``versions`` of the rules that are that OS's alone (its own presets, packaging: Windows' from v0.30.0); before
    it gfxgate reads none of that release's own files, so its table would only repeat Linux's. None: every release."""
    if os == "linux":
        return None
    bounds = [
        m.group(1)
        for r in ruleset.rules
        if r.os == (os,) and r.versions
        for m in [re.search(r">=\s*([0-9][^,\s]*)", r.versions)]
        if m
    ]
    if not bounds:
        return None

    return "v" + min(bounds, key=lambda v: version_key("v" + v) or ())


def inputs(targets: list[str], os: str = "linux") -> dict[str, Any]:
    """Digests of what a timeline is computed from (the rules of ``os``'s release); a change to any of them makes the
    snapshot stale."""
    from gfxgate.gate.ruleset import default_rules
    from gfxgate.history.walk import rules_of_repo
    from gfxgate.sources.resolve import load_pins
    from gfxgate.timeline.compute import COUPLED

    pins = load_pins()
    rules = rules_of_repo(default_rules().for_os(os), pins, "ollama", COUPLED)
    root = rules_dir()

    import hashlib  # here: OpenSSL's libcrypto costs start-up time, and the digests are cached (_stale_reasons_cached)

    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()[:16]

    return {
        "rules": digest(json.dumps(sorted((r.id, r.digest) for r in rules.rules)).encode()),
        "layers": digest((root / "layers.yaml").read_bytes()),
        "routes": digest((root / "routes.yaml").read_bytes()),
        "workarounds": digest((root / "workarounds.yaml").read_bytes()),
        "couplings": digest(json.dumps([list(pins.couplings[name]) for name in COUPLED]).encode()),
        "targets": list(targets),
        "repo": pins.sources["ollama"].url,
        **({"os": os} if os != "linux" else {}),
    }


def build(timeline: Timeline, os: str = "linux") -> dict[str, Any]:
    from gfxgate.timeline.sentence import timeline_json  # here: the remedies read cells, not sentences

    return {
        "schema_version": 1,
        "kind": KIND,
        "inputs": inputs(list(timeline.targets), os),
        "timeline": timeline_json(timeline),
    }


def dumps(data: dict[str, Any]) -> bytes:
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":")) + "\n"
    return zstandard.ZstdCompressor(level=19).compress(text.encode("utf-8"))


def read(path: Path) -> dict[str, Any]:
    return _read(path)[1]


def _read(path: Path) -> tuple[bytes, dict[str, Any]]:
    """The snapshot file's bytes and its decoded JSON."""
    raw = _read_raw(path)
    return raw, _decode(path, raw)


def _read_raw(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError as exc:
        raise RuleError(
            f"{path}: no timeline snapshot",
            hint="run `gfxgate snapshot timeline --source ollama=CLONE --source clr=CLONE`, or use --live",
        ) from exc
    except OSError as exc:
        raise InputError(f"{path}: unreadable timeline snapshot: {exc.strerror or exc}") from exc


def _decode(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20))
    except (zstandard.ZstdError, ValueError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise InputError(f"{path}: not a zstandard-compressed timeline snapshot: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise InputError(f"{path}: not a gfxgate timeline snapshot")
    return data


def stale_reasons(data: dict[str, Any]) -> list[str]:
    stored = data.get("inputs") or {}
    now = inputs(list(stored.get("targets") or []), stored.get("os", "linux"))
    return [f"{key} changed since the snapshot was built" for key in now if stored.get(key) != now[key]]


# the rules files a snapshot's inputs are computed from (``inputs``: the gate rules, pins and couplings, layers,
# routes, workarounds, targets): the staleness verdict is a function of their bytes and the snapshot's
STALENESS_INPUTS = ("gates", "pins.toml", "layers.yaml", "routes.yaml", "workarounds.yaml", "targets.yaml")


def _input_bytes(raw: bytes) -> bytes:
    """The snapshot's bytes and those of every rules file its staleness is judged from, each named."""
    root = rules_dir()
    parts = [b"snapshot\0" + raw]
    for name in STALENESS_INPUTS:
        entry = root / name
        files = sorted(entry.glob("*.yaml")) if entry.is_dir() else [entry]
        parts += [str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() for f in files]
    return b"\0\0".join(parts)


def _stale_reasons_cached(path: Path, inputs: bytes, data: Callable[[], dict[str, Any]]) -> list[str]:
    """:func:`stale_reasons`, judged once per content of the shipped snapshot and the rules files it is computed
    from (gfxgate's rules cache, keyed by their bytes and gfxgate's version): a start-up then loads none of the gate
    rules or pins to re-derive the digests, and a process judges each content once (``keep``: the list kept is only
    ever copied). A snapshot outside the shipped rules is judged every time."""
    return list(datacache.cached(path, inputs, "stale-reasons", None, lambda: stale_reasons(data()), keep=True))


def _checked_lazily(path: Path | None, os: str = "linux") -> tuple[Path, bytes, Callable[[], dict[str, Any]], bytes]:
    """The snapshot's bytes, its JSON decoded when first asked for, and the bytes its staleness is judged from
    (:func:`_input_bytes`); refused when stale and checked against its schema (once per content: a cached verdict
    needs no decode)."""
    path = path or default_path(os)
    raw = _read_raw(path)
    decoded: list[dict[str, Any]] = []

    def data() -> dict[str, Any]:
        if not decoded:
            decoded.append(_decode(path, raw))
        return decoded[0]

    inputs = _input_bytes(raw)
    stale = _stale_reasons_cached(path, inputs, data)
    if stale:
        raise RuleError(
            f"{path}: the timeline snapshot is stale ({'; '.join(stale)})",
            hint="run `gfxgate snapshot timeline --source ollama=CLONE --source clr=CLONE`, or use --live",
        )

    def validated() -> bool:
        validate(data()["timeline"], "timeline", path, {})
        return True

    # The shipped snapshot's 1.5 MB of JSON is checked against its schema once per content (the verdict is
    # cached by the file's bytes and the schema's, like the rules); any other file is checked every time.
    datacache.cached(path, raw, "schema-checked", "timeline", validated, keep=True)
    return path, raw, data, inputs


def _checked(path: Path | None, os: str = "linux") -> tuple[Path, dict[str, Any]]:
    """The snapshot's decoded JSON, refused when stale and checked against its schema (once per content)."""
    path, _, data, _ = _checked_lazily(path, os)
    return path, data()


class Cells:
    """The snapshot's cells as the remedies and doctor read them (``tags``, ``targets``, ``row``, ``cell_at``, as on
    :class:`Timeline`): the same checked snapshot, each target's row decoded (:meth:`Cell.from_json`) when it is first
    asked for, not the 38 rows and the routes' key a rendered timeline needs."""

    def __init__(self, data: dict[str, Any], os: str = "linux") -> None:
        self.os = os  # whose release's routes the stored step ids are read back with
        self.tags: tuple[str, ...] = tuple(data["releases"])
        # a row's cells as JSON (from the snapshot) or as that JSON's bytes (from the rows' cache: load_cells)
        self._raw: dict[str, list[Any] | bytes] = {t["target"]: t["cells"] for t in data["targets"]}
        self.targets: tuple[str, ...] = tuple(self._raw)
        self._rows: dict[str, Row] = {}
        self._index = {tag: i for i, tag in enumerate(self.tags)}
        self._routes: dict[tuple[str, str], Any] = {}
        self._status: dict[tuple[str, str, str], tuple[str | None, str]] = {}

    def row(self, target: str) -> Row:
        row = self._rows.get(target)
        if row is None:
            raw = self._raw[target]
            cells = orjson.loads(raw) if isinstance(raw, bytes) else raw
            row = self._rows[target] = Row(target, tuple(Cell.from_json(c) for c in cells))
        return row

    def cell_at(self, target: str, tag: str) -> Cell:
        i = self._index[tag]
        return next(c for c in self.row(target).cells if self._index[c.first] <= i <= self._index[c.last])

    def route_at(self, target: str, tag: str):
        """The Route the timeline stored for ``target`` at ``tag`` (gfxgate.answer.route.Route), read back from its
        step ids once per (target, tag): what doctor's timeline answer, workarounds without a clone and diagnose's
        refusals read, the same record scan computes (tests/answer/test_views_agree.py holds them equal)."""
        key = (target, tag)
        route = self._routes.get(key)
        if route is None:
            cell = self.cell_at(target, tag)
            backends = [
                StoredBackend(
                    b.backend, b.state, b.label, b.phrase, b.reason, tuple(map(evidence, b.evidence)), b.steps
                )
                for b in cell.backends
            ]
            route = self._routes[key] = stored_route(
                target,
                tag,
                route=cell.route,
                label=cell.label,
                certain=cell.certain,
                reason=cell.reason,
                backends=backends,
                rules=routes_for_os(default_routes(), self.os),
                workarounds=default_workarounds(),
                evidence=tuple(map(evidence, cell.evidence)),
            )
        return route

    def at(self, tag: str) -> ReleaseView:
        """The stored statuses at one release, as the answer reads a release (gfxgate.answer.view.StatusView)."""
        return ReleaseView(self, tag)

    def status_where(self, target: str, tag: str, layer: str) -> tuple[str | None, str]:
        """The stored status of ``layer`` for ``target`` at ``tag`` and where it was read (the releases of its cell in
        gfxgate's timeline, and the flip that set it, ``repo@tag:path:line``); (None, "") when not stored."""
        key = (target, tag, layer)
        known = self._status.get(key)
        if known is None:
            known = self._status[key] = self._status_where(target, tag, layer)
        return known

    def _status_where(self, target: str, tag: str, layer: str) -> tuple[str | None, str]:
        if tag not in self._index or target not in self._raw:
            return None, ""
        i = self._index[tag]
        status, span, flipped = None, "", ""
        for cell in self.row(target).cells:
            if self._index[cell.first] > i:
                break
            layers = dict(cell.layers)
            if layer in layers:
                status, span = layers[layer], f"{cell.first} … {cell.last}"
            flipped = next((f.evidence[0].where for f in cell.start if f.layer == layer and f.evidence), flipped)
        return status, f"ollama {span} in gfxgate's timeline" + (f", set at {flipped}" if flipped else "")


_WHERE = re.compile(r"([^@:/]+)@([^:]+):(.+?)(?::([0-9]+))?")


def evidence(ev) -> Any:
    """A stored line (``timeline/model.py: Ev``, ``repo@tag:path:line``) as the answer's Evidence."""
    return _evidence(ev.where, ev.text, ev.source)


@functools.lru_cache(maxsize=1 << 14)  # the same lines stand in many cells (an Evidence is immutable)
def _evidence(where: str, text: str, source: str) -> Any:
    m = _WHERE.fullmatch(where)
    if m is None:
        return Evidence(source or "timeline", None, text, where)
    return Evidence(
        source or "timeline", Location(repo=m[1], ref=m[2], path=m[3], line=int(m[4]) if m[4] else None), text
    )


class ReleaseView:
    """The embedded timeline at one release as a status view (gfxgate.answer.view.StatusView): what the answer's
    checks read where no live matrix is (diagnose, doctor's fallback, workarounds without a clone)."""

    def __init__(self, cells: Cells, tag: str) -> None:
        self.cells_, self.tag = cells, tag

    def status_of(self, layer: str, target: str):
        status, _ = self.cells_.status_where(target, self.tag, layer)
        return Status(status) if status is not None else None

    def where_of(self, layer: str, target: str) -> str:
        return f"({self.cells_.status_where(target, self.tag, layer)[1]})"

    def evidence_of(self, layer: str, target: str) -> tuple:
        return ()


# The Cells read from the same bytes (the snapshot's and those of every rules file its staleness and its Routes are
# read back from: ``_input_bytes``), per path and OS, kept for the life of the process. Deliberately a plain dict, not
# a functools cache (which the in-process test runner, tests/inprocess.py, clears between two commands): a Cells holds
# only what those bytes determine (the rows decoded, the Routes read back with the shipped routes and workarounds,
# computed from the same files), so a later command gets the very answers a fresh decode would give, and a changed
# file is a new key (datacache.memo). The last few contents are kept (a snapshot per OS, a --snapshot FILE beside).
_CELLS: dict[tuple[str, str, bytes], Cells] = datacache.memo()
_CELLS_KEPT = 4


def load_cells(path: Path | None = None, os: str = "linux") -> Cells:
    """The snapshot's cells (:class:`Cells`) of ``os``'s release, refused when stale like :func:`load`.

    The remedies read a row or two of 62: for the shipped snapshot, each row's JSON is kept as bytes in a file of the
    user cache named by the snapshot's content (``datacache.side_file``), so a start-up reads that file and decodes
    the rows it asks for instead of the whole 2.8 MB of JSON (~20 ms of ``diagnose``). A missing, unreadable or
    foreign cache file is rebuilt from the snapshot. Within a process, the same bytes give the same Cells (``_CELLS``:
    doctor, workarounds and diagnose at many releases read each row and Route once)."""
    path, raw, data, inputs = _checked_lazily(path, os)
    key = (str(path), os, datacache.digest(inputs))
    kept = _CELLS.get(key)
    if kept is not None:
        return kept
    cells = _load_cells(path, raw, data, os)
    _CELLS[key] = cells
    for old in list(_CELLS)[:-_CELLS_KEPT]:
        del _CELLS[old]
    return cells


def _load_cells(path: Path, raw: bytes, data: Callable[[], dict[str, Any]], os: str) -> Cells:
    kind = "timeline-rows" if os == "linux" else f"timeline-{os}-rows"  # one cache file per OS's snapshot
    side = datacache.side_file(path, raw, kind)
    if side is not None:
        try:
            index = msgpack.unpackb(side.read_bytes(), raw=False)
            rows = index["targets"]
            if isinstance(rows, dict) and all(isinstance(v, bytes) for v in rows.values()):
                return Cells(
                    {"releases": index["releases"], "targets": [{"target": t, "cells": v} for t, v in rows.items()]}, os
                )
        except (OSError, ValueError, TypeError, KeyError):  # msgpack's errors are ValueErrors
            pass
    timeline = data()["timeline"]
    cells = Cells(timeline, os)
    if side is not None:
        blob = msgpack.packb(
            {
                "releases": list(cells.tags),
                "targets": {t["target"]: orjson.dumps(t["cells"]) for t in timeline["targets"]},
            }
        )
        with contextlib.suppress(OSError, GfxgateError):  # a read-only cache folder: decoded every time
            side.parent.mkdir(parents=True, exist_ok=True)  # the first file of a new cache folder
            for old in side.parent.glob(f"{kind}-[0-9]*.msgpack"):
                old.unlink(missing_ok=True)  # the rows of an earlier snapshot
            write_bytes_atomic(side, blob)
    return cells


# The Timeline of the same bytes (as _CELLS: the snapshot's and the rules files' it is read with), kept for the life of
# the process; a Timeline is immutable (frozen dataclasses and tuples), so every caller can share it.
_TIMELINES: dict[tuple[str, str, bytes], Timeline] = datacache.memo()


def load(path: Path | None = None, os: str = "linux") -> Timeline:
    """The embedded timeline of ``os``'s release (its routes' key: ``--os windows`` has the Windows routes)."""
    path, raw, data, inputs = _checked_lazily(path, os)
    key = (str(path), os, datacache.digest(inputs))
    timeline = _TIMELINES.get(key)
    if timeline is None:
        timeline = _TIMELINES[key] = Timeline.from_json(
            data()["timeline"], RouteKey.of(routes_for_os(default_routes(), os)), origin="snapshot"
        )
        for old in list(_TIMELINES)[:-_CELLS_KEPT]:
            del _TIMELINES[old]
    return timeline
