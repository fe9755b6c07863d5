"""What a diagnosis concludes, in the lines every view of a log shows (``diagnose``, ``scan --log``, ``doctor --log``).

One function, so the three commands cannot say different things about the same log: each conclusion of each log,
cause first, with its remedy where the conclusion decides one.
"""

from __future__ import annotations

from typing import Sequence

from gfxgate.diagnose.model import Diagnosis


def log_conclusions(diagnoses: Sequence[Diagnosis] | None) -> tuple[str, ...]:
    """``log NAME: CONCLUSION[ — remedy: REMEDY]`` for every conclusion of every log, in the diagnosis's order."""
    out: list[str] = []
    for d in diagnoses or ():
        for c in d.conclusions:
            out.append(f"log {d.log}: {c.text}" + (f" — remedy: {c.remedy}" if c.remedy else ""))
    return tuple(out)
