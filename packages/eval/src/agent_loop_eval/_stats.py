"""The statistics of a benchmark run and of two runs compared, in pure Python.

A resolved rate over a few dozen instances is uncertain, and two configurations run on
the same instances are paired, so comparing their two rates as if independent wastes
most of the information. Three well-studied methods, each small enough to check by hand:

- **Wilson score interval** for one run's resolved rate (Wilson 1927; the interval
  Newcombe 1998a recommends over the Wald one, which collapses at 0 and 1).
- **Exact McNemar test** for "A and B resolve equally often": only the discordant
  instances (resolved by one run only) carry information; under the null hypothesis
  each is A's or B's with probability 1/2, so the two-sided p-value is the binomial
  test of the smaller count (`2 * P(X <= min(b, c))`, capped at 1; 1 when there is no
  discordant instance).
- **Newcombe's square-and-add interval for a paired difference** (Newcombe 1998b,
  "Improved confidence intervals for the difference between binomial proportions based
  on paired data", method 10): the Wilson intervals of the two rates combined with the
  correlation of the pairs (phi, with Newcombe's correction `ad - bc - n/2` when
  positive, 0 up to `n/2`), so the interval never leaves [-1, 1] and stays honest with
  few instances.

Checked against published values (`tests/test_stats.py`): Wilson 13/16 = 0.5699 to
0.9341; for the paired table a=59, b=6, c=16, d=80 the difference -0.0621 (-0.1186 to
-0.0046) and an exact McNemar p of 0.052479.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

__all__ = ["PairedTable", "mcnemar_exact", "paired_difference", "wilson"]

CONFIDENCE = 0.95
"""The confidence level of every interval the eval reports."""


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be within (0, 1), got {confidence}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Wilson score interval of `successes / n`; `(0, 1)` when `n` is 0.

    Raises:
        ValueError: A count below 0, or more successes than trials.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"expected 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return 0.0, 1.0
    z = _z(confidence)
    p = successes / n
    denominator = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, center - half), min(1.0, center + half)


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """The two-sided exact McNemar p-value from the discordant counts (see the module).

    Raises:
        ValueError: A negative count.
    """
    if only_a < 0 or only_b < 0:
        raise ValueError("discordant counts cannot be negative")
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2**n)))


@dataclass(frozen=True)
class PairedTable:
    """Two runs on the same instances: how many each outcome pair counts."""

    both: int
    """Resolved by A and by B."""
    only_a: int
    """Resolved by A only."""
    only_b: int
    """Resolved by B only."""
    neither: int
    """Resolved by neither."""

    @property
    def n(self) -> int:
        """Instances paired."""
        return self.both + self.only_a + self.only_b + self.neither

    @property
    def rate_a(self) -> float:
        """A's resolved rate on the paired instances (0 when none)."""
        return (self.both + self.only_a) / self.n if self.n else 0.0

    @property
    def rate_b(self) -> float:
        """B's resolved rate on the paired instances (0 when none)."""
        return (self.both + self.only_b) / self.n if self.n else 0.0


def paired_difference(
    table: PairedTable, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """`(rate_a - rate_b, low, high)`: Newcombe's paired interval (see the module);
    `(0, -1, 1)` when nothing is paired."""
    n = table.n
    if n == 0:
        return 0.0, -1.0, 1.0
    a, b, c, d = table.both, table.only_a, table.only_b, table.neither
    p1, p2 = (a + b) / n, (a + c) / n
    l1, u1 = wilson(a + b, n, confidence)
    l2, u2 = wilson(a + c, n, confidence)
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    phi = 0.0
    if margins:
        cross = a * d - b * c
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    estimate = p1 - p2
    low = estimate - math.sqrt(
        max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2)
    )
    high = estimate + math.sqrt(
        max(0.0, (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2)
    )
    return estimate, max(-1.0, low), min(1.0, high)
