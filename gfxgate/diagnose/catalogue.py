"""The log-message catalogue (rules/messages.yaml): loaded once into frozen dataclasses, checked at load.

Each message is data: its fixed literal(s), an RE2 pattern, the layer and status a failure implies, the log
kinds and versions that print it, where upstream prints it (a search spec, never a stored line number), the
remedy and the workarounds that address it. Loading validates the schema (errors as ``file:line``) and then
cross-checks every entry: known layer, known workarounds and repositories, valid version ranges, a pattern RE2
compiles, every example matches (and contains a literal) and no counter-example does.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, NamedTuple

from gfxgate.diagnose.patterns import (
    CheckedPattern,
    LiteralScanner,
    Pattern,
    PatternError,
    compile_pattern,
    compile_set,
)
from gfxgate.errors import RuleError
from gfxgate.model import Status
from gfxgate.records import dataclass
from gfxgate.resources import rules_dir, schemas_dir
from gfxgate.sources.base import GrepSpec
from gfxgate.sources.versions import in_range
from gfxgate import datacache
from gfxgate.datafiles import _node_lines, load_yaml
from gfxgate.diagnose.remedy import FIELDS, unknown_placeholders  # remedies are templates (diagnose/remedy.py)
from gfxgate.gate.workarounds import Era, Workaround, default_workarounds
from gfxgate.saferegex import RuleRegexError, rule_regex

LOG_KINDS = ("ollama", "llama.cpp")
DISCOVERY_PATHS = ("discover/", "gpu/")  # Ollama's GPU discovery code (gpu/ before v0.4)
# what the shipped catalogue is cross-checked against (default_catalogue): the rules files and their schemas
CHECKED_AGAINST = ("messages.yaml", "layers.yaml", "pins.toml", "workarounds.yaml", "targets.yaml")
CHECKED_SCHEMAS = ("messages", "layers", "pins", "workarounds", "targets")


class VendorRemedy(NamedTuple):
    """A failure's remedy for one vendor's logs (rules/messages.yaml ``vendor_remedies``)."""

    vendor: str
    remedy: str
    workarounds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Message:
    id: str
    family: str
    kind: str  # "fact" or "failure"
    title: str
    literals: tuple[str, ...]
    pattern: str
    logs: tuple[str, ...]
    regex: Pattern
    versions: tuple[tuple[str, str], ...] = ()  # (log kind, range)
    printed_by: tuple[GrepSpec, ...] = ()  # where upstream prints it: a regex over the printing code
    not_available: str | None = None
    layer: str | None = None
    implies: Status | None = None
    remedy: str | None = None
    workarounds: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()
    counterexamples: tuple[str, ...] = ()
    defined_at: str = ""  # rules file:line
    vendor: str | None = None  # amd, nvidia, intel: the vendor whose GPUs the message is about (None: any vendor)
    vendor_remedies: tuple[VendorRemedy, ...] = ()  # what a log of another vendor gets instead of remedy/workarounds
    os_remedies: tuple[
        VendorRemedy, ...
    ] = ()  # what a log of another OS (windows) gets instead (its `vendor` is the OS)

    @property
    def is_failure(self) -> bool:
        return self.kind == "failure"

    @property
    def printed_by_discovery(self) -> bool:
        """Printed only by Ollama's GPU discovery (``discover/``, before v0.4 ``gpu/``): such a failure drops the
        device before any runner starts, whatever layer causes it (no ROCm library, Vulkan not enabled)."""
        return bool(self.printed_by) and all(
            spec.repo == "ollama" and all(path.startswith(DISCOVERY_PATHS) for path in spec.paths)
            for spec in self.printed_by
        )

    def remedy_for(self, vendor: str | None) -> VendorRemedy | None:
        """The remedy a log of ``vendor``'s GPU gets instead of the message's own, if the catalogue gives one."""
        return next((r for r in self.vendor_remedies if r.vendor == vendor), None) if vendor else None

    def remedy_for_os(self, os_name: str | None) -> VendorRemedy | None:
        """The remedy a log written on ``os_name`` (``windows``) gets instead, if the catalogue gives one."""
        return next((r for r in self.os_remedies if r.vendor == os_name), None) if os_name else None

    def version_range(self, log_kind: str) -> str:
        return dict(self.versions).get(log_kind, "")

    def printed_in(self, log_kind: str, version: str | None) -> tuple[bool, str]:
        """Does a ``log_kind`` log of ``version`` print this message? (answer, reason when not)."""
        if log_kind not in self.logs:
            return False, f"{log_kind} logs do not print it (catalogue: {', '.join(self.logs)})"
        spec = self.version_range(log_kind)
        if version and spec and not in_range(version, spec):
            return False, f"{log_kind} {version} does not print it (printed by {log_kind} {spec})"
        return True, ""

    def search(self, text: str):
        """The pattern's match in one (already bounded) line, after the literal pre-filter."""
        if not any(lit in text for lit in self.literals):
            return None
        return self.regex.search(text)


