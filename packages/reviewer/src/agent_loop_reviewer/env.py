"""The reviewer's Flyte environment: its image, secrets, durable writes and scheduled tick.

Durable (`@env.task`) are the writes to a PR: `push_fix` (the compare-and-swap commit),
`post_replies` (answers and the summary) and `post_no_changes` (the comment naming the
head reviewed), plus `post_note` for the other pass comments. Each is a tracked action
whose inputs are persisted, so a run's timeline shows exactly what it wrote. Reads and
the staging tools stay in process; so do the claim protocol's writes, which are the
run's lock and must happen in the run that holds it.
"""

from __future__ import annotations

import os
import pathlib
from datetime import datetime
from typing import TypeVar

import flyte

from agent_loop_common.deploy import agent_env_vars, agent_image, agent_secrets
from agent_loop_common.github import GitHub, RequestStats
from agent_loop_common.records import Role
from agent_loop_common.runtime import github_from_settings, open_runtime
from agent_loop_common.settings import load_settings
from agent_loop_reviewer import _apply
from agent_loop_reviewer._apply import (
    FixCommit,
    NoChangesNote,
    Posted,
    PostedReplies,
    PushResult,
    Receipt,
    ReplyBatch,
)
from agent_loop_reviewer._pipeline import run_reviewer_tick
from agent_loop_reviewer._report import report_html, summary

__all__ = [
    "PACKAGE_DIR",
    "SCHEDULE",
    "TaskWrites",
    "env",
    "post_no_changes",
    "post_note",
    "post_replies",
    "push_fix",
    "reviewer_tick",
]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/reviewer`: where the image's exported lock lives."""

SCHEDULE = os.environ.get("AGENT_LOOP_REVIEWER_SCHEDULE", "*/5 * * * *")
"""The cron cadence, read at import because triggers are declared at import."""


env = flyte.TaskEnvironment(
    name="reviewer",
    image=agent_image("reviewer", PACKAGE_DIR),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
)


_R = TypeVar("_R", bound=Receipt)


def _receipt(result: _R, github: GitHub) -> _R:
    """`result` with the requests this sub-task's facade made, for the run's record."""
    return result.model_copy(update={"requests_by_route": github.stats.by_route()})


@env.task
async def push_fix(fix: FixCommit) -> PushResult:
    """Push one verified commit onto the PR branch by compare-and-swap (never forced)."""
    async with github_from_settings(load_settings()) as github:
        return _receipt(await _apply.push_fix(github, fix), github)


@env.task
async def post_replies(batch: ReplyBatch) -> PostedReplies:
    """Reply to each addressed feedback item, then post the one summary comment."""
    async with github_from_settings(load_settings()) as github:
        return _receipt(await _apply.post_replies(github, batch), github)


@env.task
async def post_no_changes(note: NoChangesNote) -> Posted:
    """Post the short comment naming the head commit that needed no change."""
    async with github_from_settings(load_settings()) as github:
        return _receipt(await _apply.post_no_changes(github, note), github)


@env.task
async def post_note(pr: int, body: str) -> Posted:
    """Post another pass comment: a fix that failed verification, or check fixing stopped."""
    async with github_from_settings(load_settings()) as github:
        return _receipt(await _apply.post_note(github, pr, body), github)


class TaskWrites:
    """`ReviewWrites` as durable actions of the running tick.

    Each action's GitHub requests are added to `stats` (the run's facade counts), so
    the run record counts every request of the tick, sub-tasks included.
    """

    def __init__(self, stats: RequestStats) -> None:
        self._stats = stats

    def _count(self, result: _R) -> _R:
        for route, statuses in result.requests_by_route.items():
            method, _, template = route.partition(" ")
            for status, n in statuses.items():
                for _ in range(n):
                    self._stats.record(method, template, int(status))
        return result

    async def push_fix(self, fix: FixCommit) -> PushResult:
        return self._count(await push_fix(fix))

    async def post_replies(self, batch: ReplyBatch) -> PostedReplies:
        return self._count(await post_replies(batch))

    async def post_no_changes(self, note: NoChangesNote) -> Posted:
        return self._count(await post_no_changes(note))

    async def post_note(self, pr: int, body: str) -> Posted:
        return self._count(await post_note(pr, body))


@env.task(
    report=True,
    triggers=(
        flyte.Trigger(
            name="reviewer_schedule",
            automation=flyte.Cron(SCHEDULE),
            inputs={"trigger_time": flyte.TriggerTime},
        ),
    ),
)
async def reviewer_tick(
    trigger_time: datetime | None = None, pr: int | None = None
) -> dict[str, str]:
    """One reviewer tick: give the first agent PR that needs it (or `pr`) a review pass.

    Returns the summary (`{}` when idle): run id, outcome, target, links, error, and
    the model calls and GitHub requests of the tick.
    """
    settings = load_settings()
    async with open_runtime(settings, Role.REVIEWER) as runtime:
        record = await run_reviewer_tick(runtime, pr, writes=TaskWrites(runtime.github.stats))
    await flyte.report.log.aio(report_html(record), do_flush=True)
    return summary(record)
