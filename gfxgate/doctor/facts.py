"""The machine's facts applied to doctor's backends: a runner that is not installed, a backend the runs saw fail or
fall back to the CPU, a blocking HSA override the route's steps must remove, and the recorded runtime evidence.

Pure: it reads :class:`gfxgate.machine.MachineFacts` (the installed runners from ``host.install.machine_facts``, the
runs from :func:`runs_of`) and doctor's own records; ``gfxgate.machine.judge`` says what the machine shows for each
backend, the one computation the answer reads as well.
"""

from __future__ import annotations

import dataclasses
import shlex

from gfxgate import datacache
from gfxgate.answer.steps import build_recipe as _recipe
from gfxgate.doctor.model import BackendVerdict, FixStep
from gfxgate.machine import MachineFacts, RunFact, cautions, judge, runtime_evidence, shows_cpu  # noqa: F401 - shows_cpu: doctor's callers
from gfxgate.model import Evidence, Location, Status, Verdict
from gfxgate.datafiles import load_yaml, read_rules
from gfxgate.resources import rules_dir

_BACKEND_OF = {"rocm": "rocm", "hip": "rocm", "vulkan": "vulkan", "cuda": "cuda"}
VULKAN_DRIVER = "vulkan-radeon (Arch) / mesa-vulkan-drivers (Debian, Ubuntu)"


def _backend(name: str) -> str | None:
    low = name.lower()
    return next((b for key, b in _BACKEND_OF.items() if low.startswith(key)), None)


def _where(evidence) -> str:
    ev = evidence[-1] if evidence else None
    return str(ev.location) if ev is not None and ev.location is not None else "the log"


def runs_of(diagnoses) -> tuple[RunFact, ...]:
    """What the logs' runs show per backend: a failed run of a GPU backend, a run with layers on a GPU, and a Vulkan
    that was switched on (OLLAMA_VULKAN) but offered no GPU while every run ran on the CPU."""
    out: list[RunFact] = []
    for diagnosis in diagnoses or ():
        for run in diagnosis.runs:
            gpu = [b for d in run.gpu_devices if (b := _backend(d))] or [b for n in run.backends if (b := _backend(n))]
            where = _where(run.evidence)
            if run.outcome == "failed" and gpu:
                phase = f" ({run.phase})" if run.phase else ""
                frames = f"; {' → '.join(run.frames[:2])}" if run.frames else ""
                out.append(RunFact(gpu[0], "failed", f"run {run.index} failed{phase}: {run.summary}{frames}", where))
            elif run.outcome == "ok" and gpu and run.offload and not run.offload.startswith("0/"):
                out.append(RunFact(gpu[0], "ok", f"run {run.index}: {run.offload} layers on {gpu[0]}", where))
        facts = {f.name: f for f in diagnosis.facts}
        vulkan = facts.get("env:OLLAMA_VULKAN")
        cpu_only = bool(diagnosis.runs) and all(r.outcome == "cpu-only" for r in diagnosis.runs)
        if (
            vulkan is not None
            and vulkan.value.lower() in ("1", "true")
            and cpu_only
            and not any(g.backend.lower() == "vulkan" and not g.role.startswith("left out") for g in diagnosis.gpus)
        ):
            out.append(
                RunFact(
                    "vulkan",
                    "cpu",
                    f"OLLAMA_VULKAN was on ({_where(vulkan.evidence)}), yet discovery "
                    "listed no Vulkan GPU and every run ran on the CPU: the Vulkan driver "
                    f"({VULKAN_DRIVER}) or Ollama's Vulkan runner is missing",
                    _where(vulkan.evidence),
                )
            )
        if cpu_only:
            for run in diagnosis.runs:
                out.append(RunFact("cpu", "ok", f"run {run.index}: {run.summary}", _where(run.evidence)))
    return tuple(out)


def runs_of_worklog(worklog) -> tuple[RunFact, ...]:
    """A sweep's runs (the last of each cell) with layers asked on the GPU, per backend (the endpoint's name:
    rocm, vulkan, cuda): "ok", or "failed" with the outcome, the error and the crash's phase."""
    out = []
    for run in worklog.effective_runs():
        backend = _backend(run.endpoint or "")
        if backend is None or run.num_gpu == 0:
            continue
        where = f"{worklog.path}:{run.line} (run {run.run_id})"
        if run.ok:
            out.append(
                RunFact(backend, "ok", f"sweep run {run.run_id}: ok at num_gpu {run.num_gpu} ({run.model})", where)
            )
            continue
        phase = run.get("phase") or {}
        said = (
            f", {phase.get('phase')}: {phase.get('reason')}" if isinstance(phase, dict) and phase.get("phase") else ""
        )
        error = " ".join(str(run.get("error") or "").split())[:160]
        out.append(
            RunFact(
                backend,
                "failed",
                f"sweep run {run.run_id}: {run.outcome} at num_gpu {run.num_gpu} ({run.model})"
                + said
                + (f"; {error}" if error else ""),
                where,
            )
        )
    return tuple(out)