@dataclass(frozen=True)
class Catalogue:
    messages: tuple[Message, ...]
    path: str

    def by_id(self, message_id: str) -> Message:
        return next(m for m in self.messages if m.id == message_id)

    @functools.cached_property
    def literal_scanner(self) -> LiteralScanner:
        """Every literal in one prefilter: a single linear pass over a batch of lines finds the candidate lines."""
        path = Path(self.path)

        def stored(raw: bytes, kind: str, make: Callable[[], bytes]) -> bytes:
            return datacache.cached(path, raw, kind, None, make)  # only the shipped catalogue's is kept

        return LiteralScanner([lit.encode("utf-8") for m in self.messages for lit in m.literals], stored=stored)

    @functools.cached_property
    def literal_bytes(self) -> tuple[tuple[bytes, ...], ...]:
        """Each message's literals as UTF-8 (the matcher works on bytes), in catalogue order."""
        return tuple(tuple(lit.encode("utf-8") for lit in m.literals) for m in self.messages)

    @functools.cached_property
    def pattern_set(self):
        """Every message's pattern in one RE2 set: one call says which messages a line holds (by catalogue index)."""
        return compile_set([m.pattern for m in self.messages])


def _message(raw: dict, regex: Pattern, where: str) -> Message:
    """One entry of rules/messages.yaml (as its schema shapes it) as a Message, its pattern compiled."""
    return Message(
        id=raw["id"],
        family=raw["family"],
        kind=raw["kind"],
        title=raw["title"],
        literals=(raw["literal"],) if isinstance(raw["literal"], str) else tuple(raw["literal"]),
        pattern=raw["pattern"],
        logs=tuple(raw["logs"]),
        regex=regex,
        versions=tuple(sorted((raw.get("versions") or {}).items())),
        printed_by=tuple(GrepSpec(p["repo"], tuple(p["paths"]), p["grep"]) for p in raw.get("printed_by", ())),
        not_available=raw.get("not_available"),
        layer=raw.get("layer"),
        implies=Status(raw["implies"]) if raw.get("implies") else None,
        remedy=raw.get("remedy"),
        workarounds=tuple(raw.get("workarounds", ())),
        examples=tuple(raw["examples"]),
        counterexamples=tuple(raw.get("counterexamples", ())),
        defined_at=where,
        vendor=raw.get("vendor"),
        vendor_remedies=tuple(
            VendorRemedy(v, r["remedy"], tuple(r.get("workarounds", ())))
            for v, r in sorted((raw.get("vendor_remedies") or {}).items())
        ),
        os_remedies=tuple(
            VendorRemedy(o, r["remedy"], tuple(r.get("workarounds", ())))
            for o, r in sorted((raw.get("os_remedies") or {}).items())
        ),
    )


def load(
    path: Path | None = None,
    *,
    layers: set[str] | None = None,
    repos: set[str] | None = None,
    workarounds: set[str] | None = None,
) -> Catalogue:
    path = Path(path or rules_dir() / "messages.yaml")
    data = load_yaml(path, "messages")
    lines: dict = {}

    def line_of(index: int) -> str:  # composed only when an entry is reported: a third YAML pass costs start-up time
        if not lines:
            import yaml  # only to say where a bad entry is: yaml costs start-up time, the data comes from the cache

            lines.update(_node_lines(yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)))
        return f"{path}:{lines.get(('messages', index), '?')}"

    out: list[Message] = []
    seen: set[str] = set()
    for index, raw in enumerate(data["messages"]):
        where = f"{path}:messages[{index}]"
        problems: list[str] = []
        try:
            regex = compile_pattern(raw["pattern"])
        except PatternError as exc:
            raise RuleError(f"{line_of(index)}: message {raw['id']}: pattern is not valid RE2: {exc}") from None
        message = _message(raw, regex, where)
        literals = message.literals
        if message.id in seen:
            problems.append("duplicate id")
        seen.add(message.id)
        if message.layer and layers is not None and message.layer not in layers:
            problems.append(f"unknown layer {message.layer!r}")
        if message.kind == "fact" and (message.layer or message.implies):
            problems.append("a fact has no layer or implied status")
        if (message.vendor_remedies or message.os_remedies) and not message.is_failure:
            problems.append("a fact has no vendor remedies")
        if workarounds is not None:
            problems += [f"unknown workaround {w!r}" for w in message.workarounds if w not in workarounds]
            problems += [
                f"vendor_remedies.{r.vendor}: unknown workaround {w!r}"
                for r in message.vendor_remedies
                for w in r.workarounds
                if w not in workarounds
            ]
            problems += [
                f"os_remedies.{r.vendor}: unknown workaround {w!r}"
                for r in message.os_remedies
                for w in r.workarounds
                if w not in workarounds
            ]

        problems += [
            f"remedy: unknown placeholder {{{name}}} (a remedy may name {', '.join(FIELDS)})"
            for text in (message.remedy or "", *(r.remedy for r in message.vendor_remedies + message.os_remedies))
            for name in unknown_placeholders(text)
        ]
        for spec in message.printed_by:
            if repos is not None and spec.repo not in repos:
                problems.append(f"unknown repo {spec.repo!r}")
            try:
                rule_regex(spec.grep)  # the dialect Source.grep uses on every source
            except RuleRegexError as exc:
                problems.append(f"bad grep: {exc.message}")
        for kind, versions in message.versions:
            if kind not in message.logs:
                problems.append(f"versions for {kind!r}, which is not in logs")
            try:
                in_range("0.0.0", versions)
            except ValueError as exc:
                problems.append(str(exc))
        for example in message.examples:
            if not any(lit in example for lit in literals):
                problems.append(f"example contains none of the literals {list(literals)}: {example!r}")
            elif message.regex.search(example) is None:
                problems.append(f"example does not match the pattern: {example!r}")
        for counter in message.counterexamples:
            if message.search(counter) is not None:
                problems.append(f"counter-example matches: {counter!r}")
        if problems:
            raise RuleError(f"{line_of(index)}: message {message.id}: " + "; ".join(problems))
        out.append(message)
    return Catalogue(tuple(out), str(path))


