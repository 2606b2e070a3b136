"""Rules between a setting and the code that uses it, stated once, here.

A setting that loads must work: `AGENT_LOOP_CLAIM_TTL_MINUTES=2` passed the settings'
own minimum (2) and then failed every tick in the claims code, which required the TTL
to exceed twice its clock-skew margin. So the rule lives here: the settings derive the
TTL's minimum from it and check it at load (exit 2 naming the variable and the allowed
range), and the claims code checks the same rule, from here, for callers that build a
`Claimer` themselves.

Pure: no other agent-loop module is imported, so every package can use it.
"""

from __future__ import annotations

from datetime import timedelta

__all__ = ["CLAIM_SKEW", "MIN_CLAIM_TTL_MINUTES", "claim_ttl_problem"]

CLAIM_SKEW = timedelta(seconds=60)
"""Tolerated clock difference between runs: an expired claim is taken over only this long
after its end, and a holder renews it this long before."""


def claim_ttl_problem(ttl: timedelta, skew: timedelta = CLAIM_SKEW) -> str | None:
    """Why `ttl` cannot work as a claim's lifetime with `skew`, or `None` when it can.

    A claim must outlive the margins at both of its ends, or a run could lose it the
    moment it wins it.
    """
    if ttl <= 2 * skew:
        return f"ttl ({ttl}) must exceed twice the clock skew margin ({skew})"
    return None


MIN_CLAIM_TTL_MINUTES = int((2 * CLAIM_SKEW).total_seconds() // 60) + 1
"""The shortest whole-minute claim TTL that `claim_ttl_problem` accepts."""