def apply(backends: list[BackendVerdict], facts: MachineFacts | None, judged=None) -> list[BackendVerdict]:
    """Each backend as the machine has it: "not installed" (the install step first, then the route's steps),
    "failed on this machine" / "ran on the CPU" (the route's steps kept, the runs' evidence as the reason).
    ``judged``: the Route's own word per backend (``answer.route.with_machine``, what decide computes with the
    machine); a backend the Route does not hold is judged here the same way (``machine.judge``)."""
    out = []
    for verdict in backends:
        said = (
            judged[verdict.backend]
            if judged is not None and verdict.backend in judged
            else judge(facts, verdict.backend)
        )
        if said is None:
            out.append(verdict)
            continue
        if said.state == "not installed":
            step = FixStep(
                "install-runner",
                f"install the {verdict.backend} runner: {said.package}",
                said.commands,
                (Evidence("installs", None, said.reason, said.evidence[0] if said.evidence else ""),),
                origin="machine",
            )
            steps = (step,) + tuple(verdict.steps)
        elif said.commands:  # ran on the CPU with Vulkan on: the driver
            step = FixStep(
                "install-vulkan-driver",
                "install the Vulkan driver (Mesa RADV) so Ollama's Vulkan runner finds the GPU",
                said.commands,
                (Evidence("log", None, said.reason[:300], ", ".join(said.evidence)),),
                origin="machine",
            )
            steps = (step,) + tuple(verdict.steps)
        else:
            steps = tuple(verdict.steps)
        reason = said.reason + (
            f" (evidence: {', '.join(said.evidence)})" if said.evidence and said.state != "not installed" else ""
        )
        out.append(
            dataclasses.replace(
                verdict, state=said.state, steps=steps, reason="; ".join(x for x in (reason, verdict.reason) if x)
            )
        )
    return out


def remove_override(backends: list[BackendVerdict], rows: list[Verdict]) -> list[BackendVerdict]:
    """A blocking HSA override stays in the service's environment after every other step: ROCm's steps begin by
    deleting its line (``file:line``), unless the route itself sets the override to another value (then that step
    replaces it)."""
    row = next((r for r in rows if r.layer == "override" and r.status == Status.BLOCKED), None)
    if row is None or not row.evidence or row.evidence[0].location is None:
        return backends
    loc = row.evidence[0].location
    path, line = loc.path, loc.line
    if line is None:
        return backends
    text = row.evidence[0].text
    out = []
    for verdict in backends:
        if verdict.backend != "rocm" or any(
            s.commands and "HSA_OVERRIDE_GFX_VERSION=" in " ".join(s.commands) for s in verdict.steps if not s.done
        ):
            out.append(verdict)
            continue
        step = FixStep(
            "remove-override",
            f"remove {text} ({path}:{line}): it blocks ROCm ({row.summary})",
            (
                f"sudo sed -i '{line}d' {shlex.quote(path)}",
                "sudo systemctl daemon-reload && sudo systemctl restart ollama",
            ),
            (Evidence("unit", Location(repo="file", path=path, line=line), text, "blocking"),),
            origin="machine",
        )
        state = verdict.state if verdict.state not in ("runs",) else "needs steps"
        out.append(dataclasses.replace(verdict, state=state, steps=(step,) + tuple(verdict.steps)))
    return out


def runtime_lines(target: str, version: str | None) -> tuple[str, ...]:
    """The recorded runs on this target (rules/runtime.yaml), each with its conditions and where it may not apply."""
    return tuple(r.sentence(version) + f" [{r.source}]" for r in runtime_evidence(target))


_TROUBLE = ("not installed", "failed on this machine", "ran on the CPU")


