"""Plain-text gate matrix for terminals: one block per layer, one line per target."""

from __future__ import annotations

from gfxgate.gate.matrix import GateMatrix


def render(matrix: GateMatrix) -> str:
    out = [f"gfxgate gate matrix: {', '.join(matrix.targets)}"]
    if matrix.sources:
        out.append("sources: " + ", ".join(f"{s.name}@{s.ref}" for s in matrix.sources))
    width = max(len(t) for t in matrix.targets)
    more = f"  {'':<{width}}  {'':<18} "  # a target's further lines, under its summary
    for layer in matrix.layers:
        out += ["", layer.title]
        for v in matrix.row(layer.id):
            where = str(v.evidence[0].location) if v.evidence and v.evidence[0].location else (v.reason or "")
            out.append(f"  {v.target:<{width}}  {v.status.value:<18} {v.summary}")
            if where:
                out.append(more + where)
            if v.remedy:
                out.append(more + f"remedy: {v.remedy}")
    if matrix.routes:
        out += ["", "The answer"]
        for r in matrix.routes:
            out.append(f"  {r.sentence}")
            for b in r.backends:
                if b.option:
                    out.append(f"    {b.option.label}")
                    for s in b.option.steps:
                        where = str(s.evidence[0].location) if s.evidence[0].location else s.evidence[0].source
                        out.append(f"      step {s.setting} ({s.workaround}): {where}" + (f"; {'' if s.check.state == 'not checked' else 'checked: '}{s.check.state}" if s.check else ""))
                    for done in b.option.satisfied:
                        where = done.evidence[0].location or done.evidence[0].source
                        out.append(f"      already done: {done.workaround} (the installed tree's {done.layer} row is allowed): {where}")
                    first = next((e for e in b.option.evidence if e.location), b.option.evidence[0])
                    out.append(f"      evidence: {first.location or first.source}" + (f" (+{len(b.option.evidence) - 1} more)" if len(b.option.evidence) > 1 else ""))
                elif b.state == "undecided":
                    out.append(f"    {b.title}: undecided — {'; '.join(b.undecided)}")
                else:
                    out.append(f"    {b.title}: no route — {'; '.join(b.refused)}")
            if r.runtime:
                out.append(f"    runtime: {r.runtime.outcome} — {r.runtime.summary}")
    if matrix.notes:
        out += ["", "notes:", *(f"  {note}" for note in matrix.notes)]
    return "\n".join(out) + "\n"
