"""Gate rules and layers: loaded once from rules/, validated by schema and cross-checked at load.

A rule is pure data: which layer, which repository and versions, which files, which matcher
with which parameters, and the remedy text. Line numbers are never stored: matchers find them.
"""

from __future__ import annotations

import functools
import json
from dataclasses import field
from pathlib import Path
from typing import Any, NamedTuple

from gfxgate import datacache
from gfxgate.datafiles import load_yaml, load_yaml_entries
from gfxgate.errors import RuleError
from gfxgate.gate.matrix import Layer, RuleLocation
from gfxgate.model import DEFAULT_OS, Status, os_of
from gfxgate.records import dataclass
from gfxgate.resources import rules_dir
from gfxgate.sources.base import safe_relpath
from gfxgate.sources.resolve import load_pins
from gfxgate.sources.versions import in_range

try:  # CPython's own SHA-256 (3.11: _sha256, 3.12+: _sha2): importing hashlib also loads OpenSSL's libcrypto, which
    # nothing else on the paths that load the rules needs (datacache.py does the same for BLAKE2)
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - another interpreter
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256 as _sha256


class StatusWhen(NamedTuple):
    """A rule's conditional status: ``then`` when layer ``layer`` has one of the statuses ``is_``."""

    layer: str
    is_: tuple[Status, ...]
    then: Status


@dataclass(frozen=True)
class GateRule:
    """One gate rule of ``rules/gates/*.yaml``: which files of which repository a matcher reads, and the remedy."""

    id: str
    layer: str
    title: str
    repo: str
    paths: tuple[str, ...]
    matcher: str
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    versions: str | None = None
    remedy: str | None = None
    status_default: Status | None = None
    status_when: tuple[StatusWhen, ...] = ()
    summary: str | None = None
    absent: dict[str, Any] | None = field(default=None, hash=False, compare=False)  # decides when nothing is found
    defined_in: str = ""  # rules file, for messages
    line: int = 0  # 1-based line of the rule's entry in defined_in (0: not known)
    uri: str = ""  # defined_in as SARIF names it (see rules_uri)
    raw: dict[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)
    os: tuple[str, ...] = (DEFAULT_OS,)  # the releases (OS) the rule describes (`os:`; absent: the Linux release)

    @property
    def digest(self) -> str:
        """Stable hash of the rule's definition: a snapshot made with another definition is stale. `os` only selects
        the rule (its facts do not depend on it), so it is not part of the hash."""
        return _sha256(
            json.dumps({k: v for k, v in self.raw.items() if k != "os"}, sort_keys=True).encode()
        ).hexdigest()[:16]


class RuleSet(NamedTuple):
    """The layers and gate rules, validated and cross-checked as loaded."""

    layers: tuple[Layer, ...]
    rules: tuple[GateRule, ...]

    def layer(self, layer_id: str) -> Layer:
        return next(layer for layer in self.layers if layer.id == layer_id)

    def for_layer(self, layer_id: str) -> list[GateRule]:
        return [r for r in self.rules if r.layer == layer_id]

    def locations(self) -> tuple[RuleLocation, ...]:
        return tuple(RuleLocation(r.id, r.layer, r.uri, r.line) for r in self.rules if r.uri)

    def vendors(self) -> frozenset[str]:
        """The vendors whose targets these rules answer (a source layer of theirs is here): for the Windows
        release AMD's alone, until NVIDIA's Windows runners have rules."""
        return frozenset(v for layer in self.layers if layer.kind == "source" for v in layer.vendors)

    def for_os(self, os: str) -> RuleSet:
        """The layers and rules of the release for ``os`` (``--os``): the one place rules are selected by OS."""
        return RuleSet(
            layers=tuple(la for la in self.layers if os in la.os), rules=tuple(r for r in self.rules if os in r.os)
        )


@functools.cache
def _shipped_rules() -> Path:
    return rules_dir().resolve()


def rules_uri(path: Path) -> str:
    """A rules file as a SARIF location names it: a shipped file as this repository spells it
    (``rules/gates/x.yaml``, whatever the install layout); a file of a ``--rules DIR`` folder relative to the
    working folder when it is below it (a checkout's own rules), else as a ``file://`` URI."""
    path = path.resolve()
    try:
        return "rules/" + path.relative_to(_shipped_rules()).as_posix()
    except ValueError:
        pass
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_uri()


def _rule(raw: dict, layer: str, path: Path, line: int, uri: str) -> GateRule:
    status = raw.get("status") or {}
    return GateRule(
        id=raw["id"],
        layer=layer,
        title=raw["title"],
        repo=raw["repo"],
        paths=tuple(raw["paths"]),
        matcher=raw["matcher"],
        params=dict(raw.get("params") or {}),
        versions=raw.get("versions"),
        remedy=raw.get("remedy"),
        status_default=Status(status["default"]) if status else None,
        status_when=tuple(
            StatusWhen(w["layer"], tuple(Status(s) for s in w["is"]), Status(w["then"])) for w in status.get("when", ())
        ),
        summary=raw.get("summary"),
        absent=raw.get("absent"),
        defined_in=str(path),
        line=line,
        uri=uri,
        raw=raw,
        os=os_of(raw),
    )


