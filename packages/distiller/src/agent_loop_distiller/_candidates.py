"""The read-only look a tick takes before it claims anything.

It collects unseen records and, only when there are none, asks GitHub with one
conditional request whether any issue or PR opened or closed (a free `304` when not),
regrading read-only when something did. With `AGENT_LOOP_LESSONS_PR=on`, a tick that
would stop idle also asks (two more free `304`s when not) whether the lessons file or
its pull request moved, so a maintainer's edit flows back without waiting for new work;
with `AGENT_LOOP_LESSON_REPLAY=on`, whether a lesson waits for replays (no request).
Its answer: stop (idle, backed off) or claim. Under the claim the look's batch is
reused unless another tick moved the ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import structlog

from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.github import GitHubError
from agent_loop_common.memory import DistillerMemory, IngestBatch, IngestPolicy
from agent_loop_common.runtime import RunScope, Runtime
from agent_loop_distiller._grading import follow_up
from agent_loop_distiller._publish import lessons_moved
from agent_loop_distiller._replay import plan_replays, read_replay_instances
from agent_loop_distiller._select import (
    TickKind,
    failure_streak,
    learnable,
    plan_peek,
    retry_at,
)
from agent_loop_distiller._state import DistillerOptions

__all__ = ["Look", "backoff_of", "look", "replay_pending", "retention_of", "under_claim"]

_log = structlog.get_logger(__name__)


def retention_of(runtime: Runtime) -> int:
    """Days of run records a tick reads (and lessons live unseen)."""
    return runtime.settings.record_retention_days


def backoff_of(runtime: Runtime, opts: DistillerOptions) -> BackoffPolicy:
    """The back-off between failed distillations: the options', else the settings'."""
    return (
        opts.backoff if opts.backoff is not None else BackoffPolicy.from_settings(runtime.settings)
    )


async def collect(runtime: Runtime, now: datetime) -> tuple[DistillerMemory, IngestBatch]:
    """Open the ledger and collect every record not ingested yet."""
    memory = await DistillerMemory.open(
        runtime.memory, IngestPolicy(retention_days=retention_of(runtime))
    )
    return memory, await memory.collect(now)


@dataclass
class Look:
    """The read-only look: what it found, and whether the tick stops there."""

    memory: DistillerMemory
    batch: IngestBatch
    stop: TickKind | None
    lessons_moved: bool = False
    """The lessons file or its pull request changed while nothing else was new: the
    tick goes on only to fold a person's edit in and keep the pull request in step."""
    replay_pending: bool = False
    """Nothing else was new, but a lesson waits for replays (`AGENT_LOOP_LESSON_REPLAY`):
    the tick goes on to replay it."""


async def look(runtime: Runtime, scope: RunScope, opts: DistillerOptions, now: datetime) -> Look:
    """Collect without writing; stop here (a kind), or go on and claim (`stop is None`)."""
    async with scope.stage("ingest"):
        memory, batch = await collect(runtime, now)
    learn = learnable(batch.records)
    grades_changed = False
    if not learn and not batch.deferred:
        # One conditional listing; only when GitHub changed, a read-only regrade (and a
        # claim when a merge awaits its revert check: reverts are read under the claim).
        async with scope.stage("grade"):
            grading = await follow_up(
                runtime.github, runtime.memory, [], now, retention_days=retention_of(runtime)
            )
        grades_changed = bool(grading.changed) or grading.awaiting_revert
    stop = plan_peek(
        learn=len(learn),
        deferred=len(batch.deferred),
        buckets_scanned=batch.buckets_scanned,
        grades_changed=grades_changed,
        housekeeping_buckets=opts.housekeeping_buckets,
        retry=None
        if opts.retry_now
        else retry_at(failure_streak(batch.records), backoff_of(runtime, opts)),
        now=now,
    )
    moved = replay = False
    if stop is TickKind.IDLE and runtime.settings.lessons_pr:
        async with scope.stage("lessons_pr"):
            moved = await _lessons_moved(runtime)
        if moved:
            stop = None
    if stop is TickKind.IDLE and runtime.settings.lesson_replay:
        replay = await replay_pending(runtime, memory)
        if replay:
            stop = None
    return Look(memory, batch, stop, lessons_moved=moved, replay_pending=replay)


async def replay_pending(runtime: Runtime, memory: DistillerMemory) -> bool:
    """Whether a lesson in memory waits for a replay on a mined instance (reads the
    lessons and the instances file, no request): the tick then goes on to replay."""
    settings = runtime.settings
    instances = read_replay_instances(settings.eval_instances, settings.repo)
    if not instances:
        return False
    stored = (await memory.context()).lessons
    max_instances = settings.lesson_replay_max_instances
    return bool(plan_replays(stored, stored, instances, max_instances=max_instances))


async def _lessons_moved(runtime: Runtime) -> bool:
    """`lessons_moved` for this repository; GitHub failing counts as not moved (the next
    working tick folds any edit in, as it always reads the file)."""
    settings = runtime.settings
    try:
        return await lessons_moved(runtime.github, settings.lessons_file, settings.branch_prefix)
    except GitHubError as exc:
        _log.warning("distiller.lessons_look_failed", error=str(exc))
        return False


async def under_claim(
    runtime: Runtime, seen: Look, now: datetime
) -> tuple[DistillerMemory, IngestBatch]:
    """The batch to commit: the look's, unless another tick moved the ledger meanwhile.

    Records written since the look are not lost: they are not in the ledger's `seen`,
    so the next tick collects them.
    """
    fresh = await DistillerMemory.open(
        runtime.memory, IngestPolicy(retention_days=retention_of(runtime))
    )
    if fresh.ledger == seen.memory.ledger:
        return seen.memory, seen.batch
    return fresh, await fresh.collect(now)
