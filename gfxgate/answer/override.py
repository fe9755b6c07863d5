"""The override checks, written once: the target an override poses, and whether the release ships its code and files.

An override route (``as_target: override`` in ``rules/routes.yaml``) runs a target as the one a runtime switch makes
it report. Whether that helps is read in the posed target's column of the same release, with the override route's
needs: on a live gate matrix (scan, doctor, workarounds) or on the stored timeline at that release (diagnose,
doctor's fallback, workarounds without a clone) — both :class:`~gfxgate.answer.view.StatusView`. What the override
also needs when the release does not ship the posed target is the route's ``also_needs`` (data: by the refusing
layers), so no view words it on its own.
"""

from __future__ import annotations

from typing import Sequence

from gfxgate.answer.view import StatusView
from gfxgate.model import RANK, Evidence, Status
from gfxgate.records import dataclass
from gfxgate.targets import catalog


def posed_target(value: str) -> str:
    """The target an override value makes the runtime report (``9.0.6`` -> ``gfx906``); TargetError when none."""
    return catalog().from_hsa_override(value).name


Needs = Sequence[tuple[str, Sequence[Status]]]  # (layer, the statuses that pass), as a route rule's needs
AlsoNeeds = Sequence[tuple[Sequence[str], str]]  # (layers, what the override also needs when one of them refuses)


@dataclass(frozen=True)
class OverrideCheck:
    """Whether a release ships what an override poses: ``checked`` False when the view holds no cell of the posed
    target; ``failing`` the posed target's refusing cells as (layer, status, where)."""

    value: str
    posed: str
    checked: bool
    failing: tuple[tuple[str, str, str], ...] = ()
    evidence: tuple[Evidence, ...] = ()  # the refusing cells' first lines, or the passing cells' when it ships
    also_needs: tuple[tuple[tuple[str, ...], str], ...] = ()

    @property
    def ships(self) -> bool:
        return self.checked and not self.failing

    def clause(self, release: str = "this release") -> str | None:
        """None when the release ships the posed target; else what the override also needs, in the words every view
        shows ("ollama v0.32.15 does not ship gfx906 either (…): the override also needs …"), or that it was not
        checked."""
        if not self.checked:
            return f"whether {release} ships {self.posed}'s code and files is not checked here"
        if not self.failing:
            return None
        return needs_clause(self.posed, self.failing, self.also_needs, release)


def needs_clause(
    posed: str, failing: Sequence[tuple[str, str, str]], also_needs: AlsoNeeds, release: str = "this release"
) -> str:
    """The clause of an override whose posed target ``release`` does not ship: ``failing`` is (layer, status, where)
    of the posed target's refusing cells; what the override also needs follows from their layers (``also_needs``)."""
    refusing = {layer for layer, _, _ in failing}
    needed = [text.replace("{posed}", posed) for layers, text in also_needs if refusing & set(layers)]
    where = "; ".join(f"{layer} {status} for {posed}" + (f" {at}" if at else "") for layer, status, at in failing)
    return f"{release} does not ship {posed} either ({where}): the override also needs " + " and ".join(needed)


def check_override(view: StatusView, value: str, needs: Needs, also_needs: AlsoNeeds = ()) -> OverrideCheck:
    """The override check over one release (``view``): the posed target's cells read with the override route's
    ``needs``. A cell the view does not hold, or holds as unknown, decides nothing (the scan's and the timeline's
    override route stay undecided there; this check says nothing of it)."""
    posed = posed_target(value)
    also = tuple((tuple(layers), text) for layers, text in also_needs)
    statuses = {layer: view.status_of(layer, posed) for layer, _ in needs}
    if all(s is None for s in statuses.values()):
        return OverrideCheck(value, posed, False, also_needs=also)
    failing = [
        (layer, s) for layer, allowed in needs if (s := statuses[layer]) is not None and s in RANK and s not in allowed
    ]
    if not failing:
        return OverrideCheck(
            value,
            posed,
            True,
            evidence=tuple(e for layer, _ in needs for e in view.evidence_of(layer, posed)[:1]),
            also_needs=also,
        )
    return OverrideCheck(
        value,
        posed,
        True,
        tuple((layer, s.value, view.where_of(layer, posed)) for layer, s in failing),
        tuple(e for layer, _ in failing for e in view.evidence_of(layer, posed)[:1]),
        also,
    )
