"""What is left of the token's hourly budget, and how much of it ticks must leave alone.

GitHub sends `x-ratelimit-limit`, `x-ratelimit-remaining` and `x-ratelimit-reset` on
every answer (a free 304 included). The facade keeps the latest reading of the primary
(`core`) budget in a `RateGauge`; the runtime compares it with the configured
`RateReserve` before a tick claims new work, so a busy hour leaves requests for people
and other tools on the same identity, and for the runs already holding a claim.

All of it is pure: readings come from headers, decisions from values.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from agent_loop_common.settings import parse_rate_reserve

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["RateBudget", "RateGauge", "RateReserve", "rate_budget_of"]

_CORE = "core"
"""The primary REST budget; GraphQL and search have budgets of their own."""


@dataclass(frozen=True, slots=True)
class RateBudget:
    """One reading of the primary rate limit."""

    limit: int
    """Requests per hour this identity may make."""
    remaining: int
    """Requests left in the current window."""
    reset_at: datetime
    """When the window restarts with `limit` requests."""

    def describe(self) -> str:
        """`412 of 5000 requests left until 04:12 UTC`, for people."""
        until = self.reset_at.astimezone(UTC).strftime("%H:%M UTC")
        return f"{self.remaining} of {self.limit} requests left until {until}"


def rate_budget_of(headers: httpx.Headers) -> RateBudget | None:
    """The primary budget a response reports, or `None` when it reports none (or another)."""
    resource = headers.get("x-ratelimit-resource", _CORE)
    limit = _int(headers.get("x-ratelimit-limit"))
    remaining = _int(headers.get("x-ratelimit-remaining"))
    reset = _int(headers.get("x-ratelimit-reset"))
    if resource != _CORE or limit is None or remaining is None or reset is None:
        return None
    return RateBudget(limit=limit, remaining=remaining, reset_at=datetime.fromtimestamp(reset, UTC))


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value.strip())
    except ValueError:
        return None


class RateGauge:
    """The latest primary-budget reading of one facade (one run)."""

    def __init__(self) -> None:
        self._latest: RateBudget | None = None

    def observe(self, headers: httpx.Headers) -> None:
        """Keep the reading of one response; answers without the headers change nothing.

        Within one window the lowest `remaining` wins, since concurrent requests can
        answer out of order; a later reset starts a new window.
        """
        reading = rate_budget_of(headers)
        if reading is None:
            return
        latest = self._latest
        if (
            latest is None
            or reading.reset_at > latest.reset_at
            or (reading.reset_at == latest.reset_at and reading.remaining < latest.remaining)
        ):
            self._latest = reading

    @property
    def latest(self) -> RateBudget | None:
        """The budget as last seen, or `None` before any answer carried it."""
        return self._latest


@dataclass(frozen=True, slots=True)
class RateReserve:
    """Requests per window that ticks never spend on new work: a share or a count."""

    percent: float | None = None
    """A share of the window's limit (`10%`), so one setting fits any token's limit."""
    count: int | None = None
    """An absolute number of requests (`500`)."""

    @classmethod
    def parse(cls, text: str) -> RateReserve:
        """`"10%"` (0 to 90 percent of the limit) or `"500"` (0 to 1,000,000 requests).

        Raises:
            ValueError: Neither form, or out of bounds; the message says what fits.
        """
        percent, count = parse_rate_reserve(text)
        return cls(percent=percent, count=count)

    @classmethod
    def from_settings(cls, settings: Settings) -> RateReserve:
        """`AGENT_LOOP_RATE_LIMIT_RESERVE`, parsed."""
        return cls.parse(settings.rate_limit_reserve)

    def of(self, limit: int) -> int:
        """The reserve in requests for a window of `limit` requests."""
        if self.count is not None:
            return self.count
        return int(limit * (self.percent or 0.0) / 100)

    def holds(self, budget: RateBudget) -> bool:
        """Whether `budget` is down to the reserve, so no new work may start."""
        reserve = self.of(budget.limit)
        return reserve > 0 and budget.remaining <= reserve

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return f"{self.percent:g}%"