def answer(
    sentence: str,
    backends: list[BackendVerdict],
    facts: MachineFacts | None,
    pin: str | None,
    target: str = "",
    version: str | None = None,
) -> str:
    """The route's sentence as this machine can follow it: what the machine shows first (a runner not installed,
    a backend that failed, every run on the CPU), then the next backend to try with its first step; never "nothing
    to change" for someone whose runs are on the CPU."""
    lead = sentence.split(":", 1)[-1]
    trouble = sorted(
        (b for b in backends if b.state in _TROUBLE and b.backend != "cpu"),
        key=lambda b: lead.find(b.title) if b.title in lead else len(lead),
    )  # the route's lead first
    cpu = shows_cpu(facts)
    if not trouble and not cpu:
        return sentence + _caution(sentence, target, version)
    said = (["every run in the log ran on the CPU"] if cpu else []) + [f"{b.title} {b.state}" for b in trouble]
    usable = [b for b in backends if b.state in ("runs", "needs steps") and b.backend != "cpu"]
    if usable:
        first = usable[0]
        todo = next((s for s in first.steps if not s.done), None)
        then = f"next: {first.title} ({first.label})" + (f", first step: {todo.what}" if todo else "")
    elif trouble and trouble[0].state == "not installed" and trouble[0].steps:
        then = f"next: {trouble[0].steps[0].what}"
    else:
        then = f"next: pin {pin}" if pin else "no backend runs as the machine is"
    route = sentence.replace("nothing to change", "no release setting to change")
    return f"On this machine: {'; '.join(said)}. {then[0].upper() + then[1:]}. The release's route: {route}" + _caution(
        route, target, version
    )


def _caution(sentence: str, target: str, version: str | None) -> str:
    """A recorded crash of the backend the sentence leads with (rules/runtime.yaml), with its conditions."""
    if not target:
        return ""
    head = sentence.split(";")[0].split(". The release's route: ")[-1]
    said = [
        text
        for text, _ in cautions(target, version)
        if any(n in head and n in text for n in ("ROCm", "Vulkan", "CUDA"))
    ]
    return "".join(f". Caution: {text}" for text in said[:1])


def pin_route(
    pin: str | None, facts: MachineFacts | None, installed: str | None = None, *, vulkan: bool | None = None
) -> tuple[tuple[str, ...], str | None]:
    """The pin as steps: remove the distribution's packages first where they would shadow it (Arch), install the
    release with Ollama's install script, and what the pin gives up (``vulkan``: whether the embedded timeline has a
    Vulkan route at the pin; False: the pin gives the Vulkan backend up)."""
    if not pin or facts is None or not facts.pin_install:
        return (), None
    version = pin.split()[1].lstrip("v") if len(pin.split()) > 1 else ""
    if not version:
        return (), None
    commands = ((facts.pin_before,) if facts.pin_before else ()) + (facts.pin_install.replace("{version}", version),)
    parts = tuple(int(p) for p in version.split(".") if p.isdigit())
    have = tuple(int(p) for p in (installed or "").split(".") if p.isdigit())
    if have and parts >= have:
        return commands, f"nothing: v{version} is not older than the installed v{installed}"
    lost = "every later release's model support and fixes: a model that needs a newer Ollama will not load"
    if vulkan is False:  # the timeline's cell at the pin, not a fixed version (the archives ship Vulkan from v0.13.0)
        lost += f"; the Vulkan runner (the embedded timeline has no Vulkan route at v{version}: its release ships none)"
    return commands, lost


def _installs_rules() -> dict:
    return load_yaml(rules_dir() / "installs.yaml", "installs")


def build_recipe(
    setting: str, version: str | None, facts: MachineFacts | None, exec_start: str | None
) -> tuple[str, ...]:
    """The build route as commands at ``version``: the HIP SDK of the release's ROCm, the clone at the tag, the
    route's configure line (``setting``), the build, the install under /usr/local, and the service pointed at it: the
    recipe scan prints under the build step (answer/steps.py: build_recipe), with this machine's distribution and unit."""
    return _recipe(
        _installs_rules()["build"], setting, version, distro=facts.distro if facts else (), exec_start=exec_start
    )


# packaged_lines' answer per content of rules/installs.yaml and processor, kept for the life of the process (doctor
# asks it for each GPU at each run; the in-process test runner's clearing of functools caches does not reach it: the
# lines of some bytes are the same whatever the call, datacache.memo)
_PACKAGED: dict[tuple[bytes, str], tuple[str, ...]] = datacache.memo()


def packaged_lines(target: str) -> tuple[str, ...]:
    """Distribution packages whose real contents carry code for ``target`` (rules/installs.yaml ``packaged``): a
    route without a build, named with its evidence."""
    proc = target.split(":")[0]
    path = rules_dir() / "installs.yaml"
    raw = read_rules(path)
    key = (datacache.digest(raw), proc)
    lines = _PACKAGED.get(key)
    if lines is None:
        lines = _PACKAGED[key] = _packaged_lines(load_yaml(path, "installs", raw), proc)
    return lines


def _packaged_lines(installs: dict, proc: str) -> tuple[str, ...]:
    found = [p for p in installs.get("packaged", ()) if proc in p["targets"]]
    if not found:
        return ()
    what = "; ".join(f"{p['package']} {p['version']} ({p['suite']}): {p['what']} has {proc}" for p in found)
    return (
        f"packaged route: {what} — `{found[0]['install']}` (llama.cpp's llama-server with --device ROCm0, without Ollama)",
    )
