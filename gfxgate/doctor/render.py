"""Formatters of a :class:`MachineReport`: md, json, text (terminal first), nfd (node-feature-discovery local
feature file) and prometheus (node_exporter textfile collector). No I/O: the CLI writes."""

from __future__ import annotations

import re

from gfxgate.doctor.model import MachineReport
from gfxgate.report.formats import Format, Formatter, choose
from gfxgate.report.markdown import code, md_escape
from gfxgate.jsontext import dumps
from gfxgate.model import RANK
from gfxgate.serial import document

NFD_PREFIX = "gfxgate.io/"
_NFD_VALUE = re.compile(r"[^A-Za-z0-9._-]+")


def _gib(n: int | None) -> str:
    if not n:
        return "-"
    try:
        return f"{n / (1 << 30):.1f} GiB"
    except OverflowError:  # 10**400 bytes from a captured file is not a size
        return "?"


def _fence(commands) -> str:
    """A code fence longer than any backtick run in ``commands`` (a captured value cannot close it)."""
    runs = [len(m) for cmd in commands for m in re.findall(r"`+", cmd)]
    return "`" * max(3, max(runs, default=0) + 1)


def _ev(e) -> str:
    return str(e.location) if e.location else e.source


def render_json(report: MachineReport) -> str:
    return dumps(document("doctor", report.to_json()), ensure_ascii=True) + "\n"


def _lines(report: MachineReport, md: bool) -> list[str]:
    h = (lambda n, s: f"{'#' * n} {s}") if md else (lambda n, s: s + "\n" + ("=" if n == 2 else "-") * len(s))
    esc = md_escape if md else (lambda s: s)  # a captured root's name is outside text too (issue 41)
    out = [h(2, "gfxgate doctor" + (f" (root {esc(report.root)})" if report.root != "/" else "")), ""]
    out += _machine_lines(report, md)
    out += _target_lines(report, md)
    return out


def _machine_lines(report: MachineReport, md: bool) -> list[str]:
    """GPUs, installs, the service and access: what the machine is."""
    esc = md_escape if md else (lambda s: s)
    c = code if md else (lambda s: s)
    h = (lambda n, s: f"{'#' * n} {s}") if md else (lambda n, s: s + "\n" + ("=" if n == 2 else "-") * len(s))
    out = [h(3, "GPUs")]
    for g in report.gpus:
        kind = "iGPU" if g.integrated else "dGPU" if g.integrated is False else ""
        mem = f"VRAM {_gib(g.vram_bytes)}" + (
            f", GTT {_gib(g.gtt_bytes)} (what an iGPU can use)" if g.gtt_bytes else ""
        )
        out.append(
            f"- {esc(g.name)} ({esc(g.name_source)}) — {esc(g.target or g.vendor)} {kind} {esc(g.pci)}, {mem}"
            + (f", {c(g.render_node)}" if g.render_node else "")
            + (f", from {c(g.kfd_node)}" if g.kfd_node else "")
        )
    if report.os == "windows":  # no sysfs: the GPUs are those the server log names (the targets below)
        out.append("- a Windows install: no sysfs; the GPUs are those the server log names (below)")
    elif not report.gpus:
        out.append("- none found")
    if report.os != "windows":
        out.append(f"- amdgpu module: {'loaded' if report.amdgpu_loaded else 'not loaded'}")
    out += ["", h(3, "Installed")]
    for i in report.installs.ollama:
        out.append(
            f"- Ollama {esc(i.version or 'version unknown')} ({esc(i.version_from or 'no version source')}): "
            f"{c(i.binary or '-')}, libraries {c(i.lib or '-')}"
        )
        for r in i.runners:
            tens = esc(", ".join(f"{t} {n}" for t, n in r.tensile))
            out.append(
                f"  - {c(r.path)} [{esc(r.kind)}] {esc(', '.join(r.libraries)) or '-'}"
                + (f"; rocBLAS {c(r.rocblas)}: {tens or 'no target files'}" if r.rocblas else "")
            )
    for server in report.installs.llama_server:
        out.append(f"- llama-server {c(server)}")
    for backend in report.installs.ggml_backends:
        out.append(f"- ggml backend {c(backend)}")
    for folder, version in report.installs.rocm:
        out.append(f"- ROCm {esc(version)} in {c(folder)}")
    for box in report.installs.containers:
        out.append(f"- container runtime {c(box)} (an Ollama container has its own libraries: not read)")
    out += ["", h(3, "Service")]
    u = report.unit
    if u is None:
        out.append(
            "- Windows: no service unit (Ollama starts from its tray app; variables are the user's environment)"
            if report.os == "windows"
            else "- no ollama.service unit found"
        )
    else:
        out.append(
            f"- unit {c(u.path or u.name)}"
            + (f", drop-ins {', '.join(c(d) for d in u.dropins)}" if u.dropins else "")
            + f"; User={esc(u.user)}"
            + (f" ({c(u.user_where)})" if u.user_where else "")
        )
        for s in u.environment:
            out.append(
                f"  - {c(s.name + '=' + s.value)} at {c(s.where)}"
                + (f" (overrides {esc(', '.join(s.overridden))})" if s.overridden else "")
            )
    if report.process_env_from:
        out.append(
            f"- running server ({c(report.process_env_from)}): "
            + (", ".join(c(f"{k}={v}") for k, v in report.process_env) or "none of the GPU variables")
        )
    present = {n.path for n in report.nodes if n.present}
    for a in report.access:
        out.append(
            f"- {'service user ' + esc(a.user) if a.role == 'service' else 'you (' + esc(a.user) + ')'}: groups {esc(', '.join(a.groups)) or '-'}; "
            + ", ".join(f"{p} {'ok' if ok else 'DENIED' if p in present else 'missing'}" for p, ok in a.nodes)
        )
    if report.live is not None:
        lv = report.live
        out.append(
            f"- live {esc(lv.kind)} {c(lv.url)}: "
            + (
                lv.error
                and f"no answer ({esc(lv.error)})"
                or f"version {esc(lv.version or '-')}; "
                + (", ".join(f"{esc(str(m['name']))} {esc(str(m['on_gpu']))}" for m in lv.models) or "no model loaded")
            )
        )
    return out


