"""Upstream's own documentation as a compared source: where Ollama's docs and its release build disagree.

The ``ollama-docs`` row says whether the docs at a version list a target among the supported Linux LLVM targets; the
release rows say whether that release builds and ships it. Users read the docs, so a matrix whose two sides disagree
says so in its notes, each side with its evidence line; the sentence is built from the two cells, never fixed.
"""

from __future__ import annotations

from gfxgate.model import Status, Verdict

DOCS_LAYER = "ollama-docs"
RELEASE_LAYERS = ("cmake-presets", "release-packaging")  # what the release compiles and what it keeps in the package


def _where(verdict: Verdict) -> str:
    located = [e for e in verdict.evidence if e.location is not None]
    return str(located[0].location) if located else ""


def disagreements(matrix, targets) -> tuple[str, ...]:
    """One note per target and release row that contradicts the docs: docs list it and the release blocks it, or the
    docs leave it out and the release builds and ships it."""
    titles = {layer.id: layer.title for layer in matrix.layers}
    notes = []
    for target in targets:
        docs = matrix.cells.get((DOCS_LAYER, target))
        if docs is None or docs.status not in (Status.ALLOWED, Status.BLOCKED):
            continue
        where = _where(docs)
        ref = where.split(":", 1)[0].split("@", 1)[-1] if where else "this version"
        release = [matrix.cells.get((layer, target)) for layer in RELEASE_LAYERS]
        if docs.status is Status.ALLOWED:
            for cell in release:
                if cell is not None and cell.status is Status.BLOCKED:
                    notes.append(f"the docs at {ref} list {target} ({where}), but {titles[cell.layer]} is blocked: "
                                 f"{cell.summary} ({_where(cell)})")
        elif all(cell is not None and cell.status is Status.ALLOWED for cell in release):
            notes.append(f"the docs at {ref} do not list {target} ({where}), but the release builds and ships it: "
                         + "; ".join(f"{titles[c.layer]}: {c.summary} ({_where(c)})" for c in release))
    return tuple(notes)
