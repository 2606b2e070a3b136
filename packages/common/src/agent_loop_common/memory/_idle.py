"""The idle counter's document: runs of one role on one day that claimed nothing.

Its own module, free of Flyte: the idle tick's lean path bumps it in the local memory
(`LocalKey`) as `count_idle_run` does through the SDK.
"""

from __future__ import annotations

from datetime import date, datetime

from pydantic import AwareDatetime, BaseModel, ConfigDict, NonNegativeInt

from agent_loop_common.records import Role

__all__ = ["IdleCount"]


class IdleCount(BaseModel):
    """Runs of one role on one UTC day that found nothing to claim."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    schema_version: str = "1.1"
    """Same versioning rule as `RunRecord`."""
    role: Role
    """The counting role."""
    day: date
    """UTC day."""
    count: NonNegativeInt = 0
    """Idle runs so far (approximate under simultaneous idle runs)."""
    last_at: AwareDatetime | None = None
    """When the last idle run finished: shows the schedule is alive."""
    paused: NonNegativeInt = 0
    """Ticks that started no new work because the GitHub rate-limit reserve was reached (1.1)."""
    paused_at: AwareDatetime | None = None
    """When the last paused tick finished (1.1)."""
    paused_note: str = ""
    """Why the last paused tick held back, e.g. `412 of 5000 requests left until 04:12 UTC` (1.1)."""
    paused_until: AwareDatetime | None = None
    """When the rate limit resets and ticks start new work again (1.1)."""

    def counted(self, at: datetime) -> IdleCount:
        """This count with one more idle run, finished `at`."""
        return self.model_copy(update={"count": self.count + 1, "last_at": at})