def _target_lines(report: MachineReport, md: bool) -> list[str]:
    esc = md_escape if md else (lambda s: s)
    c = code if md else (lambda s: s)
    h = (lambda n, s: f"{'#' * n} {s}") if md else (lambda n, s: s + "\n" + ("=" if n == 2 else "-") * len(s))
    out: list[str] = []
    for t in report.targets:
        out += [
            "",
            h(3, f"{esc(t.target)} ({esc(t.gpu)}) at {esc(t.version and 'v' + t.version or 'unknown version')}"),
        ]
        out.append(f"matrix: {esc(t.matrix_from)}")
        out.append("")
        for v in t.rows:
            ev = f" — {c(_ev(v.evidence[0]))}" if v.evidence else (f" — {esc(v.reason)}" if v.reason else "")
            out.append(
                f"- {v.layer}: **{v.status.value}** {esc(v.summary[:220])}{ev}"
                if md
                else f"- {v.layer:20} {v.status.value:18} {v.summary[:160]}{ev}"
            )
        out += ["", f"Answer: {esc(t.answer)}" if t.answer else "Answer: none", ""]
        for b in t.backends:
            out.append(f"- {b.title}: **{b.state}** ({esc(b.label)})" if md else f"- {b.title}: {b.state} ({b.label})")
            if b.reason:
                why = b.reason if len(b.reason) <= 300 else b.reason[:300].rsplit(" ", 1)[0] + " …"
                out.append(f"  - why: {esc(why)}")
            for step in b.steps:
                mark = "done" if step.done else "do"
                out.append(f"  - [{mark}] {esc(step.what)} ({step.workaround}; {c(_ev(step.evidence[0]))})")
                if step.check and not step.done:
                    out.append(f"    - check: {esc(step.check)}")
                if step.commands and not step.done:
                    if md:
                        fence = _fence(step.commands)
                        out += [
                            "",
                            "    " + fence,
                            *("    " + line for cmd in step.commands for line in cmd.splitlines()),
                            "    " + fence,
                            "",
                        ]
                    else:
                        out += ["      " + line for cmd in step.commands for line in cmd.splitlines()]
        if t.pin:
            out.append(f"- pin: {esc(t.pin)}" + (f"; gives up {esc(t.pin_gives_up)}" if t.pin_gives_up else ""))
            if t.pin_commands:
                out += (
                    ["", "    ```", *(f"    {cmd}" for cmd in t.pin_commands), "    ```", ""]
                    if md
                    else [f"      {cmd}" for cmd in t.pin_commands]
                )
        for line in t.packaged:
            out.append(f"- {esc(line)}")
        for line in t.runtime:
            out.append(f"- recorded run: {esc(line)}")
        for n in t.notes:
            out.append(f"- note: {esc(n)}")
    if report.unreadable:
        out += ["", "Could not read (run as root to see them): " + ", ".join(c(p) for p in report.unreadable)]
    for n in report.notes:
        out.append(f"note: {esc(n)}")
    return out


