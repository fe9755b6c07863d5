"""The workaround matrix: documented workarounds as data, each checked against the pinned sources.

``rules/workarounds.yaml`` says what each workaround does, which failure it addresses, which gate-matrix
layers it unblocks and its risk. Checks find live evidence at the scanned tags: an environment variable
still read (the trace engine's ``--env`` search), a build flag or option still present. An entry whose
evidence disappeared is reported "stale at <tag>", never dropped. An entry may have ``eras``: the setting and
checks of each range of a repository's versions (a build from source is ``go generate`` before ollama v0.4, ``make``
until v0.5.8, CMake after); ``Workaround.at`` picks the era of the scanned ref. An entry may have ``exists_in``: the
range of a repository's versions where the thing it sets exists at all (RocmComputeMajorMin is declared from ollama
v0.5.2-rc0); at a versioned ref before or after that range the entry is not applicable — not linked to cells, not a
route step, not checked — which is not the same as "stale" (evidence of a workaround that exists there, gone).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import TYPE_CHECKING, Any, Callable, Iterable, NamedTuple

from gfxgate.answer.override import check_override, posed_target
from gfxgate.answer.steps import SETTING_FIELDS, fill_setting
from gfxgate.datafiles import load_yaml
from gfxgate.errors import RuleError, TargetError
from gfxgate.gate.matrix import GateMatrix
from gfxgate.model import Evidence, Status, os_of
from gfxgate.resources import rules_dir
from gfxgate.saferegex import RuleRegexError, rule_regex
from gfxgate.serial import JsonRecord, json_dataclass, json_field
from gfxgate.sources.base import GrepSpec
from gfxgate.sources.versions import exists_at, in_range
from gfxgate.targets import catalog

if TYPE_CHECKING:  # annotations only
    from pathlib import Path

    from gfxgate.answer.route import RouteRule
    from gfxgate.answer.view import StatusView

LIVE, STALE, UNKNOWN = "live", "stale", "unknown"
# an override whose posed target the release does not ship (gfxgate.answer.override): the variable may still be read,
# but the override is no help by itself there — the same check as the scan's override route and doctor's
NOT_SHIPPED = "not shipped"
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")  # {target}, {processor} in a setting (JSON settings' braces hold quotes)


class EnvCheck(NamedTuple):
    """A workaround check: the repository still reads the environment variable (the trace engine's ``--env``)."""

    repo: str
    env: str

    def describe(self) -> str:
        return f"{self.repo}: reads {self.env}"


Check = EnvCheck | GrepSpec  # how a workaround is checked at a version: a variable read, or a regex in files


class Era(NamedTuple):
    """The setting and checks of a workaround over one range of a repository's versions."""

    repo: str
    versions: str
    setting: str
    checks: tuple[Check, ...]

    def describe(self) -> str:
        return f"{self.repo} {self.versions}"


@json_dataclass(frozen=True)
class Workaround(JsonRecord):
    """One entry of ``rules/workarounds.yaml``: what it sets, what it unblocks, its risk and its checks."""

    id: str
    title: str
    kind: str
    setting: str
    what: str
    addresses: str
    unblocks: tuple[str, ...]
    risk: str
    checks: tuple[Check, ...] = json_field(skip=True)  # their outcome is WorkaroundReport's
    override: str | None = json_field(default=None, skip=True)
    applies_to: tuple[str, ...] = ()
    eras: tuple[Era, ...] = json_field(default=(), skip=True)
    era: str | None = None  # the era whose setting and checks these are ("ollama <0.4.0"), once resolved by ``at``
    exists_in: Era | None = json_field(
        default=None, skip=True
    )  # the versions where it exists at all (setting, checks unused)
    os: tuple[str, ...] = json_field(default=("linux",), skip=True)  # the releases (OS) it works on (`os:`)

    def applies(self, layer: str, processor: str) -> bool:
        return layer in self.unblocks and (not self.applies_to or processor in self.applies_to)

    def exists_at(self, ref_of: Callable[[str], str | None]) -> bool:
        """Whether the workaround exists at the scanned versions (``exists_in``); True when its repository's ref is
        unknown or has no version number (a folder: its checks decide)."""
        return self.exists_in is None or exists_at(self.exists_in.repo, self.exists_in.versions, ref_of)

    def at(self, ref_of: Callable[[str], str | None]) -> Workaround:
        """This workaround at the scanned versions: the setting and checks of the first era whose range holds the
        ref of its repository (``ref_of(repo)``: None when unknown); the entry's own outside every era, or when the
        ref has no version number (a folder)."""
        for era in self.eras:
            ref = ref_of(era.repo)
            if ref is not None and in_range(ref, era.versions):
                return dataclasses.replace(self, setting=era.setting, checks=era.checks, eras=(), era=era.describe())
        return self


@json_dataclass(frozen=True)
class CheckResult(JsonRecord):
    """One check run against one source: the evidence found, or why nothing could be searched."""

    check: Check = json_field(value=lambda check: check.describe())
    where: str = json_field(name="searched")  # repo@ref that was searched
    reason: str | None = None  # why nothing could be searched
    evidence: tuple[Evidence, ...] = ()


@json_dataclass(frozen=True, kw_only=True)
class WorkaroundReport(JsonRecord):
    """A workaround with the outcome of its checks: live, stale or unknown."""

    workaround: Workaround = json_field(inline=True)
    state: str  # live, stale or unknown
    summary: str
    override_target: str | None = None
    override_code: str | None = None  # what the scanned artifacts hold for the override target
    results: tuple[CheckResult, ...] = json_field(name="checks")


def load(
    path: Path | None = None, *, layers: set[str] | None = None, repos: set[str] | None = None
) -> tuple[Workaround, ...]:
    """Load and cross-check rules/workarounds.yaml (layers, targets, repos, regexes)."""
    path = path or rules_dir() / "workarounds.yaml"
    data = load_yaml(path, "workarounds")
    cat = catalog()
    out, seen = [], set()

    def checks_of(raw_checks: Iterable[dict[str, Any]]) -> tuple[Check, ...]:
        return tuple(
            EnvCheck(c["repo"], c["env"]) if "env" in c else GrepSpec(c["repo"], tuple(c["paths"]), c["grep"])
            for c in raw_checks
        )  # the schema: either env, or grep and paths

    for raw in data["workarounds"]:
        checks = checks_of(raw["checks"])
        eras = tuple(Era(e["repo"], e["versions"], e["setting"], checks_of(e["checks"])) for e in raw.get("eras", ()))
        exists = raw.get("exists_in")
        exists_in = Era(exists["repo"], exists["versions"], "", ()) if exists else None
        item = Workaround(
            id=raw["id"],
            title=raw["title"],
            kind=raw["kind"],
            setting=raw["setting"],
            what=raw["what"],
            addresses=raw["addresses"],
            unblocks=tuple(raw["unblocks"]),
            risk=raw["risk"],
            checks=checks,
            override=raw.get("override"),
            eras=eras,
            exists_in=exists_in,
            os=os_of(raw),
            applies_to=tuple(raw.get("applies_to", ()))
            or (tuple(p.name for p in cat.by_name.values() if p.integrated) if raw.get("integrated_only") else ()),
        )
        problems = []
        if item.id in seen:
            problems.append("duplicate id")
        seen.add(item.id)
        if layers is not None:
            problems += [f"unknown layer {layer!r}" for layer in item.unblocks if layer not in layers]
        problems += [f"unknown target {t!r}" for t in item.applies_to if t not in cat.by_name]
        if item.override:
            try:
                posed_target(item.override)
            except TargetError as exc:  # reported as a rules problem here
                problems.append(str(exc))

        for setting in (item.setting, *(era.setting for era in eras)):
            problems += [
                f"setting {setting!r}: unknown placeholder {{{name}}} (a setting may name {', '.join(SETTING_FIELDS)})"
                for name in _PLACEHOLDER.findall(setting)
                if name not in SETTING_FIELDS
            ]
        for era in eras + ((exists_in,) if exists_in else ()):
            if repos is not None and era.repo not in repos:
                problems.append(f"era {era.versions!r}: unknown repo {era.repo!r}")
            try:
                in_range("v0.0.0", era.versions)
            except ValueError as exc:
                problems.append(f"era: {exc}")
        for check in checks + tuple(c for era in eras for c in era.checks):
            if repos is not None and check.repo not in repos:
                problems.append(f"unknown repo {check.repo!r}")
            if isinstance(check, GrepSpec):
                try:
                    rule_regex(check.grep)
                except RuleRegexError as exc:
                    problems.append(exc.message)
        if problems:
            raise RuleError(f"{path}: workaround {item.id}: " + "; ".join(problems))
        out.append(item)
    return tuple(out)


def for_os(workarounds: tuple[Workaround, ...], os: str) -> tuple[Workaround, ...]:
    """The workarounds that work on ``os``'s release (``--os``): an HSA override is Linux's alone."""
    return tuple(w for w in workarounds if os in w.os)


@functools.cache
def default_workarounds() -> tuple[Workaround, ...]:
    from gfxgate.gate.ruleset import layer_ids
    from gfxgate.sources.resolve import load_pins

    pins = load_pins()
    return load(layers=set(layer_ids()), repos=set(pins.sources) | set(pins.layouts))


def link(matrix: GateMatrix, workarounds: tuple[Workaround, ...], override: RouteRule | None = None) -> GateMatrix:
    """Point every blocked / override-required / partial cell at the workarounds that address its layer (those that
    exist at the matrix's versions). ``override``: the override route rule (``gate.route.override_rule``), whose needs
    say whether the release ships what an override a remedy names poses."""
    refs = {s.name: s.ref for s in matrix.sources}
    workarounds = tuple(w for w in workarounds if w.exists_at(refs.get))
    cells = {}
    for key, verdict in matrix.cells.items():
        if verdict.status in (Status.BLOCKED, Status.OVERRIDE_REQUIRED, Status.PARTIAL):
            processor = verdict.target.split(":")[0]
            applicable = [w for w in workarounds if w.applies(verdict.layer, processor)]
            verdict = dataclasses.replace(
                verdict,
                workarounds=tuple(w.id for w in applicable),
                remedy=_with_override_loads(
                    verdict.remedy,
                    [w for w in workarounds if w.override and processor in w.applies_to],
                    matrix,
                    override,
                ),
            )
        cells[key] = verdict
    return dataclasses.replace(matrix, cells=cells)


def _with_override_loads(
    remedy: str | None, applicable: list[Workaround], matrix: GateMatrix, override: RouteRule | None = None
) -> str | None:
    """A remedy that names HSA_OVERRIDE_GFX_VERSION also says what each override documented for the target would
    load (whichever layer the remedy belongs to: the release-packaging remedy names the override too) and whether
    the same release ships it (``gfxgate.answer.override``, the posed target's column of the same matrix)."""
    if not remedy or "HSA_OVERRIDE_GFX_VERSION" not in remedy or "makes the runtime report" in remedy:
        return remedy
    from gfxgate.artifacts.compat import override_loads

    loads = []
    for w in applicable:
        if w.override:
            missing = (
                check_override(matrix, w.override, override.needs, override.also_needs).clause() if override else None
            )
            loads.append(
                override_loads(w.override, _discovery_checks_tensile(matrix)) + (f"; but {missing}" if missing else "")
            )
    return remedy + ("; " + "; ".join(loads) if loads else "; no documented override value for this target")


def _discovery_checks_tensile(matrix: GateMatrix) -> bool:
    """Whether this release's discovery row checks rocBLAS's TensileLibrary_lazy files (its cells say so)."""
    return any(cell.layer == "discovery" and "TensileLibrary_lazy" in cell.summary for cell in matrix.cells.values())


def shipped_state(
    item: Workaround, state: str, summary: str, view: StatusView | None, override: RouteRule | None, release: str
) -> tuple[str, str]:
    """An override entry whose posed target the release does not ship is "not shipped", whatever its variable's check
    says (the check's words follow); any other entry keeps its state."""
    if not item.override or view is None or override is None:
        return state, summary
    check = check_override(view, item.override, override.needs, override.also_needs)
    if not check.checked or check.ships:
        return state, summary
    return NOT_SHIPPED, f"{check.clause(release)}; the variable: {state} ({summary})"


def unchecked(
    workarounds: tuple[Workaround, ...],
    ref_of: Callable[[str], str | None],
    why: str,
    *,
    targets: Iterable[object] = (),
    steps: dict[str, dict[str, str]] | None = None,
    view: StatusView | None = None,
    override: RouteRule | None = None,
    release: str = "this release",
) -> list[WorkaroundReport]:
    """The entries that exist at the versions ``ref_of`` names, each not checked (``why``: no source to search), with
    the setting of the targets' routes and the override check over ``view`` as ``trace.workarounds.check_all`` gives them: what
    `workarounds` answers from the embedded evidence when the sources cannot be read."""
    out = []
    for item in workarounds:
        if not item.exists_at(ref_of):
            continue
        item = item.at(ref_of)
        item = dataclasses.replace(
            item, setting=setting_for(item, [str(t) for t in targets], (steps or {}).get(item.id, {}), fill_setting)
        )
        state, summary = shipped_state(item, UNKNOWN, f"not checked — {why}", view, override, release)
        out.append(
            WorkaroundReport(
                workaround=item,
                state=state,
                summary=summary,
                results=(),
                override_target=posed_target(item.override) if item.override else None,
            )
        )
    return out


def setting_for(
    item: Workaround, targets: list[str], steps: dict[str, str], fill: Callable[[str, str | None], str]
) -> str:
    """The entry's setting for these targets: the route step's where it is one, else its own filled per target;
    several targets with different settings are listed ``target: setting; …``."""
    per = {t: steps.get(t) or fill(item.setting, t) for t in targets}
    values = list(dict.fromkeys(per.values()))
    if not per:
        return fill(item.setting, None)
    if len(values) == 1:
        return values[0]
    return "; ".join(f"{t}: {v}" for t, v in per.items())
