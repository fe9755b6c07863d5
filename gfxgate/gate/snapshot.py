"""The embedded snapshot: the facts gfxgate itself extracted from the pinned tags.

``gfxgate snapshot build`` runs every gate rule's matcher against live sources at the pins and
writes commit SHAs, paths, lines, matched lines and matcher inputs to
``rules/snapshots/pins.json``. ``gfxgate scan`` evaluates targets from it, offline. A rule whose
definition changed since the snapshot was built, or a pin that moved, is reported as stale
(unknown, with the reason) — never evaluated from old facts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from gfxgate.datafiles import load_json, read_limited
from gfxgate.gate.engine import MATCHED, UNAVAILABLE, RuleFacts, collect_facts
from gfxgate.errors import InputError, RuleError
from gfxgate.model import SourceInfo
from gfxgate.resources import rules_dir
from gfxgate.gate.ruleset import RuleSet
from gfxgate.sources.resolve import Pins, SourceSet

MAX_SNAPSHOT_BYTES = 16 << 20  # the embedded snapshot is ~45 KB

SNAPSHOT_VERSION = 1


def default_path() -> Path:
    return rules_dir() / "snapshots" / "pins.json"


def pin_set_path(name: str) -> Path:
    """The snapshot of the pin set ``name`` of rules/pins.toml (``[pin_sets.study]``: pins-study.json)."""
    return rules_dir() / "snapshots" / f"pins-{name}.json"


class Snapshot(NamedTuple):
    """The embedded evidence: facts per rule extracted at the pinned tags, with the sources they came from."""

    pins: dict[str, dict[str, str]]
    sources: tuple[SourceInfo, ...]
    facts: dict[str, RuleFacts]
    notes: tuple[str, ...]
    released: dict[str, str] = {}  # source -> the date (YYYY-MM-DD) of the commit at its recorded ref

    def usable_facts(self, ruleset: RuleSet, pins: Pins) -> tuple[dict[str, RuleFacts], list[str]]:
        """Facts still valid for these rules and pins, and a note for everything left out."""
        notes = []
        # A pin neither recorded in the snapshot nor read by any gate rule (e.g. clr, which only the message
        # catalogue reads) cannot make the snapshot stale.
        used = {r.repo for r in ruleset.rules}
        for layout in pins.layouts.values():
            if layout.name in used:
                used |= {layout.vendored_in, layout.upstream}
        moved = {
            name
            for name, pin in pins.sources.items()
            if (name in self.pins or name in used)
            and (self.pins.get(name, {}).get("ref") != pin.ref or self.pins.get(name, {}).get("url") != pin.url)
        }
        for name in sorted(moved):
            notes.append(
                f"snapshot is stale for {name}: built at {self.pins.get(name, {}).get('ref', 'nothing')}, pinned {pins.sources[name].ref} "
                "— run `gfxgate snapshot build`"
            )
        usable = {}
        for rule in ruleset.rules:
            rf = self.facts.get(rule.id)
            if rf is None or rf.digest != rule.digest:
                continue  # the engine reports such rules as "no evidence recorded"
            if rf.repo in moved or (rule.repo in moved):
                continue
            usable[rule.id] = rf
        stale = [r.id for r in ruleset.rules if r.id not in usable and r.id in self.facts]
        if stale:
            notes.append(
                "snapshot facts ignored for changed rules: " + ", ".join(stale) + " — run `gfxgate snapshot build`"
            )
        return usable, notes


def beyond_note(repo: str, ref: str) -> str:
    """What a cell of a route beyond the release says when its source could not be read and the embedded snapshot's
    facts of the same pin answer (a live scan, a snapshot build without that clone): the same words in both."""
    return f"{repo} cannot be read here: evidence from the embedded snapshot of {repo}@{ref}"


def _keep_beyond(data: dict[str, Any], ruleset: RuleSet, pins: Pins, previous: Path) -> dict[str, Any]:
    """A source beyond the release (rules/pins.toml ``beyond = true``) that this build could not read keeps the facts
    the previous snapshot holds for the same pin and rule definition, with the note that says so: a rebuild on a
    machine without that clone must not turn its answers unknown."""
    beyond = {name for name, pin in pins.sources.items() if pin.beyond}
    lost = [r for r in ruleset.rules if r.repo in beyond and data["rules"].get(r.id, {}).get("state") == UNAVAILABLE]
    if not lost or not previous.is_file():
        return data
    try:
        old = load_json(previous, read_limited(previous, MAX_SNAPSHOT_BYTES, "a snapshot file"), "snapshot")
    except (RuleError, InputError, OSError, ValueError):
        return data  # no usable previous snapshot: the rules stay unavailable, with their reason
    kept: set[str] = set()
    for rule in lost:
        rf, pin = old["rules"].get(rule.id), pins.sources[rule.repo]
        if (
            rf is None
            or rf.get("state") != MATCHED
            or rf.get("digest") != rule.digest
            or old["pins"].get(rule.repo) != {"url": pin.url, "ref": pin.ref}
        ):
            continue
        data["rules"][rule.id] = {**rf, "note": beyond_note(rule.repo, pin.ref)}
        kept.add(rule.repo)
    data["sources"] = sorted(
        [s for s in data["sources"] if s["name"] not in kept] + [s for s in old["sources"] if s["name"] in kept],
        key=lambda s: s["name"],
    )
    data["released"] = dict(
        sorted({**data["released"], **{k: v for k, v in old.get("released", {}).items() if k in kept}}.items())
    )
    return data


def build(ruleset: RuleSet, sources: SourceSet, pins: Pins, previous: Path | None = None) -> dict[str, Any]:
    """Collect facts at the pins; the result is what ``rules/snapshots/pins.json`` holds. ``previous``: the snapshot
    whose facts a source beyond the release that cannot be read keeps (default: the shipped one)."""
    facts = collect_facts(ruleset, sources)
    infos, released, local = [], {}, {}
    for src in sources.opened():
        info = src.info()
        # record the pinned URL, never a local mirror path: the snapshot must be machine-independent
        pin = pins.sources.get(info.name)
        if pin and info.url != pin.url:
            local[info.url] = pin.url
        infos.append(
            {**info.to_json(), "url": pin.url if pin else info.url, "origin": "git" if info.commit else info.origin}
        )
        date = src.commit_date() if hasattr(src, "commit_date") else None
        if date:
            released[info.name] = date
    data = {
        "schema_version": SNAPSHOT_VERSION,
        "kind": "gfxgate-snapshot",
        "pins": {name: {"url": pin.url, "ref": pin.ref} for name, pin in sorted(pins.sources.items())},
        "sources": sorted(infos, key=lambda s: s["name"]),
        "released": dict(sorted(released.items())),
        "notes": sorted(set(sources.notes)),
        "rules": {rule_id: rf.to_json() for rule_id, rf in sorted(facts.items())},
    }
    data = _keep_beyond(data, ruleset, pins, previous or default_path())
    return _without_local_paths(data, local) if local else data


def _without_local_paths(data: dict[str, Any], local: dict[str, str]) -> dict[str, Any]:
    """Notes and reasons name a local clone given with --source ("unknown tag … in /path/to/clr"): they name the
    pinned URL instead, as the sources do. Only those texts, and only paths with a folder in them (a bare name such
    as ``ollama`` is also a word of every note)."""
    paths = sorted((p for p in local if "/" in p), key=len, reverse=True)  # longest first: a path inside another

    def scrub(text: str | None) -> str | None:
        for path in paths:
            text = text.replace(path, local[path]) if text else text
        return text

    data["notes"] = sorted({scrub(n) for n in data["notes"]})
    for rf in data["rules"].values():
        for key in ("reason", "note"):
            if rf.get(key):
                rf[key] = scrub(rf[key])
    return data


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path | None = None) -> Snapshot:
    path = path or default_path()
    try:  # sized before the read (`scan --snapshot FILE`): a regular file of at most MAX_SNAPSHOT_BYTES
        data = load_json(path, read_limited(path, MAX_SNAPSHOT_BYTES, "a snapshot file"), "snapshot")
    except RuleError:
        if not os.path.lexists(path):
            raise RuleError(
                f"{path}: no embedded snapshot", hint="run `gfxgate snapshot build`, or scan with --live"
            ) from None
        raise
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: unreadable snapshot: {exc}") from exc
    return Snapshot(
        pins=data["pins"],
        sources=tuple(SourceInfo(**{**s, "origin": "snapshot"}) for s in data["sources"]),
        facts={rule_id: RuleFacts.from_json(rf) for rule_id, rf in data["rules"].items()},
        notes=tuple(data.get("notes", ())),
        released=dict(data.get("released") or {}),
    )
