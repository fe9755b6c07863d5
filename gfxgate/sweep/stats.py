"""Statistics of a sweep a reader can trust: a median with a distribution-free 95 % interval, and a comparison of two
cells only where their intervals separate.

The interval is the **order-statistic (binomial) confidence interval for the median**: with the ``n`` values sorted,
``[x(k), x(n-k+1)]`` covers the true median with probability ``1 - 2·P(B ≤ k-1)``, ``B ~ Binomial(n, 1/2)``, whatever
the distribution of the runs (no normality, no bootstrap resampling, the same answer every time). The widest ``k``
whose coverage is at least 95 % is taken; below 6 runs no such ``k`` exists, so the interval is the whole range
(min–max) and its real coverage is stated (93.8 % at 5 runs, 87.5 % at 4, 75 % at 3, 50 % at 2, none at 1).
"""

from __future__ import annotations

from math import comb
from typing import Sequence

from gfxgate.serial import JsonRecord, json_dataclass

LEVEL = 0.95
METHOD = "order statistics (binomial, distribution-free) interval for the median"


@json_dataclass(frozen=True)
class Interval(JsonRecord):
    """A median with its interval over ``n`` values; ``coverage`` is the interval's exact confidence."""

    median: float
    low: float
    high: float
    n: int
    coverage: float

    def separates_above(self, other: Interval) -> bool:
        """This interval lies wholly above ``other`` (they do not overlap)."""
        return self.low > other.high


def coverage(n: int, k: int) -> float:
    """The confidence of ``[x(k), x(n-k+1)]`` for the median of ``n`` values (``1 ≤ k ≤ n/2``)."""
    if n < 2 or k < 1 or 2 * k > n + 1:
        return 0.0
    tail = sum(comb(n, i) for i in range(k)) / 2**n
    return max(0.0, 1.0 - 2.0 * tail)


def median_interval(values: Sequence[float], level: float = LEVEL) -> Interval | None:
    """The median of ``values`` and its order-statistic interval (None: no values)."""
    xs = sorted(float(v) for v in values)
    n = len(xs)
    if n == 0:
        return None
    half = n // 2
    median = xs[half] if n % 2 else (xs[half - 1] + xs[half]) / 2
    k = 1
    while k + 1 <= n // 2 and coverage(n, k + 1) >= level:
        k += 1
    return Interval(round(median, 4), round(xs[k - 1], 4), round(xs[n - k], 4), n, round(coverage(n, k), 4))


def compare(a: Interval | None, b: Interval | None) -> tuple[int, float | None] | None:
    """``(1, ratio)`` when ``a`` is measurably higher than ``b`` (its interval wholly above), ``(-1, ratio)`` when
    lower, ``None`` when the intervals overlap (no measurable difference) or a side is missing; ``ratio`` is the
    higher median over the lower."""
    if a is None or b is None:
        return None
    if a.separates_above(b):
        return 1, _ratio(a.median, b.median)
    if b.separates_above(a):
        return -1, _ratio(b.median, a.median)
    return None


def _ratio(high: float, low: float) -> float | None:
    return round(high / low, 3) if low > 0 else None
