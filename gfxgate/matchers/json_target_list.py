"""Target lists in JSON: ``CMakePresets.json`` ``cacheVariables.AMDGPU_TARGETS`` per configure preset.

Inheritance (``inherits``) is resolved, so a preset that gets its list from a parent counts.
A list entry such as ``gfx906:xnack-`` allows gfx906 devices running with xnack off.
"""

from __future__ import annotations

import json
import re
from typing import Any

from gfxgate.errors import TargetError
from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.model import Status


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
    params_schema = params_object(['variable'], {'variable': {'type': 'string'}, **regexes.schema})

    def check_params(self, rule) -> None:
        self.regexes.check(rule)

    def extract(self, rule, source, paths: list[str]) -> dict[str, Any]:
        variable = rule.params["variable"]
        rx = self.regexes.compile(rule)
        include, exclude = rx["presets"], rx["exclude_presets"]
        lists = []
        for path in paths:
            text = source.read_text(path) or ""
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise NoMatch(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno})") from exc
            # a preset without a string name (CMake requires one) is no preset: it cannot be named, inherited or matched
            presets = {p["name"]: p for p in data.get("configurePresets", [])
                       if isinstance(p, dict) and isinstance(p.get("name"), str)}

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
                value = resolved(name)
                if value is None:
                    continue
                owner = name if variable in (preset.get("cacheVariables") or {}) else self._owner(presets, name, variable)
                line, text_line = _line_of(lines, owner, variable)
                lists.append({**hit(path, line, text_line), "preset": name, "targets": [t for t in str(value).split(";") if t]})
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

    def evaluate(self, rule, facts: dict[str, Any], target, catalog) -> Finding:
        variable = facts["variable"]
        # every concrete mode a device of this target can run in (gfx90a: sramecc±, xnack±)
        proc = catalog.processor(target.processor)
        modes = [catalog.parse(s) for s in catalog.spellings(target) if s.count(":") == len(proc.features)]
        full, partial, missing = [], [], []
        for entry in facts["lists"]:
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
                full.append(Hit.from_json(entry, f"preset {name!r} lists {', '.join(sorted(covering))}"))
            elif covered:
                only = ", ".join(str(m) for m in covered)
                partial.append(Hit.from_json(entry, f"preset {name!r} lists {', '.join(sorted(covering))}: only {only} devices"))
            else:
                missing.append(Hit.from_json(entry, f"preset {name!r} does not list {target.processor}"))
        remedy = fill(rule.remedy, target) or f"build with -D{variable}={target}"
        names = lambda hits: ", ".join(h.note.split("'")[1] for h in hits)  # noqa: E731 - preset names for the summary
        if full:
            return Finding(Status.ALLOWED, f"built by preset(s) {names(full)}", tuple(full))
        if partial:
            return Finding(Status.PARTIAL, partial[0].note, tuple(partial), remedy=remedy)
        return Finding(Status.BLOCKED, f"not in {variable} of any preset ({names(missing)})", tuple(missing), remedy=remedy)


MATCHER = JsonTargetList()
