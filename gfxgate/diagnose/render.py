"""Formatters for diagnoses: each takes the diagnoses and returns text (the CLI writes it)."""

from __future__ import annotations

from typing import Sequence

from gfxgate.jsontext import dumps
from gfxgate.diagnose.model import JSON_SCHEMA_VERSION, Diagnosis, Finding
from gfxgate.report.formats import Format, Formatter, choose
from gfxgate.report.markdown import code, md_escape
from gfxgate.report.text import inert_lines
from gfxgate.serial import document

KIND_LABEL = {"ollama": "Ollama server log", "llama.cpp": "llama.cpp output", None: "unrecognised log"}


def render_json(diagnoses: Sequence[Diagnosis]) -> str:
    # keys sorted: the dataclasses' field order is not the JSON's
    return dumps(document("diagnosis", {"logs": [d.to_json() for d in diagnoses]}, version=JSON_SCHEMA_VERSION)) + "\n"


def _where(evidence) -> str:
    return ", ".join(code(str(e.location), cell=True) for e in evidence if e.location)


def _status(f: Finding) -> str:
    if f.stale:
        return "stale match (no verdict)"
    if f.verdict is None:
        return (
            "no verdict (" + md_escape(f.target_reason or "no status implied") + ")"
            if f.target is None
            else "no verdict"
        )
    return f"**{f.verdict.status.value}** for {md_escape(f.target or '?')}"  # a verdict names its target


def _offload(run) -> str:
    """The run's offload and placement where its summary does not already say them."""
    parts = []
    if run.offload and f"{run.offload} layers" not in run.summary:
        parts.append(f"offloaded {run.offload} layers")
    if run.placement and not any(b.buffer in run.summary for b in run.placement):
        parts.append("model buffers " + ", ".join(f"{b.buffer} {b.mib:g} MiB" for b in run.placement))
    return ("; " + "; ".join(parts)) if parts else ""


def _no_target(gpu) -> str:
    """What a device line without a target lacks: a gfx target, unless the device is NVIDIA's or Intel's."""
    return "no target" if gpu.vendor in ("nvidia", "intel") else "no gfx target"


def _details(prefix: str, lines) -> list[str]:
    """A finding's detail lines under ``prefix``: each is present or not (a false value: an empty field)."""
    return [prefix + line for line in lines if line]