@functools.cache
def default_catalogue() -> Catalogue:
    """The shipped catalogue, cross-checked against the layers, pins and workarounds (:func:`load`) once per content
    of the files it is checked against (:func:`_checked`)."""
    data, loaded = _checked()
    if loaded is not None:
        return loaded
    path = rules_dir() / "messages.yaml"
    return Catalogue(
        tuple(
            _message(raw, CheckedPattern(raw["pattern"]), f"{path}:messages[{index}]")
            for index, raw in enumerate(data["messages"])
        ),
        str(path),
    )


@functools.cache
def default_workaround_records() -> tuple:
    """The shipped workarounds as a diagnosis reads them: gate.workarounds' own ``Workaround`` records (loaded and
    checked there, once per content of the rules, with the catalogue), rebuilt from the same cache entry without
    their checks and eras (a diagnosis runs no check; it reads each entry's id, setting, override, targets and
    ``exists_in``)."""
    return tuple(
        Workaround(
            **{
                **fields,
                "unblocks": tuple(fields["unblocks"]),
                "applies_to": tuple(fields["applies_to"]),
                "checks": (),
                "exists_in": Era(fields["exists_in"][0], fields["exists_in"][1], "", ())
                if fields["exists_in"]
                else None,
            }
        )
        for fields in _checked()[0]["workarounds"]
    )


class WorkaroundRecords:
    """:func:`default_workaround_records`, loaded when a finding first asks for them (a log without findings does not
    pay for the records' module)."""

    def __iter__(self):
        return iter(default_workaround_records())


@functools.cache
def _checked() -> tuple[dict[str, Any], Catalogue | None]:
    """The catalogue's entries and the workarounds' facts, loaded and cross-checked (every check of :func:`load`, and
    gate.workarounds') when the rules files they are checked against change, else taken from gfxgate's rules cache
    (:mod:`gfxgate.datacache`, keyed by those files' and their schemas' bytes): a diagnosis then needs neither the
    pins, the layers, the targets nor the workarounds' own checks at start-up. Returns the data and, when it was
    just loaded, the catalogue."""
    root = rules_dir()
    parts = [name.encode() + b"\0" + (root / name).read_bytes() for name in CHECKED_AGAINST]
    parts += [name.encode() + b"\0" + (schemas_dir() / f"{name}.schema.json").read_bytes() for name in CHECKED_SCHEMAS]
    loaded: list[Catalogue] = []

    def parse() -> dict[str, Any]:
        from gfxgate.gate.ruleset import layer_ids
        from gfxgate.sources.resolve import load_pins

        pins = load_pins()
        workarounds = default_workarounds()
        loaded.append(
            load(
                layers=set(layer_ids()),
                repos=set(pins.sources) | set(pins.layouts),
                workarounds={w.id for w in workarounds},
            )
        )
        return {
            "messages": load_yaml(root / "messages.yaml", "messages")["messages"],
            "workarounds": [
                {
                    "id": w.id,
                    "title": w.title,
                    "kind": w.kind,
                    "setting": w.setting,
                    "what": w.what,
                    "addresses": w.addresses,
                    "unblocks": list(w.unblocks),
                    "risk": w.risk,
                    "override": w.override,
                    "applies_to": list(w.applies_to),
                    "exists_in": [w.exists_in.repo, w.exists_in.versions] if w.exists_in else None,
                }
                for w in workarounds
            ],
        }

    # "-3": the workarounds are gate.workarounds' records' fields (an entry of an earlier shape is another kind)
    data = datacache.cached(root / "messages.yaml", b"\0\0".join(parts), "diagnose-checked-3", "messages", parse)
    return data, (loaded[0] if loaded else None)
