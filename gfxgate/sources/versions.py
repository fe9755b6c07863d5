"""Release-tag ordering and version ranges (``>=0.12.4,<0.30``) over tags such as v0.17.5, rocm-6.3.3, b4567."""

from __future__ import annotations

import re

_NUM_RE = re.compile(r"^[^0-9]*(?P<nums>[0-9]+(?:\.[0-9]+)*)(?:-?(?P<pre>rc|alpha|beta|pre)\.?(?P<prenum>[0-9]*))?$")


def version_key(tag: str) -> tuple | None:
    """Sort key of a release-like tag; ``None`` when the tag has no version number."""
    match = _NUM_RE.match(tag.strip())
    if not match:
        return None
    nums = tuple(int(n) for n in match["nums"].split("."))
    nums = nums + (0,) * (4 - len(nums)) if len(nums) < 4 else nums
    if match["pre"]:
        return nums + (0, int(match["prenum"] or 0))
    return nums + (1, 0)


def is_prerelease(tag: str) -> bool:
    key = version_key(tag)
    return key is not None and key[-2] == 0


def sort_tags(tags: list[str]) -> list[str]:
    return sorted((t for t in tags if version_key(t) is not None), key=version_key)


def in_range(tag: str, spec: str | None) -> bool:
    """``spec`` is comma-separated comparisons: ``>=0.12.4,<0.30``; empty or None matches all."""
    if not spec:
        return True
    key = version_key(tag)
    if key is None:
        return False
    for part in spec.split(","):
        part = part.strip()
        op = re.match(r"^(>=|<=|==|!=|>|<)", part)
        if not op:
            raise ValueError(f"bad version range {spec!r}")
        bound = version_key(part[op.end():].strip())
        if bound is None:
            raise ValueError(f"bad version in range {spec!r}")
        ok = {
            ">=": key >= bound,
            "<=": key <= bound,
            ">": key > bound,
            "<": key < bound,
            "==": key[:-2] == bound[:-2] and key[-2:] == bound[-2:],
            "!=": key != bound,
        }[op.group(1)]
        if not ok:
            return False
    return True


def nearest_tags(wanted: str, tags: list[str], n: int = 5) -> list[str]:
    """Tags closest to ``wanted``: by version distance when both parse, else by spelling."""
    key = version_key(wanted)
    candidates = [t for t in tags if version_key(t) is not None]
    if not is_prerelease(wanted):
        candidates = [t for t in candidates if not is_prerelease(t)] or candidates
    if key is not None and candidates:
        ordered = sort_tags(candidates)
        keys = [version_key(t) for t in ordered]
        index = sum(1 for k in keys if k < key)
        window = ordered[max(0, index - n // 2): index + (n - n // 2)]
        return window
    from gfxgate.suggest import close_names

    return close_names(wanted, tags, n=n, cutoff=0.3)
