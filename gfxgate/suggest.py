"""The one "did you mean": close spellings of an unknown name, for an error's hint."""

from __future__ import annotations

import difflib
from typing import Iterable


def close_names(name: str, known: Iterable[str], *, n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``n`` known names spelled like ``name``, closest first."""
    return difflib.get_close_matches(name, sorted(known), n=n, cutoff=cutoff)


def known_names(known: Iterable[str]) -> str:
    return "known: " + ", ".join(sorted(known))


def did_you_mean(
    name: str,
    known: Iterable[str],
    *,
    n: int = 3,
    cutoff: float = 0.6,
    then: str | None = None,
    otherwise: str | None = None,
) -> str | None:
    """``did you mean a, b?`` (followed by ``then``) when a known name is close, else ``otherwise``."""
    close = close_names(name, known, n=n, cutoff=cutoff)
    if not close:
        return otherwise
    return "did you mean " + ", ".join(close) + "?" + (f" {then}" if then else "")