# control characters, C1, bidi overrides and isolates: text from the machine (unit files, server answers) stays inert
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _inert(text: str) -> str:
    return _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text
    )


def render_md(report: MachineReport) -> str:
    return _inert("\n".join(_lines(report, True)).rstrip() + "\n")


STATE_STYLES = {
    "runs": "bold green",
    "needs steps": "bold yellow",
    "not installed": "bold red",
    "failed on this machine": "bold red",
    "ran on the CPU": "bold red",
    "undecided": "magenta",
    "no route": "dim",
}


def render_text(report: MachineReport, *, width: int = 100, color: bool = False) -> str:
    """The report laid out for a terminal as scan's is: per GPU the answer first, each backend's state coloured with
    its steps (commands wrapped, never cut), the pin, the recorded runs; then the machine and the layers, whose "why"
    is cut with "…" at the width. Every machine or log string goes in as text, inert, never as markup."""
    from gfxgate.report.terminal import STYLES, Lines

    out = Lines(width=width, color=color)
    line = out.line

    line(("gfxgate doctor", "bold"), (f" · root {report.root}" if report.root != "/" else "", "dim"))
    for t in report.targets:
        out.blank()
        lead = next((b.state for b in t.backends if b.backend != "cpu" and b.title in t.answer[:80]), "undecided")
        line(
            ("The answer", "bold"), " for ", (t.gpu, "bold"), ": ", (t.answer or "none", STATE_STYLES.get(lead, "bold"))
        )
        for b in t.backends:
            line((f"{b.title}: ", "bold"), (b.state, STATE_STYLES.get(b.state, "")), (f" ({b.label})", "dim"), indent=2)
            if b.reason:
                line(("why: ", "dim"), b.reason, indent=4)
            todo = [s for s in b.steps if not s.done]
            for number, step in enumerate(todo, 1):
                line(f"{number}. ", step.what, (f" ({step.workaround}; {_ev(step.evidence[0])})", "dim"), indent=4)
                for cmd in step.commands:
                    for text in cmd.splitlines():
                        line((text, "cyan"), indent=7)
            for step in (s for s in b.steps if s.done):
                line(("already done: ", "dim"), step.what, (f" ({_ev(step.evidence[0])})", "dim"), indent=4)
        if t.pin:
            line(("pin: ", "bold"), t.pin, (f"; gives up {t.pin_gives_up}" if t.pin_gives_up else "", "dim"), indent=2)
            for cmd in t.pin_commands:
                line((cmd, "cyan"), indent=7)
        for text in t.packaged:
            line(("packaged: ", "bold"), text.removeprefix("packaged route: "), indent=2)
        for text in t.runtime:
            line(("recorded: ", "bold"), text, indent=2)
        for note in t.notes:
            line(("note: ", "dim"), note, indent=2)
    for text in _machine_lines(report, False):
        if not text.startswith(("-", " ")):  # a heading and its underline
            if text and not text.startswith("-" * 3):
                out.blank()
                line((text.split("\n")[0], "bold"))
            continue
        depth = len(text) - len(text.lstrip(" "))
        line(text.strip(), indent=2 + depth)
    for t in report.targets:
        out.blank()
        line((f"Layers of {t.target}", "bold"), (f" · {t.matrix_from}", "dim"))
        out.table(
            ("Layer", "status", "why"),
            [((v.layer, ""), (v.status.value, STYLES.get(v.status.value, "")), (v.summary, "")) for v in t.rows],
        )
    if report.unreadable:
        line(("Could not read (run as root to see them): ", "dim"), ", ".join(report.unreadable))
    for note in report.notes:
        line(("note: ", "dim"), note)
    line(("Evidence and every path: --format md or json.", "dim"))
    return out.text()


