"""The reviewer's Flyte environment: its image, secrets, durable writes and scheduled tick.

Durable are the writes declared in `_writes.WRITES` (`push_fix`, the compare-and-swap
commit; `post_replies`, the answers and the summary; `post_no_changes`, the comment
naming the head reviewed; `post_note` for the other pass comments): each becomes a task
of this environment, a tracked action whose inputs are persisted, so a run's timeline
shows exactly what it wrote. Reads and the staging tools stay in process; so do the
claim protocol's writes, which are the run's lock and must happen in the run that holds
it. With `AGENT_LOOP_SANDBOX=flyte` the environment depends on the tests' own task (no
secrets), where the repository's code runs instead of here.
"""

from __future__ import annotations

import pathlib
from datetime import datetime

import flyte

from agent_loop_common.deploy import (
    agent_env_vars,
    agent_image,
    agent_reuse,
    agent_schedule,
    agent_secrets,
    agent_tests_environments,
    agent_trigger,
)
from agent_loop_common.records import Role
from agent_loop_common.runtime import (
    TickSummary,
    WorkTask,
    tick_body,
    work_body,
)
from agent_loop_reviewer._pipeline import run_reviewer_tick, scout_pulls
from agent_loop_reviewer._writes import WRITES

__all__ = [
    "IDLE_NOTE",
    "PACKAGE_DIR",
    "REUSE",
    "SCHEDULE",
    "TASKS",
    "env",
    "reviewer_tick",
    "reviewer_work",
]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/reviewer`: where the image's exported lock lives."""

SCHEDULE = agent_schedule("reviewer")
"""The cron cadence, read at import because triggers are declared at import."""

IDLE_NOTE = "no agent pull request needed a pass"
"""What an idle reviewer tick says."""


REUSE = agent_reuse()
"""Reusable containers (`AGENT_LOOP_REUSE_IDLE_MINUTES`): a tick after the first runs
warm, with no container start and no imports; `None` when switched off."""

env = flyte.TaskEnvironment(
    name="reviewer",
    image=agent_image("reviewer", PACKAGE_DIR, reuse=REUSE),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
    reusable=REUSE,
    depends_on=agent_tests_environments(),
)

TASKS = WRITES.durable(env, module=__name__)
"""Every reviewer write as a task of `env` (module attributes of the same names)."""


@env.task(report=True, triggers=(agent_trigger("reviewer"),))
async def reviewer_tick(
    trigger_time: datetime | None = None, target: int | None = None, retry_now: bool = False
) -> TickSummary:
    """One reviewer tick: give the first agent PR that needs it (or PR `target`) a review
    pass, and return the tick's summary."""
    del trigger_time  # the schedule's time only names the run
    return await tick_body(
        Role.REVIEWER,
        target,
        run_reviewer_tick,
        tasks=TASKS,
        retry_now=retry_now,
        heading="Reviewer tick",
        idle=IDLE_NOTE,
        scout=scout_pulls,
        work=WorkTask(reviewer_work),
    )


@env.task(report=True)
async def reviewer_work(repo: str, among: list[int]) -> TickSummary:
    """One slot of a reviewer tick over many repositories or with
    `AGENT_LOOP_REVIEWER_PARALLEL` above 1: its own action, run, claim, budget and
    record; works the first of `among` in `repo` that is eligible and claimed."""
    return await work_body(
        Role.REVIEWER,
        repo,
        among,
        run_reviewer_tick,
        tasks=TASKS,
        heading="Reviewer run",
        idle=IDLE_NOTE,
    )
