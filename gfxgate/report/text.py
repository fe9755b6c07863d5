"""Plain-text gate matrix for terminals: one block per layer, one line per target; and :func:`inert`, the one
sanitizer every text written to a terminal goes through."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

if TYPE_CHECKING:  # inert() is imported by every formatter: it needs no gate model
    from gfxgate.gate.matrix import GateMatrix

# C0 controls but TAB, DEL, and C1 (U+0080-U+009F): a terminal acts on them (ESC starts CSI/OSC sequences that set
# the window title or hide a hyperlink, CR overwrites the line, U+009B is a one-character CSI), so none may reach it.
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def _visible(match: re.Match) -> str:
    c = ord(match.group())
    if c < 0x20:
        return chr(0x2400 + c)  # the Control Pictures block: ESC -> U+241B, CR -> U+240D, LF -> U+240A
    return "\u2421" if c == 0x7F else f"<U+{c:04X}>"


def inert(text: str) -> str:
    """``text`` with every C0 control but TAB (line ends included: a field is one line), DEL and every C1 control
    replaced by a visible form (a Control Picture, ``<U+009B>``), so that no byte of it acts on a terminal."""
    return _CONTROLS.sub(_visible, text) if _CONTROLS.search(text) else text


def inert_lines(lines: Iterable[str]) -> str:
    """The formatter's own lines, each made :func:`inert`, joined by the newlines only the formatter writes."""
    return "".join(inert(line) + "\n" for line in lines)


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
                        out.append(f"      step {s.setting} ({s.workaround}): {where}" + (f"; checked: {s.check.state}" if s.check else ""))
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
    return inert_lines(out)
