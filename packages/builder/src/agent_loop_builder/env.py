"""The builder's Flyte environment: its image, secrets, durable writes and scheduled tick.

Durable are the writes declared in `_writes.WRITES` (`open_pull_request`,
`file_sub_issues`, `post_feedback`): each becomes a task of this environment, a tracked
action with its inputs persisted, so a run's timeline shows exactly what it wrote, and
each is safe to re-run. Reads (issue listings, files, comments) and the staging tools
stay in process: they change nothing, and a task per read would cost a container start
for a few kilobytes. The claim protocol's own writes (claim, heartbeat, release,
back-off marker) also stay in process: they are the run's lock, and must happen in the
run that holds it. With `AGENT_LOOP_SANDBOX=flyte` the environment depends on the
tests' own task (no secrets), where the repository's code runs instead of here.
"""

from __future__ import annotations

import pathlib
from datetime import datetime

import flyte
import structlog

from agent_loop_builder._pipeline import run_builder_tick, scout_issues
from agent_loop_builder._writes import WRITES
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

__all__ = [
    "IDLE_NOTE",
    "PACKAGE_DIR",
    "REUSE",
    "SCHEDULE",
    "TASKS",
    "builder_tick",
    "builder_work",
    "env",
]

_log = structlog.get_logger(__name__)

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/builder`: where the image's exported lock lives."""

SCHEDULE = agent_schedule("builder")
"""The cron cadence, read at import because triggers are declared at import."""

IDLE_NOTE = "no eligible issue"
"""What an idle builder tick says."""


REUSE = agent_reuse()
"""Reusable containers (`AGENT_LOOP_REUSE_IDLE_MINUTES`): a tick after the first runs
warm, with no container start and no imports; `None` when switched off."""

env = flyte.TaskEnvironment(
    name="builder",
    image=agent_image("builder", PACKAGE_DIR, reuse=REUSE),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
    reusable=REUSE,
    depends_on=agent_tests_environments(),
)

TASKS = WRITES.durable(env, module=__name__)
"""Every builder write as a task of `env` (module attributes of the same names)."""


@env.task(report=True, triggers=(agent_trigger("builder"),))
async def builder_tick(
    trigger_time: datetime | None = None, target: int | None = None, retry_now: bool = False
) -> TickSummary:
    """One builder tick: take the oldest eligible issue (or issue `target`) to a PR or
    sub-issues, and return the tick's summary."""
    _log.info(
        "builder.tick",
        trigger_time=trigger_time.isoformat() if trigger_time else None,
        target=target,
    )
    return await tick_body(
        Role.BUILDER,
        target,
        run_builder_tick,
        tasks=TASKS,
        retry_now=retry_now,
        heading="Builder tick",
        idle=IDLE_NOTE,
        scout=scout_issues,
        work=WorkTask(builder_work),
    )


@env.task(report=True)
async def builder_work(repo: str, among: list[int]) -> TickSummary:
    """One slot of a builder tick over many repositories or with
    `AGENT_LOOP_BUILDER_PARALLEL` above 1: its own action, run, claim, budget and
    record; works the first of `among` in `repo` that is eligible and claimed."""
    return await work_body(
        Role.BUILDER,
        repo,
        among,
        run_builder_tick,
        tasks=TASKS,
        heading="Builder run",
        idle=IDLE_NOTE,
    )
