"""A tick that holds back because the token's GitHub budget is down to the reserve.

Claiming, building and opening a PR cost dozens of requests; a run that started with the
budget nearly spent would be refused halfway, holding a claim it cannot finish. So
before each claim the run compares GitHub's last reading (`GitHub.rate_budget`) with
`AGENT_LOOP_RATE_LIMIT_RESERVE`, and at the reserve it claims nothing: the tick ends
`paused`, which is neither an error nor a back-off of any target. It is counted in
memory with its reason, and the first tick after the limit resets works again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agent_loop_common.github import RateBudget, RateReserve

__all__ = ["Pause", "ReserveReached", "check_reserve"]


@dataclass(frozen=True, slots=True)
class Pause:
    """Why a tick started no new work, and when it may again."""

    note: str
    """For people: what is left and what is kept back."""
    until: datetime | None
    """When GitHub resets the limit."""


class ReserveReached(Exception):
    """The rate budget is down to the reserve: the run must not claim new work."""

    def __init__(self, pause: Pause) -> None:
        super().__init__(pause.note)
        self.pause = pause


def check_reserve(budget: RateBudget | None, reserve: RateReserve) -> None:
    """Refuse new work when `budget` is down to `reserve` (no reading yet: go ahead).

    Raises:
        ReserveReached: With the pause to record.
    """
    if budget is None or not reserve.holds(budget):
        return
    note = (
        f"GitHub rate limit: {budget.describe()}, at or below the reserve of "
        f"{reserve.of(budget.limit)} (AGENT_LOOP_RATE_LIMIT_RESERVE={reserve}); "
        "no new work until it resets"
    )
    raise ReserveReached(Pause(note=note, until=budget.reset_at))
