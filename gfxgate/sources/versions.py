"""Release-tag ordering and version ranges (``>=0.12.4,<0.30``) over tags such as v0.17.5, rocm-6.3.3, b4567.

A tag is a prefix without digits, a dotted version number and at most one pre-release suffix. The suffix is
either one of the known words (``rc``, ``alpha``, ``beta``, ``pre``; hyphen and dot optional: ``-rc1``, ``rc.1``,
``-beta``) or a hyphen and any other word of letters followed by digits (``-ci3``, ``-citest0``, ``-int1``: the
continuous-integration and internal builds ollama tags before its release candidates). Either way the tag is a
pre-release of its base version, ordered below that version's final release. Anything else after the number
(``v1.0-docs``, ``v1.0+build``) leaves the tag without a version: it is not a release tag.

Order of one base version's tags, lowest first:

1. other words (``ci``, ``citest``, ``int``, …), by word alphabetically, then by number: they are internal builds,
   and in ollama's history each was tagged before the base version's first release candidate;
2. the known words ``rc`` / ``alpha`` / ``beta`` / ``pre`` together, by number only (the order gfxgate has always
   used: ``-alpha2`` sorts above ``-rc1``; a missing number counts as 0);
3. the final release.
"""

from __future__ import annotations

import bisect
import functools
import operator
import re

# One definition of a release tag, used by everything that orders tags or strips a pre-release suffix
# (version_key, is_prerelease, base_version; gfxgate.history.walk through base_version).
_TAG_RE = re.compile(
    r"^[^0-9]*(?P<nums>[0-9]+(?:\.[0-9]+)*)"
    r"(?P<suffix>-?(?P<known>rc|alpha|beta|pre)\.?(?P<knownnum>[0-9]*)"
    r"|-(?P<word>[A-Za-z]+)\.?(?P<wordnum>[0-9]+))?$"
)
_OTHER_WORD, _KNOWN_WORD, _FINAL = 0, 1, 2  # the rank of a tag among the tags of its base version


@functools.lru_cache(maxsize=1 << 16)  # a repository's tags are keyed again at every probe (llama.cpp: ~7,000)
def version_key(tag: str) -> tuple | None:
    """Sort key of a release-like tag; ``None`` when the tag has no version number.

    ``(numbers, rank, word, number)``: the version's numbers without trailing zeros (``1.2`` == ``1.2.0``), the
    rank above, the other word ("" for the known words, which order among themselves by number only) and its number.
    """
    match = _TAG_RE.match(tag.strip())
    if not match:
        return None
    nums = [int(n) for n in match["nums"].split(".")]
    while len(nums) > 1 and nums[-1] == 0:
        nums.pop()
    if match["known"]:
        return (tuple(nums), _KNOWN_WORD, "", int(match["knownnum"] or 0))
    if match["word"]:
        return (tuple(nums), _OTHER_WORD, match["word"], int(match["wordnum"]))
    return (tuple(nums), _FINAL, "", 0)


def is_prerelease(tag: str) -> bool:
    key = version_key(tag)
    return key is not None and key[1] != _FINAL


def base_version(tag: str) -> str:
    """The tag without its pre-release suffix (``v0.9.1-ci0`` → ``v0.9.1``); other tags unchanged."""
    match = _TAG_RE.match(tag.strip())
    if not match or match["suffix"] is None:
        return tag
    return tag.strip()[: match.start("suffix")]


def sort_tags(tags: list[str]) -> list[str]:
    keyed = [(key, t) for t in tags if (key := version_key(t)) is not None]
    return [t for _, t in sorted(keyed, key=lambda kt: kt[0])]


def exists_at(repo: str, versions: str, ref_of) -> bool:
    """Whether ``repo``'s scanned ref (``ref_of(repo)``) is in ``versions`` (a workaround's ``exists_in``); True when
    the ref is unknown or has no version number (a folder: its checks decide)."""
    ref = ref_of(repo)
    return ref is None or version_key(ref) is None or in_range(ref, versions)


def in_range(tag: str, spec: str | None) -> bool:
    """``spec`` is comma-separated comparisons: ``>=0.12.4,<0.30``; empty or None matches all."""
    if not spec:
        return True
    key = version_key(tag)
    if key is None:
        return False
    for compare, bound in _range(spec):  # parsed once per spec (eras are asked at every release of a timeline)
        if compare is None:
            raise ValueError(bound)  # a bad comparison, refused when reached, as it is read left to right
        if not compare(key, bound):
            return False
    return True


_COMPARE = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": operator.eq,
    "!=": operator.ne,
}


@functools.lru_cache(maxsize=1024)
def _range(spec: str) -> tuple[tuple, ...]:
    """``spec``'s comparisons as (comparison, version key) pairs, up to the first bad one: (None, its message)."""
    out: list[tuple] = []
    for part in spec.split(","):
        part = part.strip()
        op = re.match(r"^(>=|<=|==|!=|>|<)", part)
        if not op:
            return (*out, (None, f"bad version range {spec!r}"))
        bound = version_key(part[op.end() :].strip())
        if bound is None:
            return (*out, (None, f"bad version in range {spec!r}"))
        out.append((_COMPARE[op.group(1)], bound))
    return tuple(out)


@functools.lru_cache(maxsize=16)
def _ordered(tags: tuple[str, ...], finals_only: bool) -> tuple[tuple[str, ...], tuple[tuple, ...]]:
    """The release-like tags of one tag list in version order, with their keys (pre-releases left out when
    ``finals_only`` and there are final releases): computed once per list, however many refs are looked up."""
    versioned = [(t, key) for t in tags if (key := version_key(t)) is not None]
    if finals_only:
        versioned = [(t, key) for t, key in versioned if not is_prerelease(t)] or versioned
    versioned.sort(key=lambda tk: tk[1])
    return tuple(t for t, _ in versioned), tuple(key for _, key in versioned)


def nearest_tags(wanted: str, tags: list[str] | tuple[str, ...], n: int = 5) -> list[str]:
    """Tags closest to ``wanted``: by version distance when both parse, else by spelling.

    The tag list is ordered once (``_ordered``: a repository's tags are the same list for every unresolved ref,
    and ``history`` / ``timeline --live`` look up one per probe; 10,000 tags re-sorted each time cost minutes)."""
    key = version_key(wanted)
    ordered, keys = _ordered(tuple(tags), not is_prerelease(wanted))
    if key is not None and ordered:
        index = bisect.bisect_left(keys, key)
        return list(ordered[max(0, index - n // 2) : index + (n - n // 2)])
    from gfxgate.suggest import close_names

    return close_names(wanted, tags, n=n, cutoff=0.3)
