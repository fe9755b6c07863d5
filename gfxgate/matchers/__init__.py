"""Matchers: one module per kind of evidence. Each works in two steps.

``extract(rule, source, paths)`` reads upstream files once and returns target-independent,
JSON-serialisable *facts* (with path, line and the matched line text) — or ``None`` when the
rule's construct is not there. ``evaluate(rule, facts, target, catalog)`` decides one target from
those facts. The embedded snapshot stores facts, so offline scans evaluate the very same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Protocol, cast, overload
import dataclasses
import copy

from gfxgate.model import Status
from gfxgate.plugins import Plugins
from gfxgate.errors import RuleError
from gfxgate.saferegex import RuleRegexError, rule_regex

if TYPE_CHECKING:  # annotations only: a matcher module imports neither at run time for them
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


class Hit(NamedTuple):
    """Evidence inside one upstream file: path (relative to the source), line, that line's text."""

    path: str
    line: int | None
    text: str
    note: str = ""

    @classmethod
    def from_json(cls, data: Mapping[str, Any], note: str = "") -> Hit:
        return cls(data["path"], data["line"], data["text"], note)


class Finding(NamedTuple):
    """One rule's answer for one target."""

    status: Status
    summary: str
    hits: tuple[Hit, ...]
    remedy: str | None = None


class NoMatch(Exception):
    """Raised by extract() when the construct a rule looks for is absent; the message is the reason."""


class MatcherRule(Protocol):
    """What a matcher reads of a gate rule (``gate/ruleset.py: GateRule`` has it; matchers sit below the gate, so
    they name this view of it, read-only)."""

    @property
    def id(self) -> str: ...
    @property
    def paths(self) -> tuple[str, ...]: ...
    @property
    def params(self) -> dict[str, Any]: ...  # validated against the matcher's params_schema when rules load
    @property
    def remedy(self) -> str | None: ...
    @property
    def summary(self) -> str | None: ...
    @property
    def status_default(self) -> Status | None: ...
    @property
    def absent(self) -> dict[str, Any] | None: ...
    @property
    def defined_in(self) -> str: ...
    @property
    def line(self) -> int: ...


class Matcher(Protocol):
    """A kind of evidence: what a contributor implements first (ARCHITECTURE.md, "Add a matcher"). Each module's
    ``MATCHER: Matcher = ...`` is checked against this by mypy."""

    name: str
    params_schema: dict[str, Any]  # JSON Schema of a rule's ``params``
    # optional: rule_requires: tuple[str, ...], the rule keys this matcher needs (default: none)
    # optional: check_params(rule), checks of a rule's params beyond the schema (its regexes: RegexParams.check)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        """The rule's facts in ``paths`` of ``source``: target-independent, JSON-serialisable, each with its path,
        line and line text; raises :class:`NoMatch` (with the reason) when the construct is absent."""
        ...

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        """One target's :class:`Finding` from the facts ``extract`` returned (or the snapshot stored)."""
        ...


def params_object(required: list[str], properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    """A matcher's ``params_schema``: an object with exactly these ``properties``, ``required`` of them required
    (``more``: further keywords, e.g. ``oneOf``). :func:`gates_schema` merges it into the gates schema when rules
    load, so `gfxgate schema gates` prints it."""
    return {"type": "object", "required": required, "additionalProperties": False, "properties": properties, **more}


def rule_problem(rule: MatcherRule, text: str) -> RuleError:
    """A rules error about one rule, worded alike for every matcher: ``file:line: rule ID: text``."""
    where = f"{rule.defined_in}:{rule.line}" if getattr(rule, "line", 0) else rule.defined_in
    return RuleError(f"{where}: rule {rule.id}: {text}")


def check_regex(rule: MatcherRule, where: str, pattern: str) -> Any:  # a compiled RE2 (untyped)
    """``pattern`` compiled in the rule dialect (RE2, :mod:`gfxgate.saferegex`); a bad one is a rules error
    naming the rule and ``where`` in its params (e.g. ``params.pattern``)."""
    try:
        return rule_regex(pattern)
    except RuleRegexError as exc:
        raise rule_problem(rule, f"{where}: {exc.message}") from None


def check_regex_params(rule: MatcherRule, *keys: str) -> None:
    """Check the regex of each of ``keys`` that the rule's params give (:func:`check_regex`)."""
    for key in keys:
        if key in rule.params:
            check_regex(rule, f"params.{key}", rule.params[key])


class RegexParams:
    """The params of a matcher that are regexes in the rule dialect, declared once: each with the pattern a rule
    that leaves it out gets (``None``: none, and its regex is then ``None``). ``schema`` is their part of the
    matcher's ``params_schema`` (strings, in this order), :meth:`check` checks a rule's (``check_params``) and
    :meth:`compile` gives them compiled, by name (``extract``)."""

    def __init__(self, **defaults: str | None) -> None:
        self.defaults = defaults
        self.schema = {key: {"type": "string"} for key in defaults}

    def check(self, rule: MatcherRule) -> None:
        check_regex_params(rule, *self.defaults)

    def compile(self, rule: MatcherRule) -> dict[str, Any]:
        patterns = {key: rule.params.get(key, default) for key, default in self.defaults.items()}
        return {key: None if pattern is None else rule_regex(pattern) for key, pattern in patterns.items()}


def replaced(rule: MatcherRule, **changes: Any) -> MatcherRule:
    """The same rule with ``changes`` (other ``params``, no ``remedy``): a matcher that hands part of its work to
    another matcher (every rule is a frozen dataclass, ``gate/ruleset.py: GateRule``)."""
    out: MatcherRule = dataclasses.replace(cast(Any, rule), **changes)
    return out


def hit(path: str, line: int, text: str) -> dict[str, Any]:
    return {"path": path, "line": line, "text": text.strip()}


@overload
def fill(template: str, target: TargetId, **extra: str) -> str: ...


@overload
def fill(template: None, target: TargetId, **extra: str) -> None: ...


@overload
def fill(template: str | None, target: TargetId, **extra: str) -> str | None: ...


def fill(template: str | None, target: TargetId, **extra: str) -> str | None:
    """Fill ``{target}``/``{processor}`` (and extras) in a rule's remedy or summary text."""
    if template is None:
        return None
    values = {"target": str(target), "processor": target.processor, **extra}
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


# one module per matcher, named after it (``cmake-list-filter`` is ``cmake_list_filter.MATCHER``); see gfxgate.plugins
MATCHERS: Mapping[str, Matcher] = Plugins("gfxgate.matchers", "MATCHER")


def gates_schema(shell: dict[str, Any]) -> dict[str, Any]:
    """The gates schema: the rule shell of gates.schema.json plus, per matcher, its name and its params schema.

    Every fact about a matcher lives in its module: adding one adds no line anywhere else.
    """
    schema = copy.deepcopy(shell)
    rule = schema["$defs"]["rule"]
    rule["properties"]["matcher"] = {**rule["properties"]["matcher"], "enum": list(MATCHERS)}
    rule["allOf"] = [
        {
            "if": {"properties": {"matcher": {"const": name}}},
            "then": {
                **({"required": list(requires)} if (requires := getattr(m, "rule_requires", ())) else {}),
                "properties": {"params": m.params_schema},
            },
        }
        for name, m in MATCHERS.items()
    ]
    return schema