def render_md(diagnoses: Sequence[Diagnosis]) -> str:
    out = ["# gfxgate diagnose", ""]
    for d in diagnoses:
        version = f" {md_escape(d.version)}" if d.version else ""
        if d.version in ("0.0.0",):
            version += " (self-built: version unknown)"
        out += [
            f"## {code(d.log)}",
            "",
            f"{md_escape(KIND_LABEL.get(d.log_kind, d.log_kind or ''))}{version and ' —'}{version}; {d.lines} lines, {d.recognised} recognised.",
            "",
        ]
        if d.conclusions:
            out += ["### Conclusion", ""]
            for c in d.conclusions:
                out.append(f"- **{md_escape(c.text)}** ({_where(c.evidence[:2])})")
                out += _details("  - ", (c.remedy and f"remedy: {md_escape(c.remedy)}",))
            out.append("")
        out += ["### Established", "", "| What | Value | Evidence |", "|---|---|---|"]
        for fact in d.facts:
            out.append(f"| {md_escape(fact.name)} | {code(fact.value, cell=True)} | {_where(fact.evidence[:2])} |")
        for gpu in d.gpus:
            value = (
                f"{gpu.name} — {gpu.target or _no_target(gpu) + ' in this line'} ({gpu.backend}"
                + (f"; {gpu.detail}" if gpu.detail else "")
                + ")"
                + (f"; {gpu.role}" if gpu.role else "")
            )
            out.append(f"| GPU | {md_escape(value)} | {_where(gpu.evidence[:2])} |")
        for run in d.runs:
            out.append(
                f"| run {run.index + 1} | {md_escape(run.outcome + ': ' + run.summary + _offload(run))} | {_where(run.evidence[:3])} |"
            )
        if not (d.facts or d.gpus or d.runs):
            out.append("| — | nothing | — |")
        out += ["", "### Findings", ""]
        if not d.findings:
            out += ["No recognised failure.", ""]
        for f in d.findings:
            out.append(f"- **{md_escape(f.layer)}** — {_status(f)}: {md_escape(f.title)} ({code(f.message)})")
            out += _details(
                "  - ",
                (
                    *(f"{code(str(e.location))} {code(e.text)}" for e in f.evidence),
                    f.stale and f"stale: {md_escape(f.stale)}",
                    f.target and f"target: {md_escape(f.target)} ({md_escape(f.target_reason)})",
                    *(md_escape(line) for line in f.context),
                    f.printed_at and "printed by: " + ", ".join(code(str(loc)) for loc in f.printed_at),
                    f.printed_note and f"{'note' if f.printed_at else 'upstream'}: {md_escape(f.printed_note)}",
                    f.remedy and f"remedy: {md_escape(f.remedy)}",
                    f.workarounds
                    and "workarounds: " + ", ".join(code(w) for w in f.workarounds) + " (see `gfxgate workarounds`)",
                ),
            )
        if f_unknown := d.unknowns:
            out += ["", "### Could not establish", ""]
            out += [f"- {md_escape(u.what)}: {md_escape(u.reason)}" for u in f_unknown]
        if d.notes:
            out += ["", "### Notes", ""]
            out += [f"- {md_escape(n)}" for n in d.notes]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def render_text(diagnoses: Sequence[Diagnosis]) -> str:
    out = []
    for d in diagnoses:
        out.append(
            f"{d.log}: {KIND_LABEL.get(d.log_kind, d.log_kind)}"
            + (f" {d.version}" if d.version else "")
            + f", {d.lines} lines, {d.recognised} recognised"
        )
        for c in d.conclusions:
            out.append(f"  conclusion: {c.text}")
            out += _details("    ", (c.remedy and f"remedy: {c.remedy}",))
        for gpu in d.gpus:
            out.append(
                f"  gpu: {gpu.name} {gpu.target or '(' + _no_target(gpu) + ')'} [{gpu.backend}] at {gpu.evidence[0].location}"
                + (f" — {gpu.role}" if gpu.role else "")
            )
        for fact in d.facts:
            if fact.name.startswith("env:") and fact.value == "(unset)":
                continue
            out.append(f"  {fact.name}: {fact.value} at {fact.evidence[0].location}")
        for run in d.runs:
            out.append(f"  run {run.index + 1}: {run.outcome} — {run.summary}{_offload(run)}")
        for f in d.findings:
            status = "stale" if f.stale else (f"{f.verdict.status.value} {f.target}" if f.verdict else "no verdict")
            out.append(f"  {f.layer}: {status}: {f.title} at {f.evidence[0].location}")
            out += _details(
                "    ",
                (
                    *f.context,
                    f.printed_at and f"printed by {f.printed_at[0]}",
                    f.remedy and f"remedy: {f.remedy}",
                    f.workarounds and f"workarounds: {', '.join(f.workarounds)}",
                ),
            )
        for u in d.unknowns:
            out.append(f"  unknown {u.what}: {u.reason}")
        out += [f"  note: {n}" for n in d.notes]
    return inert_lines(out)


FORMATS = (Format.MD, Format.JSON, Format.TEXT)
FORMATTERS: dict[Format, Formatter[Sequence[Diagnosis]]] = {
    Format.MD: render_md,
    Format.JSON: render_json,
    Format.TEXT: render_text,
}


def render(diagnoses: Sequence[Diagnosis], fmt: Format | str) -> str:
    return FORMATTERS[choose(fmt, FORMATS)](diagnoses)
