"""What the release archives users download really contain, not what a preset builds.

Ollama's Linux tarballs are made by one job of the release workflow: it builds one Docker target of the Dockerfile
for each OS and architecture (``target: archive_novulkan`` at v0.12.6-v0.12.10, ``archive`` before and after,
``archive-target: archive`` from v0.30) and then sorts the built ``lib/ollama/*`` folders into tarballs with a shell
``case "$COMPONENT" in`` list; a folder no pattern takes is in no tarball (``lib/ollama/vulkan`` at v0.12.11, until
399eacf48 "ci: fix missing vulkan binaries in linux bundles", first in v0.13.0).

So a runner folder ships when (1) a stage the archive target reaches copies the runner's build into ``lib/ollama``
(the target's ``FROM`` chain and every ``COPY --from=STAGE`` of a ``lib/ollama`` path, ``ARG`` defaults and
``TARGETARCH`` filled in), and (2) the component list, where the workflow has one, takes the folder into the main
tarball. Without a release workflow (older releases, a plain folder) only (1)'s weaker form is read: some stage of
the Dockerfile copies the build.
"""

from __future__ import annotations

import fnmatch
import re
from typing import TYPE_CHECKING, Any, Mapping

from gfxgate.matchers import Finding, Hit, NoMatch, check_regex, hit, params_object
from gfxgate.model import Status
from gfxgate.saferegex import rule_regex

if TYPE_CHECKING:
    from gfxgate.matchers import Matcher, MatcherRule
    from gfxgate.sources.base import Source
    from gfxgate.targets import TargetCatalog, TargetId

