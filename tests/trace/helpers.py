"""Expected locations computed from the fixture texts (never hard-coded line numbers)."""

from __future__ import annotations


def line_of(text: str, needle: str, nth: int = 0) -> int:
    hits = [number for number, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) > nth, f"{needle!r} not in fixture text"
    return hits[nth]


def where(repo: str, ref: str, path: str, text: str, needle: str, nth: int = 0) -> str:
    return f"{repo}@{ref}:{path}:{line_of(text, needle, nth)}"
