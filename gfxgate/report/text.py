"""Plain-text gate matrix for terminals: one block per layer, one line per target."""

from __future__ import annotations

from gfxgate.model import GateMatrix


def render(matrix: GateMatrix) -> str:
    out = [f"gfxgate gate matrix: {', '.join(matrix.targets)}"]
    if matrix.sources:
        out.append("sources: " + ", ".join(f"{s.name}@{s.ref}" for s in matrix.sources))
    width = max(len(t) for t in matrix.targets)
    for layer in matrix.layers:
        out.append("")
        out.append(layer.title)
        for v in matrix.row(layer.id):
            where = str(v.evidence[0].location) if v.evidence and v.evidence[0].location else (v.reason or "")
            out.append(f"  {v.target:<{width}}  {v.status.value:<18} {v.summary}")
            if where:
                out.append(f"  {'':<{width}}  {'':<18} {where}")
            if v.remedy:
                out.append(f"  {'':<{width}}  {'':<18} remedy: {v.remedy}")
    return "\n".join(out) + "\n"