def load_rules(root: Path | None = None, repos: set[str] | None = None) -> RuleSet:
    """Load layers.yaml and gates/*.yaml under ``root`` (default: the shipped rules)."""
    from gfxgate.matchers import MATCHERS

    root = root or rules_dir()
    inputs = [b"layers.yaml\0" + (root / "layers.yaml").read_bytes()]
    layer_data = load_yaml(root / "layers.yaml", "layers")
    layers = tuple(
        Layer(
            **{
                **entry,
                "backends": tuple(entry.get("backends", ())),
                "vendors": tuple(entry.get("vendors", ("amd",))),
                "os": os_of(entry),
            }
        )
        for entry in layer_data["layers"]
    )
    layer_ids = {layer.id for layer in layers}
    if len(layer_ids) != len(layers):
        raise RuleError(f"{root / 'layers.yaml'}: duplicate layer id")
    rules: list[GateRule] = []
    seen: dict[str, str] = {}
    for path in sorted((root / "gates").glob("*.yaml")):
        data, lines = load_yaml_entries(path, "gates", "rules")
        if data["layer"] not in layer_ids:
            raise RuleError(f"{path}: unknown layer {data['layer']!r} (known: {', '.join(sorted(layer_ids))})")
        layer_os = next(layer.os for layer in layers if layer.id == data["layer"])
        uri = rules_uri(path)
        inputs.append(path.name.encode() + b"\0" + path.read_bytes())
        for index, raw in enumerate(data["rules"]):
            rule = _rule(raw, data["layer"], path, lines[index] if index < len(lines) else 0, uri)
            if rule.id in seen:
                raise RuleError(f"{path}: duplicate rule id {rule.id!r} (also in {seen[rule.id]})")
            seen[rule.id] = str(path)
            if not set(rule.os) <= set(layer_os):  # a rule of a release whose matrix has no such row would never show
                raise RuleError(f"{path}: rule {rule.id}: os {list(rule.os)} is not among its layer's {list(layer_os)}")
            if rule.matcher not in MATCHERS:
                raise RuleError(f"{path}: rule {rule.id}: unknown matcher {rule.matcher!r}")
            if repos is not None and rule.repo not in repos:
                raise RuleError(
                    f"{path}: rule {rule.id}: unknown repo {rule.repo!r} (known: {', '.join(sorted(repos))})"
                )
            for when in rule.status_when:
                if when.layer not in layer_ids:
                    raise RuleError(f"{path}: rule {rule.id}: status.when names unknown layer {when.layer!r}")
            rules.append(rule)
    inputs.append(b"repos\0" + "\n".join(sorted(repos or ())).encode())

    def checked() -> bool:
        for rule in rules:
            _check_rule(rule, MATCHERS)
        return True

    # The checks beyond the schema (each rule's paths, versions and matcher params: ~100 RE2 compilations) run once
    # per content of the shipped rules, the pins' repositories and the matchers' code (the "gates" schema's digest
    # holds matchers/*.py), then are taken from the rules cache, as gate/route.py's routes-checked: a `scan` of an
    # unchanged install does not recheck them at every start-up. A --rules folder of one's own is checked each time.
    datacache.cached(root / "layers.yaml", b"\0\0".join(inputs), "gates-checked", "gates", checked)
    return RuleSet(layers=layers, rules=tuple(rules))


def _check_rule(rule: GateRule, matchers: Any) -> None:
    """A rule's checks beyond the schema: safe paths, a version range that parses, its matcher's ``check_params``."""
    for p in rule.paths:
        safe_relpath(p)
    if rule.versions:
        try:
            in_range("v1.0.0", rule.versions)
        except ValueError as exc:
            raise RuleError(f"{rule.defined_in}: rule {rule.id}: {exc}") from exc
    check = getattr(matchers[rule.matcher], "check_params", None)  # optional: checks beyond the schema
    if check is not None:
        check(rule)


@functools.cache
def layer_ids() -> frozenset[str]:
    """The shipped layers' ids (rules/layers.yaml alone): what the message catalogue and the workarounds are checked
    against, without loading and checking every gate rule (and importing the matchers) as default_rules does."""
    return frozenset(entry["id"] for entry in load_yaml(rules_dir() / "layers.yaml", "layers")["layers"])


@functools.cache
def default_rules() -> RuleSet:
    pins = load_pins()
    return load_rules(repos=set(pins.sources) | set(pins.layouts))
