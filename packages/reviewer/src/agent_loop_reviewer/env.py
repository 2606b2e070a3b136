"""The reviewer's Flyte environment: its image, secrets, durable writes and scheduled tick.

Durable (`@env.task`) are the writes to a PR: `push_fix` (the compare-and-swap commit),
`post_replies` (answers and the summary) and `post_no_changes` (the comment naming the
head reviewed), plus `post_note` for the other pass comments. Each is a tracked action
whose inputs are persisted, so a run's timeline shows exactly what it wrote. Reads and
the staging tools stay in process; so do the claim protocol's writes, which are the
run's lock and must happen in the run that holds it.
"""

from __future__ import annotations

import pathlib
from datetime import datetime

import flyte

from agent_loop_common.deploy import agent_env_vars, agent_image, agent_schedule, agent_secrets
from agent_loop_common.records import Role
from agent_loop_common.runtime import CountedWrites, open_runtime, write_with_receipt
from agent_loop_common.settings import load_settings
from agent_loop_reviewer import _apply
from agent_loop_reviewer._apply import (
    FixCommit,
    NoChangesNote,
    Posted,
    PostedReplies,
    PushResult,
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

SCHEDULE = agent_schedule("reviewer")
"""The cron cadence, read at import because triggers are declared at import."""


env = flyte.TaskEnvironment(
    name="reviewer",
    image=agent_image("reviewer", PACKAGE_DIR),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
)


@env.task
async def push_fix(fix: FixCommit) -> PushResult:
    """Push one verified commit onto the PR branch by compare-and-swap (never forced)."""
    return await write_with_receipt(lambda github: _apply.push_fix(github, fix))


@env.task
async def post_replies(batch: ReplyBatch) -> PostedReplies:
    """Reply to each addressed feedback item, then post the one summary comment."""
    return await write_with_receipt(lambda github: _apply.post_replies(github, batch))


@env.task
async def post_no_changes(note: NoChangesNote) -> Posted:
    """Post the short comment naming the head commit that needed no change."""
    return await write_with_receipt(lambda github: _apply.post_no_changes(github, note))


@env.task
async def post_note(pr: int, body: str) -> Posted:
    """Post another pass comment: a fix that failed verification, or check fixing stopped."""
    return await write_with_receipt(lambda github: _apply.post_note(github, pr, body))


class TaskWrites(CountedWrites):
    """`ReviewWrites` as durable actions of the running tick.

    Each action's GitHub requests are added to `stats` (the run's facade counts), so
    the run record counts every request of the tick, sub-tasks included.
    """

    async def push_fix(self, fix: FixCommit) -> PushResult:
        return self.counted(await push_fix(fix))

    async def post_replies(self, batch: ReplyBatch) -> PostedReplies:
        return self.counted(await post_replies(batch))

    async def post_no_changes(self, note: NoChangesNote) -> Posted:
        return self.counted(await post_no_changes(note))

    async def post_note(self, pr: int, body: str) -> Posted:
        return self.counted(await post_note(pr, body))


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
