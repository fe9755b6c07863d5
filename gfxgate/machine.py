"""The machine's facts as inputs to the answer: which backends' runners are installed (and how to install a missing
one), which backends the runs on this machine saw fail or fall back to the CPU, and the runtime evidence recorded
elsewhere (rules/runtime.yaml: the study's Vega 56, the H200).

Pure data and pure functions: ``gfxgate.host.install.machine_facts`` fills :class:`MachineFacts` from a machine's
files, ``gfxgate.doctor`` adds the runs of its logs, and the answer (``decide``) reads :func:`judge` — so a backend
whose runner is not installed is never "runs", and one the runs saw fail is "failed on this machine".
"""

from __future__ import annotations

import functools

from gfxgate.records import dataclass
from gfxgate.serial import JsonRecord
from gfxgate.datafiles import load_yaml
from gfxgate.resources import rules_dir
from gfxgate.errors import RuleError

BACKENDS = ("rocm", "vulkan", "cuda", "cpu")


@dataclass(frozen=True)
class RunnerFact(JsonRecord):
    """One backend's runner under one layout: installed (the files that say so) or not (what installs it)."""

    backend: str
    layout: str  # rules/installs.yaml id: official, arch, debian, docker
    installed: bool
    files: tuple[str, ...]  # the runner files or folders found; empty when not installed
    package: str  # the package, archive or image that provides it
    install: tuple[str, ...]  # the commands that install it
    evidence: str  # where the layout's facts come from (a PKGBUILD, install.sh …)


@dataclass(frozen=True)
class RunFact(JsonRecord):
    """What one run on this machine showed for a backend: ``failed`` (crash, load failure), ``cpu`` (the model ran,
    but on the CPU), ``ok`` (it ran with layers on the GPU)."""

    backend: str
    outcome: str  # "ok", "failed", "cpu"
    summary: str
    where: str  # log file:line, or a sweep run id


@dataclass(frozen=True)
class RuntimeRun(JsonRecord):
    """A run recorded in rules/runtime.yaml, with its conditions."""

    id: str
    card: str
    target: str
    backend: str
    runtime: str
    versions: tuple[str, ...]
    model: str
    num_gpu: tuple[int, ...]
    outcome: str
    detail: str
    source: str
    runs: int | None = None
    passed: int | None = None

    def sentence(self, version: str | None = None) -> str:
        """ "on a Radeon RX Vega 56 at 0.17.4, Vulkan crashed at num_gpu ≥ 1 with qwen3.5:2b; not measured at
        v0.32.15: `gfxgate sweep` checks yours"."""
        name = {"rocm": "ROCm", "vulkan": "Vulkan", "cuda": "CUDA", "cpu": "CPU"}[self.backend]
        at = "/".join(self.versions)
        if 0 in self.num_gpu and len(self.num_gpu) > 1:
            where = "at every num_gpu"
        elif set(self.num_gpu) == {-1}:
            where = "with every layer on the GPU"
        elif 0 not in self.num_gpu:
            where = "at num_gpu ≥ 1"
        else:
            where = "at num_gpu " + ", ".join(map(str, self.num_gpu))
        did = {"crashed": "crashed", "ok": "ran", "mixed": "ran with failures"}[self.outcome]
        if self.runs:
            did += f" ({self.passed}/{self.runs} passed)"
        text = f"on a {self.card} at {self.runtime} {at}, {name} {did} {where} with {self.model}"
        if version and version not in self.versions:
            text += f"; not measured at v{version}: `gfxgate sweep` checks yours"
        return text


@dataclass(frozen=True)
class MachineFacts(JsonRecord):
    """The facts of one machine that the answer reads. ``layouts`` empty: nothing recognised (a source build, an
    unknown prefix): then no runner is called missing."""

    layouts: tuple[str, ...] = ()
    runners: tuple[RunnerFact, ...] = ()
    runs: tuple[RunFact, ...] = ()
    distro: tuple[str, ...] = ()  # /etc/os-release ID then ID_LIKE words: ("endeavouros", "arch")
    vulkan_driver: str | None = None  # the command that installs the distribution's Mesa RADV driver
    pin_install: str | None = None  # install one Ollama release: {version} to fill
    pin_before: str | None = None  # what to remove first on this layout (Arch's packages), or None

    def runner(self, backend: str) -> tuple[RunnerFact, ...]:
        return tuple(r for r in self.runners if r.backend == backend)


