"""CUDA architecture lists of CMake presets: which runner folder builds which compute capability, as a cubin (``61``)
or as PTX only (``61-virtual``: the driver compiles it at first load), per OS.

The presets file (``CMakePresets.json``; ``llama/server/CMakePresets.json`` from v0.30) names each configure preset's
``CMAKE_CUDA_ARCHITECTURES`` and, through ``inherits``, its ``OLLAMA_RUNNER_DIR`` (``cuda_v12``; older presets are
named ``CUDA 12``, ``JetPack 5``). Three modes read the same facts:

* ``build``: each runner's list for the target — cubin, PTX only, or absent (with the cubin or PTX of an older
  capability that CUDA's compatibility would run, which Ollama's discovery still rejects);
* ``packaging``: only the presets a release recipe builds (``built_by``: a regex over the rule's other files whose
  group ``preset`` names a preset, e.g. the Dockerfile's ``--preset llama_cuda_v12_linux``) and, with ``shipped``
  (group ``runner``: ``COPY --from=cuda-12``, ``llama-server-cuda_v13``, ``jetpack-5``), copies into the archive — a
  stage that is built but whose COPY is commented out (CUDA 11 from v0.11) is not shipped;
* ``discovery``: Ollama's exact match — the device's capability as ``"%d%d0"`` must be one of the numbers ggml was
  built for (``CUDA : ARCHS``), else the device is skipped; ``reject`` is the regex of that check's log line.

Before the presets (v0.5.8), the lists are lines of build scripts: ``lists`` is a regex over the rule's non-JSON files
whose group ``archs`` is a ``;``-separated list and whose optional group ``runner`` names the runner's CUDA major
(``ARG CUDA_V12_ARCHITECTURES=…`` in the Dockerfile); else a ``Makefile.cuda_v12`` path names it, else the list is the
one CUDA runner's (``llm/generate/gen_common.sh``'s default ``CMAKE_CUDA_ARCHITECTURES``). CMake's plain ``61`` and the
Makefiles' ``code=[compute_61,sm_61]`` both build a cubin and PTX. ``mode: release`` reads them as ``build`` does, worded
as what the release ships (the lists of the release build: the Linux archive's runners before the presets).

Nothing here parses NVIDIA target names: the target model's ``cc_number`` (61) is compared with the list's numbers.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, RegexParams, fill, hit, params_object
from gfxgate.model import Status

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

REGEXES = RegexParams(built_by=None, shipped=None, reject=None, lists=None)


def _runner(name: str, cache: dict[str, Any]) -> str:
    if cache.get("OLLAMA_RUNNER_DIR"):
        return str(cache["OLLAMA_RUNNER_DIR"])
    match = re.match(r"(?i)^(cuda|jetpack)[ _]*v?([0-9]+)", name.strip())
    if match:
        return f"cuda_{'v' if match[1].lower() == 'cuda' else 'jetpack'}{match[2]}"
    return name


def _os(name: str, cache: dict[str, Any]) -> str:
    lowered = name.lower()
    if "arm64" in lowered or cache.get("OLLAMA_WINDOWS_RUNTIME_ARCH"):
        return "windows-arm64" if "windows" in lowered else "arm64"
    return "windows" if "windows" in lowered else "linux" if "linux" in lowered else "any"


def read_presets(path: str, text: str) -> list[dict[str, Any]]:
    """The configure presets that set CMAKE_CUDA_ARCHITECTURES (own or inherited), in file order, with the line of
    their list."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise NoMatch(f"{path} is not JSON: {exc}") from None
    presets: dict[str, dict[str, Any]] = {
        str(p.get("name")): p
        for p in data.get("configurePresets", [])
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    }
    lines = text.splitlines()

    def cache_of(name: str, depth: int = 0) -> dict[str, Any]:
        preset = presets.get(name) or {}
        merged: dict[str, Any] = {}
        parents = preset.get("inherits", [])
        for parent in ([parents] if isinstance(parents, str) else parents)[::-1]:
            if depth < 16:
                merged.update(cache_of(parent, depth + 1))
        merged.update(preset.get("cacheVariables") or {})
        return merged

    out, used = [], set()
    for name, preset in presets.items():
        own = (preset.get("cacheVariables") or {}).get("CMAKE_CUDA_ARCHITECTURES")
        if not isinstance(own, str) or preset.get("hidden"):
            continue
        cache = cache_of(name)
        number = next(
            (
                i
                for i, line in enumerate(lines, 1)
                if i not in used and "CMAKE_CUDA_ARCHITECTURES" in line and own in line
            ),
            None,
        )
        if number is None:
            continue
        used.add(number)
        archs = []
        for item in own.split(";"):
            match = re.fullmatch(r"\s*([0-9]+)([a-z]?)(-virtual|-real)?\s*", item)
            if match:
                archs.append([int(match[1]), match[2], match[3] == "-virtual"])
                if match[3] is None:  # CMake: an entry without -real / -virtual builds the cubin and the PTX
                    archs.append([int(match[1]), match[2], True])
        out.append(
            {
                "preset": name,
                "runner": _runner(name, cache),
                "os": _os(name, cache),
                "jetson": "jetpack" in name.lower(),
                "archs": archs,
                **hit(path, number, lines[number - 1]),
            }
        )
    return out  # none: a presets file without CUDA runners (the top-level one from v0.30 holds MLX's)