_FROM = re.compile(r"^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE)
_COPY_FROM = re.compile(r"^\s*COPY\s+(?:--\S+\s+)*?--from=(\S+)\s+(.*)$", re.IGNORECASE)
_ARG = re.compile(r"^\s*ARG\s+(\w+)(?:=(\S*))?\s*$", re.IGNORECASE)
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_CASE_ARM = re.compile(r"^\s*([^()#]+?)\)\s*echo\s+\$COMPONENT\s*>>\s*(.+?)\.tar\.in\b")


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Dockerfile lines with ``\\`` continuations joined, each with the number of its first line."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if pending is not None:
            pending = (pending[0], pending[1] + " " + line.strip())
        elif line.lstrip().startswith("#"):
            continue
        else:
            pending = (number, line)
        if pending[1].endswith("\\"):
            pending = (pending[0], pending[1][:-1])
            continue
        out.append(pending)
        pending = None
    if pending is not None:
        out.append(pending)
    return out


def _expand(text: str, values: dict[str, str]) -> str:
    for _ in range(4):  # ARG FLAVOR=${TARGETARCH}: a default may name another
        new = _VAR.sub(lambda m: values.get(m.group(1) or m.group(2), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def _stages(path: str, text: str, arch: str, os_name: str) -> dict[str, dict[str, Any]]:
    """Stage name -> its base (a stage name or an image), its FROM line and its ``lib/ollama`` copies."""
    values = {"TARGETARCH": arch, "TARGETOS": os_name, "TARGETPLATFORM": f"{os_name}/{arch}"}
    stages: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for number, line in _logical_lines(text):
        if current is None and (arg := _ARG.match(line)) and arg.group(2) is not None:
            values.setdefault(arg.group(1), _expand(arg.group(2).strip("'\""), values))
            continue
        if found := _FROM.match(line):
            base = _expand(found.group(1), values)
            name = found.group(2) or f"#{len(stages)}"
            current = stages[name] = {"base": base, "from": hit(path, number, line), "copies": []}
            continue
        if current is not None and (copy := _COPY_FROM.match(line)):
            if "lib/ollama" in copy.group(2):
                current["copies"].append({**hit(path, number, line), "stage": _expand(copy.group(1), values)})
    return stages


def _reach(stages: dict[str, dict[str, Any]], target: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The FROM lines and the ``lib/ollama`` copies a build of ``target`` goes through."""
    froms, copies, seen, todo = [], [], set(), [target]
    while todo:
        name = todo.pop()
        if name in seen or name not in stages:
            continue
        seen.add(name)
        stage = stages[name]
        froms.append(stage["from"])
        todo.append(stage["base"])
        for copy in stage["copies"]:
            copies.append(copy)
            todo.append(copy["stage"])
    return froms, copies


def _line_of(lines: list[str], start: int, pattern: re.Pattern[str]) -> int | None:
    for number in range(start, len(lines)):
        if pattern.search(lines[number]):
            return number + 1
    return None


def _archive_job(path: str, text: str, os_name: str, arch: str) -> dict[str, Any] | None:
    """The workflow job that writes the tarballs: the Docker target of the plain archive for this OS and
    architecture, and the component list's arms for the main tarball (``ollama-OS-ARCH.tar.in``)."""
    import yaml

    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return None
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, dict):
        return None
    lines = text.splitlines()
    for job_name, job in jobs.items():
        steps = job.get("steps") if isinstance(job, dict) else None
        steps = steps if isinstance(steps, list) else []
        runs = [s.get("run", "") for s in steps if isinstance(s, dict)]
        if not any(isinstance(r, str) and "$COMPONENT" in r for r in runs):
            continue
        job_line = _line_of(lines, 0, re.compile(rf"^\s{{2}}{re.escape(str(job_name))}:\s*$")) or 1
        key = None
        for step in steps:
            target = (step.get("with") or {}).get("target") if isinstance(step, dict) else None
            if isinstance(target, str) and (m := re.fullmatch(r"\$\{\{\s*matrix\.([\w-]+)\s*\}\}", target.strip())):
                key = m.group(1)
        include = (((job.get("strategy") or {}).get("matrix") or {}).get("include")) or []
        chosen = None
        for entry in include:
            if not isinstance(entry, dict) or entry.get("os", os_name) != os_name or entry.get("arch") != arch:
                continue
            if entry.get("suffix") or "rocm" in str(entry.get(key, "")):
                continue  # the -rocm tarball's own build
            chosen = str(entry.get(key)) if key else None
            break
        target_hit = None
        if chosen:
            at = _line_of(
                lines,
                job_line - 1,
                re.compile(rf"^\s*-?\s*{re.escape(key or '')}:\s*['\"]?{re.escape(chosen)}['\"]?\s*$"),
            )
            target_hit = {**hit(path, at, lines[at - 1]), "name": chosen} if at else None
        arms = []
        main = "ollama-${{ matrix.os }}-${{ matrix.arch }}"
        for number in range(job_line - 1, len(lines)):
            arm = _CASE_ARM.match(lines[number])
            if arm and arm.group(2) == main:
                arms.append(
                    {**hit(path, number + 1, lines[number]), "patterns": [p.strip() for p in arm.group(1).split("|")]}
                )
        return {"target": target_hit, "arms": arms}
    return None


class ReleaseArchive:
    name = "release-archive"
    params_schema = params_object(
        ["folder", "stage"],
        {
            "folder": {"type": "string", "pattern": "^[A-Za-z0-9_.*-]+$"},  # the runner folder under lib/ollama
            "stage": {"type": "string"},  # regex over a COPY --from stage name: the runner's build
            "os": {"type": "string"},
            "arch": {"type": "string"},
            "title": {"type": "string"},  # the runner in summaries ("Vulkan")
        },
    )
    rule_requires = ("params",)

    def check_params(self, rule: MatcherRule) -> None:
        check_regex(rule, "params.stage", rule.params["stage"])

    def extract(self, rule: MatcherRule, source: Source, paths: list[str]) -> dict[str, Any]:
        params = rule.params
        os_name, arch = params.get("os", "linux"), params.get("arch", "amd64")
        stage = rule_regex(params["stage"])
        dockerfiles = [p for p in paths if p.rsplit("/", 1)[-1].startswith("Dockerfile")]
        workflows = [p for p in paths if p.endswith((".yaml", ".yml"))]
        if not dockerfiles:
            raise NoMatch("no Dockerfile among the rule's paths")
        path = dockerfiles[0]
        stages = _stages(path, source.read_text(path) or "", arch, os_name)
        builds = [c for s in stages.values() for c in s["copies"] if stage.search(c["stage"])]
        job = None
        for workflow in workflows:
            job = _archive_job(workflow, source.read_text(workflow) or "", os_name, arch)
            if job:
                break
        facts: dict[str, Any] = {
            "dockerfile": path,
            "builds": builds,
            "target": None,
            "reached": [],
            "chain": [],
            "arms": None,
        }
        if job is None:
            return facts
        facts["arms"] = job["arms"] or None
        if job["target"] and job["target"]["name"] in stages:
            froms, copies = _reach(stages, job["target"]["name"])
            facts["target"] = job["target"]
            facts["chain"] = froms
            facts["reached"] = [c for c in copies if stage.search(c["stage"])]
        return facts

    def evaluate(
        self, rule: MatcherRule, facts: Mapping[str, Any], target: TargetId, catalog: TargetCatalog
    ) -> Finding:
        params = rule.params
        title, folder = params.get("title", params["folder"]), params["folder"]
        where = f"lib/ollama/{folder}"
        if not facts["builds"]:
            absent = (rule.absent or {}).get(
                "summary"
            ) or f"not shipped: no stage of {facts['dockerfile']} copies a {title} build"
            return Finding(
                Status.BLOCKED, absent, (Hit(facts["dockerfile"], None, "(searched: no match)"),), remedy=rule.remedy
            )
        arms = facts.get("arms")
        taken = [a for a in arms or () if any(fnmatch.fnmatchcase(where, p) for p in a["patterns"])]
        if facts.get("target") is not None and not facts["reached"]:
            name = facts["target"]["name"]
            hits = (
                Hit.from_json(facts["target"], f"the Linux tarballs are built from Docker target `{name}`"),
                *(Hit.from_json(h, "the stages that target goes through") for h in facts["chain"][:3]),
            )
            return Finding(
                Status.BLOCKED,
                f"built but not in the Linux release archive: the tarballs are built from Docker target "
                f"{name}, whose stages copy no {title} build into lib/ollama",
                hits,
                remedy=rule.remedy,
            )
        if arms is not None and not taken:
            hits = tuple(Hit.from_json(a, "the main tarball's component list") for a in arms[:4])
            return Finding(
                Status.BLOCKED,
                f"built but not in the Linux release archive: the tarball's component list takes no {where}",
                hits,
                remedy=rule.remedy,
            )
        copies = facts["reached"] or facts["builds"]
        hits = (Hit.from_json(copies[0]), *(Hit.from_json(a, f"the tarball takes {where}") for a in taken[:1]))
        return Finding(Status.ALLOWED, f"shipped in the Linux archive (COPY --from={copies[0]['stage']})", hits)


MATCHER: Matcher = ReleaseArchive()