@dataclass(frozen=True)
class BackendJudgement(JsonRecord):
    """What the machine says about one backend before any route is read: ``not installed`` (with the install
    commands of the layout found), ``failed on this machine`` (with the run's evidence), or nothing to say (None)."""

    backend: str
    state: str  # "not installed", "failed on this machine", "ran on the CPU"
    reason: str
    commands: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()  # where: file:line, run id, installed path
    package: str | None = None  # "not installed": the package, archive or image that provides the runner


def judge(facts: MachineFacts | None, backend: str) -> BackendJudgement | None:
    """The machine's word on ``backend``: a failed run first (it is the strongest evidence), then a missing runner."""
    if facts is None:
        return None
    runs = [r for r in facts.runs if r.backend == backend]
    failed = [r for r in runs if r.outcome == "failed"]
    if failed and not any(r.outcome == "ok" for r in runs):
        return BackendJudgement(
            backend, "failed on this machine", failed[0].summary, (), tuple(r.where for r in failed[:3])
        )
    runners = facts.runner(backend)
    # the CPU runner comes with every layout's base package (a captured tree may leave its files out): never missing
    if backend != "cpu" and runners and not any(r.installed for r in runners):
        first = runners[0]
        return BackendJudgement(
            backend,
            "not installed",
            f"no {backend} runner in the {first.layout} layout: install {first.package}",
            first.install,
            (first.evidence,),
            first.package,
        )
    if backend != "cpu" and runs and all(r.outcome == "cpu" for r in runs):
        commands = (
            (facts.vulkan_driver, "sudo systemctl restart ollama")
            if backend == "vulkan" and facts.vulkan_driver
            else ()
        )
        return BackendJudgement(backend, "ran on the CPU", runs[0].summary, commands, tuple(r.where for r in runs[:3]))
    return None


def shows_cpu(facts: MachineFacts | None) -> bool:
    """The runs ran on the CPU and no GPU backend ran: "nothing to change" would be no answer."""
    if facts is None:
        return False
    return any(r.backend == "cpu" for r in facts.runs) and not any(
        r.outcome == "ok" and r.backend != "cpu" for r in facts.runs
    )


@functools.cache
def runtime_runs() -> tuple[RuntimeRun, ...]:
    """rules/runtime.yaml, validated against its schema (errors name the file and line)."""
    data = load_yaml(rules_dir() / "runtime.yaml", "runtime")
    out = []
    for item in data["runs"]:
        out.append(RuntimeRun(**{**item, "versions": tuple(item["versions"]), "num_gpu": tuple(item["num_gpu"])}))
    ids = [r.id for r in out]
    if len(set(ids)) != len(ids):
        raise RuleError(f"rules/runtime.yaml: duplicate run id {sorted(i for i in ids if ids.count(i) > 1)[0]}")
    return tuple(out)


def runtime_evidence(target: str, backend: str | None = None) -> tuple[RuntimeRun, ...]:
    """The recorded runs on ``target`` (its processor), of ``backend`` when given."""
    proc = target.split(":")[0]
    return tuple(r for r in runtime_runs() if r.target == proc and (backend is None or r.backend == backend))


def cautions(target: str, version: str | None = None) -> tuple[tuple[str, str], ...]:
    """(sentence, source) per recorded failure on ``target``, each with the contrast the same card and backend gave
    with another model ("tinyllama passed 20/20 on Vulkan: model dependent") and where it may not apply."""
    runs = runtime_evidence(target)
    out = []
    for bad in (r for r in runs if r.outcome != "ok"):
        text = bad.sentence(version)
        contrast = [
            r
            for r in runs
            if r.outcome == "ok" and r.card == bad.card and r.backend == bad.backend and r.model != bad.model
        ]
        for ok in contrast[:1]:
            count = f" {ok.passed}/{ok.runs}" if ok.runs else ""
            text += f" (the same card ran {ok.model}{count} on it: model dependent)"
        out.append((text, bad.source))
    return tuple(out)