def _nfd_value(text: str) -> str:
    """A Kubernetes label value: at most 63 characters of [A-Za-z0-9._-], starting and ending alphanumeric."""
    return _NFD_VALUE.sub("_", text)[:63].strip("_.-") or "none"


def render_nfd(report: MachineReport) -> str:
    """NFD local features (features.d): ``name=value`` lines; names prefixed, values ≤ 63 characters of
    [A-Za-z0-9._-] starting and ending alphanumeric (Kubernetes label values)."""
    lines = ["# gfxgate doctor: node-feature-discovery local features"]
    for i, t in enumerate(report.targets):
        key = f"{NFD_PREFIX}gpu{i}"
        lines.append(f"{key}.target={_nfd_value(t.target)}")
        if t.version:
            lines.append(f"{key}.ollama={_nfd_value(t.version)}")
        for b in t.backends:
            lines.append(f"{key}.{b.backend}={_nfd_value(b.state.replace(' ', '-'))}")
        if t.pin:
            lines.append(f"{key}.pin={_nfd_value(t.pin.split()[1])}")
    return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


STATE_VALUE = {"runs": 1, "needs steps": 0.5, "no route": 0, "undecided": -1}


def render_prometheus(report: MachineReport) -> str:
    """node_exporter textfile: ``gfxgate_gate`` (1 allowed … 0 blocked per layer) and ``gfxgate_backend``; each
    series labelled with its GPU's index (``gpu="0"``), so two identical GPUs are two series, not a duplicate."""
    out = [
        "# HELP gfxgate_gate Gate layer status per target: 1 allowed, 0.67 partial, 0.33 override-required, 0 blocked, -1 unknown.",
        "# TYPE gfxgate_gate gauge",
    ]
    seen: set[str] = set()  # one sample per series: two identical GPUs differ in their gpu label

    def sample(name: str, labels: str, value) -> None:
        if labels not in seen:
            seen.add(labels)
            out.append(f"{name}{{{labels}}} {value}")

    for i, t in enumerate(report.targets):
        release = _label(f"v{t.version}" if t.version else "unknown")
        for v in t.rows:
            value = round(RANK[v.status] / 3, 2) if v.status in RANK else -1
            for backend in dict(t.layer_backends).get(v.layer) or ("all",):
                sample(
                    "gfxgate_gate",
                    f'gpu="{i}",target="{_label(t.target)}",layer="{_label(v.layer)}",'
                    f'backend="{_label(backend)}",release="{release}"',
                    value,
                )
    out += [
        "# HELP gfxgate_backend Backend verdict on this machine: 1 runs, 0.5 needs steps, 0 no route, -1 undecided.",
        "# TYPE gfxgate_backend gauge",
    ]
    seen.clear()
    for i, t in enumerate(report.targets):
        release = _label(f"v{t.version}" if t.version else "unknown")
        for b in t.backends:
            sample(
                "gfxgate_backend",
                f'gpu="{i}",target="{_label(t.target)}",backend="{_label(b.backend)}",release="{release}"',
                STATE_VALUE.get(b.state, -1),
            )
    return "\n".join(out) + "\n"


FORMATS = (Format.MD, Format.JSON, Format.TEXT, Format.NFD, Format.PROMETHEUS)
FORMATTERS: dict[Format, Formatter[MachineReport]] = {
    Format.MD: render_md,
    Format.JSON: render_json,
    Format.TEXT: render_text,
    Format.NFD: render_nfd,
    Format.PROMETHEUS: render_prometheus,
}


def render(report: MachineReport, fmt: Format | str, *, width: int = 100, color: bool = False) -> str:
    """``width`` and ``color`` lay out the text format; the other formats have one form."""
    chosen = choose(fmt, FORMATS)
    if chosen is Format.TEXT:
        return render_text(report, width=width, color=color)
    return FORMATTERS[chosen](report)