def read_lists(path: str, lines: list[str], regex: Any) -> list[dict[str, Any]]:
    """The architecture lists of a build script (``lists``: group ``archs``, optional ``runner``), one pseudo-preset
    per line that sets one."""
    out = []
    named = re.search(r"cuda_v([0-9]+)", path)
    for number, line in enumerate(lines, 1):
        match = regex.search(line)
        if match is None:
            continue
        groups = match.groupdict()
        runner = f"cuda_v{groups['runner']}" if groups.get("runner") else f"cuda_v{named[1]}" if named else "cuda"
        archs = []
        for item in (groups.get("archs") or "").split(";"):
            found = re.fullmatch(r"\s*([0-9]+)([a-z]?)(-virtual|-real)?\s*", item)
            if found:
                archs.append([int(found[1]), found[2], found[3] == "-virtual"])
        # a plain entry builds the cubin and the PTX (CMake's default; the Makefiles' code=[compute_XX,sm_XX])
        archs += [[n, suffix, True] for n, suffix, virtual in list(archs) if not virtual]
        if archs:
            os_ = "windows" if path.endswith(".ps1") else "linux"
            out.append(
                {
                    "preset": f"{path}:{number}",
                    "runner": runner,
                    "os": os_,
                    "jetson": "jetpack" in runner,
                    "archs": archs,
                    **hit(path, number, line),
                }
            )
    return out


