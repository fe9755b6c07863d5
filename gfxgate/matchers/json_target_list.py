"""Target lists in JSON: ``CMakePresets.json`` ``cacheVariables.AMDGPU_TARGETS`` per configure preset.

Inheritance (``inherits``) is resolved, so a preset that gets its list from a parent counts.
A list entry such as ``gfx906:xnack-`` allows gfx906 devices running with xnack off.

``built_by`` (optional: ``{path, pattern}``) names the file that says which presets the release really builds (the
Linux release's Dockerfile: ``cmake --preset 'ROCm 7'``), and ``pattern`` finds each configured preset's name as
``(?P<name>…)``. Only those presets count then, and the configure line is evidence beside the preset's list: from
ollama v0.17.8-rc0 CMakePresets.json holds "ROCm 6" (the Windows build, .github/workflows/release.yaml) and "ROCm 7",
and the Linux Dockerfile configures "ROCm 7" alone. A ``built_by`` file that names none of the presets leaves the
rule undecided (no match), never all of them.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Mapping
import shlex

from gfxgate.errors import TargetError
from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, check_regex, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId


def _line_of(lines: list[str], preset: str, variable: str) -> tuple[int, str]:
    """Line of ``"variable":`` inside the preset named ``preset`` (found, never stored)."""
    name_re = re.compile(r'"name"\s*:\s*' + re.escape(json.dumps(preset)))
    var_re = re.compile(re.escape(json.dumps(variable)) + r"\s*:")
    start = next((i for i, line in enumerate(lines) if name_re.search(line)), None)
    if start is None:
        return 0, ""
    for i in range(start, len(lines)):
        if i > start and re.search(r'"name"\s*:', lines[i]):
            break
        if var_re.search(lines[i]):
            return i + 1, lines[i]
    return start + 1, lines[start]


class JsonTargetList:
    name = "json-target-list"
    regexes = RegexParams(presets=".*", exclude_presets=None)  # over preset names
    params_schema = params_object(
        ["variable"],
        {
            "variable": {"type": "string"},
            **regexes.schema,
            "built_by": params_object(["path", "pattern"], {"path": {"type": "string"}, "pattern": {"type": "string"}}),
        },
    )

    def check_params(self, rule: MatcherRule) -> None:
        self.regexes.check(rule)
        if "built_by" in rule.params:
            check_regex(rule, "params.built_by.pattern", rule.params["built_by"]["pattern"])

    @staticmethod
    def _configured(rule: MatcherRule, source: Source) -> dict[str, dict[str, Any]] | None:
        """The presets the ``built_by`` file configures, by name, each with its first configure line (None: no
        ``built_by``)."""
        spec = rule.params.get("built_by")
        if spec is None:
            return None
        rx = check_regex(rule, "params.built_by.pattern", spec["pattern"])
        text = source.read_text(spec["path"])
        if text is None:
            raise NoMatch(f"{spec['path']} (which says the presets the release builds) not found")
        configured: dict[str, dict[str, Any]] = {}
        for number, line in enumerate(text.splitlines(), start=1):
            for m in rx.finditer(line):
                configured.setdefault(m.group("name"), hit(spec["path"], number, line))
        return configured

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        variable = rule.params["variable"]
        rx = self.regexes.compile(rule)
        include, exclude = rx["presets"], rx["exclude_presets"]
        configured = self._configured(rule, source)
        lists = []
        for path in paths:
            text = source.read_text(path) or ""
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise NoMatch(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
            # a preset without a string name (CMake requires one) is no preset: it cannot be named, inherited or matched
            presets = {
                p["name"]: p
                for p in data.get("configurePresets", [])
                if isinstance(p, dict) and isinstance(p.get("name"), str)
            }

            def resolved(name: str, seen: tuple = ()) -> str | None:
                preset = presets.get(name) or {}  # noqa: B023 - called in this iteration only
                value = (preset.get("cacheVariables") or {}).get(variable)
                if isinstance(value, dict):
                    value = value.get("value")
                if value is not None or name in seen:
                    return value
                parents = preset.get("inherits") or []
                for parent in [parents] if isinstance(parents, str) else parents:
                    found = resolved(parent, seen + (name,))
                    if found is not None:
                        return found
                return None

            lines = text.splitlines()
            for name, preset in presets.items():
                if preset.get("hidden") or not include.search(name) or (exclude and exclude.search(name)):
                    continue
                if configured is not None and name not in configured:
                    continue
                value = resolved(name)
                if value is None:
                    continue
                owner = (
                    name if variable in (preset.get("cacheVariables") or {}) else self._owner(presets, name, variable)
                )
                line, text_line = _line_of(lines, owner, variable)
                entry = {
                    **hit(path, line, text_line),
                    "preset": name,
                    "targets": [t for t in str(value).split(";") if t],
                }
                if configured is not None:
                    entry["configured"] = configured[name]
                lists.append(entry)
        if not lists and configured is not None:
            spec = rule.params["built_by"]
            said = ", ".join(repr(n) for n in configured) or "no preset"
            raise NoMatch(f"{spec['path']} configures {said}: no matching preset of {', '.join(paths)} sets {variable}")
        if not lists:
            raise NoMatch(f"no configure preset sets {variable} in {', '.join(paths)}")
        return {"variable": variable, "lists": lists}

    @staticmethod
    def _owner(presets: dict, name: str, variable: str) -> str:
        todo, seen = [name], set()
        while todo:
            current = todo.pop(0)
            if current in seen:
                continue
            seen.add(current)
            preset = presets.get(current) or {}
            if variable in (preset.get("cacheVariables") or {}):
                return current
            parents = preset.get("inherits") or []
            todo.extend([parents] if isinstance(parents, str) else parents)
        return name

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        variable = facts["variable"]
        # every concrete mode a device of this target can run in (gfx90a: sramecc±, xnack±)
        proc = catalog.processor(target.processor)
        modes = [catalog.parse(s) for s in catalog.spellings(target) if s.count(":") == len(proc.features)]
        full, partial, missing = [], [], []
        configures = {}  # preset name -> the line of the built_by file that configures it (evidence beside its list)
        for entry in facts["lists"]:
            if entry.get("configured"):
                built = entry["configured"]
                configures[entry["preset"]] = Hit.from_json(
                    built, f"{built['path']} configures preset {entry['preset']!r}"
                )
            codes = []
            for listed in entry["targets"]:
                try:
                    codes.append((listed, catalog.parse(listed)))
                except TargetError:  # an entry gfxgate does not know cannot be this target
                    continue
            covering = {listed for listed, code in codes for mode in modes if catalog.compatibility(code, mode).runs}
            covered = [m for m in modes if any(catalog.compatibility(code, m).runs for _, code in codes)]
            name = entry["preset"]
            if covered and len(covered) == len(modes):
                full.append((name, Hit.from_json(entry, f"preset {name!r} lists {', '.join(sorted(covering))}")))
            elif covered:
                only = ", ".join(str(m) for m in covered)
                partial.append(
                    (
                        name,
                        Hit.from_json(
                            entry, f"preset {name!r} lists {', '.join(sorted(covering))}: only {only} devices"
                        ),
                    )
                )
            else:
                missing.append((name, Hit.from_json(entry, f"preset {name!r} does not list {target.processor}")))
        remedy = fill(rule.remedy, target) or f"build with -D{variable}={target}"
        # "<ROCm preset>" in a remedy is the preset the release builds: the one the built_by file configures (else
        # the one preset listed), quoted as a shell takes it; with several and none configured it stays a choice
        presets = list(configures) or list(dict.fromkeys(entry["preset"] for entry in facts["lists"]))
        if "<ROCm preset>" in remedy and len(presets) == 1:
            remedy = remedy.replace("<ROCm preset>", shlex.quote(presets[0]))

        def evidence(
            found: list[tuple[str, Hit]],
        ) -> tuple[Hit, ...]:  # each preset's list, then the line that configures it
            return tuple(h for name, listed in found for h in (listed, configures.get(name)) if h is not None)

        def names(
            found: list[tuple[str, Hit]],
        ) -> str:  # the presets of a summary and where the release configures them
            text = ", ".join(dict.fromkeys(name for name, _ in found))
            where = [f"{configures[n].path}:{configures[n].line}" for n, _ in found if n in configures]
            return (
                f"{text}: the release configures {'it' if len(where) == 1 else 'them'} at {', '.join(where)}"
                if where
                else text
            )

        if full:
            return Finding(Status.ALLOWED, f"built by preset(s) {names(full)}", evidence(full))
        if partial:
            return Finding(Status.PARTIAL, partial[0][1].note, evidence(partial), remedy=remedy)
        return Finding(
            Status.BLOCKED, f"not in {variable} of any preset ({names(missing)})", evidence(missing), remedy=remedy
        )


MATCHER: Matcher = JsonTargetList()
