"""What a batch of unseen records asks of a tick: learn, keep the books, or nothing. Pure.

Records of the distiller itself are folded into the rollups (its cost counts) but never
call for a model: otherwise each tick's own record would be news to the next tick, and
the distiller would wake the model every ten minutes forever. They ride along with the
next tick that has real news, or with a housekeeping tick once the unread span of
buckets grows long (so an idle loop still moves its watermark, and its scans stay short).

A distillation that failed leaves the ledger where it was, so the failed tick's records
come back: the first retry is immediate, further ones back off exponentially (measured
from the last failure), so a persistent model failure cannot burn tokens every tick.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum

from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.metrics import UNCOUNTED_OUTCOMES
from agent_loop_common.records import Outcome, Role, RunRecord

__all__ = [
    "FAILED_OUTCOMES",
    "TickKind",
    "failure_streak",
    "learnable",
    "plan_peek",
    "retry_at",
]

FAILED_OUTCOMES = frozenset(
    {Outcome.ERROR, Outcome.REJECTED, Outcome.BUDGET_EXCEEDED, Outcome.LOST_CLAIM}
)
"""Distiller outcomes after which the same records are tried again."""


class TickKind(StrEnum):
    """What a tick turned out to be."""

    IDLE = "idle"
    """Nothing new: no claim, no write (only the idle counter)."""
    BACKED_OFF = "backed_off"
    """News, but earlier attempts at it failed recently: waiting."""
    BUSY = "busy"
    """Another distiller run holds the claim."""
    BOOKKEEPING = "bookkeeping"
    """Grades, rollups and ledger committed without a model call and without a record."""
    DISTILLED = "distilled"
    """The model edited the lessons; everything committed; the run recorded."""
    REPLAYED = "replayed"
    """Nothing to distill, but lessons were replayed on mined instances
    (`AGENT_LOOP_LESSON_REPLAY=on`): their pairs and decisions committed, the run
    recorded (its trace: one step per pair)."""
    FAILED = "failed"
    """Distillation was attempted and failed; nothing committed; the run recorded."""
    INTERRUPTED = "interrupted"
    """The operator stopped the tick (SIGINT, SIGTERM) before it committed; its claim
    released, and the run recorded if it had claimed."""


def learnable(records: Iterable[RunRecord]) -> list[RunRecord]:
    """Records the model learns from: every role's but the distiller's own, and none that
    an operator's fault or hand ended (a revoked token teaches nothing about the work, nor
    does a run stopped with Ctrl-C or one that never reached its target)."""
    return [
        r
        for r in records
        if r.role is not Role.DISTILLER
        and r.fault != "operator"
        and r.outcome not in UNCOUNTED_OUTCOMES
    ]


def failure_streak(records: Iterable[RunRecord]) -> list[RunRecord]:
    """The distiller's failed runs since its last success among `records`, oldest first."""
    own = sorted((r for r in records if r.role is Role.DISTILLER), key=lambda r: r.finished_at)
    streak: list[RunRecord] = []
    for r in own:
        if r.outcome in FAILED_OUTCOMES:
            streak.append(r)
        elif r.outcome is Outcome.DISTILLED:
            streak = []
    return streak


def retry_at(streak: Sequence[RunRecord], backoff: BackoffPolicy) -> datetime | None:
    """When the next attempt may run (`None`: now). One failure retries at once; then the
    waits are the claims' back-off: `base`, `2 * base`, ... up to `cap`."""
    if len(streak) < 2:
        return None
    return max(r.finished_at for r in streak) + backoff.delay(len(streak) - 1)


def plan_peek(
    *,
    learn: int,
    deferred: int,
    buckets_scanned: int,
    grades_changed: bool,
    housekeeping_buckets: int,
    retry: datetime | None,
    now: datetime,
) -> TickKind | None:
    """Decide from a read-only look whether the tick must claim (`None`) or stop.

    Args:
        learn: New records of the builder and reviewer.
        deferred: Records newly left un-ingested (to be counted in the ledger).
        buckets_scanned: How many hourly buckets the tick had to look at.
        grades_changed: A read-only regrade found grades that changed on GitHub.
        housekeeping_buckets: Scan span that calls for a bookkeeping commit.
        retry: When a failed distillation may be retried (`None`: no wait).
        now: The tick's time.
    """
    if learn:
        return TickKind.BACKED_OFF if retry is not None and now < retry else None
    if grades_changed or deferred:
        return None
    if buckets_scanned > housekeeping_buckets:
        return None
    # The distiller's own records alone wait for the next tick with news, or housekeeping.
    return TickKind.IDLE