def classify(archs: list[list], cc: int) -> tuple[str, str]:
    """How one list serves compute capability ``cc`` (61): ``cubin``, ``ptx`` (listed -virtual), ``compatible``
    (an older minor's cubin or older PTX CUDA would run, but the number is not listed) or ``absent``; and the entry."""
    for number, suffix, virtual in archs:
        if number == cc and not suffix:
            return ("ptx" if virtual else "cubin"), f"{number}{'-virtual' if virtual else ''}"
    cubins = [n for n, s, v in archs if not v and not s and n // 10 == cc // 10 and n % 10 <= cc % 10]
    if cubins:
        return "compatible", f"sm_{max(cubins)} cubin"
    ptx = [n for n, s, v in archs if v and not s and n <= cc]
    if ptx:
        return "compatible", f"compute_{max(ptx)} PTX"
    return "absent", ""


def runner_folder(stage: str) -> str:
    """The runner folder a Dockerfile stage name stands for: ``cuda-12`` and ``cuda_v12`` are cuda_v12, ``jetpack-5``
    is cuda_jetpack5."""
    number = re.sub(r"^.*?([0-9]+)$", r"\1", stage)
    return f"cuda_jetpack{number}" if "jetpack" in stage else f"cuda_v{number}"


WORDS = {"cubin": "cubin", "ptx": "PTX only", "compatible": "not listed", "absent": "absent"}


class CudaArchList:
    name = "cuda-arch-list"
    params_schema = params_object(
        ["mode"],
        {
            "mode": {"enum": ["build", "packaging", "discovery", "release"]},
            # the OS whose presets decide (the Windows release builds llama_cuda_v12_windows: Pascal as PTX only)
            "os": {"enum": ["linux", "windows"]},
            **REGEXES.schema,
        },
    )
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        REGEXES.check(rule)

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        regexes = REGEXES.compile(rule)
        presets: list[dict[str, Any]] = []
        others: dict[str, list[str]] = {}
        for path in paths:
            text = source.read_text(path) or ""
            if path.endswith(".json"):
                presets += read_presets(path, text)
            else:
                others[path] = text.splitlines()
        if regexes["lists"] is not None:
            seen = {(p["runner"], str(p["archs"])) for p in presets}
            for path, lines in others.items():
                for listed in read_lists(path, lines, regexes["lists"]):
                    if (
                        listed["runner"],
                        str(listed["archs"]),
                    ) not in seen:  # the Dockerfile's ARG = the Makefile's default
                        seen.add((listed["runner"], str(listed["archs"])))
                        presets.append(listed)
        if not presets:
            if regexes["lists"] is not None:
                raise NoMatch(f"no CUDA architecture list in {', '.join(paths)}")
            raise NoMatch(
                f"no CMake preset of {', '.join(p for p in paths if p.endswith('.json'))} sets CMAKE_CUDA_ARCHITECTURES"
            )
        facts: dict[str, Any] = {"presets": presets}
        if rule.params["mode"] == "packaging":
            if regexes["built_by"] is None:
                raise NoMatch("packaging mode needs params.built_by")
            built: dict[str, dict[str, Any]] = {}
            for path, lines in others.items():
                for number, line in enumerate(lines, 1):
                    for match in regexes["built_by"].finditer(line):
                        built.setdefault(match.group("preset").strip().strip("'\""), hit(path, number, line))
            if not built:
                raise NoMatch(f"no preset built by {', '.join(others) or 'the recipe'}")
            facts["built"] = built
            if regexes["shipped"] is not None:
                copied: dict[str, dict[str, Any]] = {}
                for path, lines in others.items():
                    for number, line in enumerate(lines, 1):
                        match = regexes["shipped"].search(line)
                        if match:
                            copied.setdefault(runner_folder(match.group("runner")), hit(path, number, line))
                facts["copied"] = copied
        if rule.params["mode"] == "discovery":
            found = next(
                (
                    hit(path, number, line)
                    for path, lines in others.items()
                    for number, line in enumerate(lines, 1)
                    if regexes["reject"] and regexes["reject"].search(line)
                ),
                None,
            )
            if found is None:
                raise NoMatch("the discovery check of compiled architectures is not there")
            facts["reject"] = found
        return facts

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        arch = catalog.nvidia[target.processor]
        cc = arch.cc_number
        mode = rule.params["mode"]
        remedy = fill(rule.remedy, target, number=arch.digits)  # {number}: 61, CMAKE_CUDA_ARCHITECTURES' spelling
        presets = [p for p in facts["presets"] if p["jetson"] == arch.jetson]  # Jetson GPUs: the JetPack runners
        if mode == "packaging":
            copied = facts.get("copied")
            presets = [
                dict(p, ship=facts["built"][p["preset"]], copy=(copied or {}).get(p["runner"]))
                for p in presets
                if p["preset"] in facts["built"] and (copied is None or p["runner"] in copied)
            ]
        rows = [(p, *classify(p["archs"], cc)) for p in presets]
        hits = tuple(Hit(p["path"], p["line"], p["text"]) for p, _, _ in rows)
        if mode == "packaging":
            hits += tuple(Hit.from_json(p["ship"]) for p, _, _ in rows)
            hits += tuple(Hit.from_json(p["copy"]) for p, _, _ in rows if p.get("copy"))
        described = (
            "; ".join(
                f"{p['runner']} ({p['os']}): {WORDS[kind]}" + (f" ({entry})" if entry else "")
                for p, kind, entry in rows
            )
            or "no CUDA runner"
        )
        want = rule.params.get("os", "linux")  # Windows: its own presets; the JetPack ones (Jetson boards) are Linux's
        chosen = [
            (p, kind, entry)
            for p, kind, entry in rows
            if p["os"] == want or (p["os"] == "any" and not (want != "linux" and p["jetson"]))
        ]
        linux = chosen or (rows if want == "linux" else [])
        if mode == "discovery":
            listed = [p["runner"] for p, _, _ in linux if any(n == cc for n, s, _ in p["archs"] if not s)]
            code = f"{cc}0"
            if listed:
                return Finding(
                    Status.ALLOWED,
                    f'discovery accepts CC {arch.capability} ("{code}" is in the compiled '
                    f"architectures of {', '.join(dict.fromkeys(listed))})",
                    (Hit.from_json(facts["reject"]), *hits),
                )
            runnable = [f"{p['runner']} ({entry})" for p, kind, entry in linux if kind == "compatible"]
            why = f"; CUDA would run it from {', '.join(runnable)}, but the match is exact" if runnable else ""
            return Finding(
                Status.BLOCKED,
                f'discovery skips the device: "{code}" is in no runner\'s compiled '
                f'architectures ("compute capability not in compiled architectures"){why}',
                (Hit.from_json(facts["reject"]), *hits),
                remedy=remedy,
            )
        kinds = {kind for _, kind, _ in linux}
        what = "release" if mode in ("packaging", "release") else "build"
        if not rows and arch.jetson and rule.params.get("lists"):  # no JetPack list in a build script: not known here
            return Finding(
                Status.UNKNOWN,
                f"the build scripts list no JetPack runner for {target}: {described}",
                hits,
                remedy=remedy,
            )
        if "cubin" in kinds:
            return Finding(Status.ALLOWED, f"the {what} has a {target} cubin: {described}", hits)
        if "ptx" in kinds:
            return Finding(
                Status.PARTIAL,
                f"the {what} has {target} as PTX only (compiled by the driver at first load): {described}",
                hits,
                remedy=remedy,
            )
        if "compatible" in kinds:  # CUDA runs it from an older cubin or PTX; an exact discovery match still rejects it
            return Finding(
                Status.PARTIAL,
                f"the {what} does not list {target}, but CUDA's compatibility runs it from another entry: {described}",
                hits,
                remedy=remedy,
            )
        return Finding(Status.BLOCKED, f"no runner of the {what} lists {target}: {described}", hits, remedy=remedy)


MATCHER: Matcher = CudaArchList()
