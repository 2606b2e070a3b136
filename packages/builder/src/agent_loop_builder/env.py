"""The builder's Flyte environment: its image, secrets, durable writes and scheduled tick.

Durable (`@env.task`) are the writes: `open_pull_request`, `file_sub_issues` and
`post_feedback`. Each is a tracked action with its inputs persisted, so a run's
timeline shows exactly what it wrote, and each is safe to re-run (see `apply`). Reads
(issue listings, files, comments) and the staging tools stay in process: they change
nothing, and a task per read would cost a container start for a few kilobytes. The
claim protocol's own writes (claim, heartbeat, release, back-off marker) also stay in
process: they are the run's lock, and must happen in the run that holds it.
"""

from __future__ import annotations

import pathlib
from datetime import datetime

import flyte
import structlog

from agent_loop_builder import apply
from agent_loop_builder.apply import (
    FiledIssues,
    OpenedPull,
    Posted,
    PullRequestSpec,
    SubIssuesSpec,
)
from agent_loop_builder.pipeline import run_builder_tick
from agent_loop_builder.report import report_html, summarize
from agent_loop_common.deploy import agent_env_vars, agent_image, agent_schedule, agent_secrets
from agent_loop_common.records import Role
from agent_loop_common.runtime import CountedWrites, open_runtime, write_with_receipt
from agent_loop_common.settings import load_settings

__all__ = [
    "PACKAGE_DIR",
    "SCHEDULE",
    "TaskWrites",
    "builder_tick",
    "env",
    "file_sub_issues",
    "open_pull_request",
    "post_feedback",
]

_log = structlog.get_logger(__name__)

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/builder`: where the image's exported lock lives."""

SCHEDULE = agent_schedule("builder")
"""The cron cadence, read at import because triggers are declared at import."""


env = flyte.TaskEnvironment(
    name="builder",
    image=agent_image("builder", PACKAGE_DIR),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
)


@env.task
async def open_pull_request(spec: PullRequestSpec) -> OpenedPull:
    """Commit a verified change on its branch and open the pull request."""
    return await write_with_receipt(lambda github: apply.open_pull_request(github, spec))


@env.task
async def file_sub_issues(spec: SubIssuesSpec) -> FiledIssues:
    """File a verified decomposition's sub-issues and close the spec issue."""
    return await write_with_receipt(lambda github: apply.file_sub_issues(github, spec))


@env.task
async def post_feedback(issue: int, body: str) -> Posted:
    """Post the builder's feedback (final rejection, or why it skipped) on an issue."""
    return await write_with_receipt(lambda github: apply.post_feedback(github, issue, body))


class TaskWrites(CountedWrites):
    """`BuilderWrites` as durable actions of the running tick.

    Each action's GitHub requests are merged into `stats` (the run's facade counts), so
    the run record counts every request of the tick, its actions included.
    """

    async def open_pull_request(self, spec: PullRequestSpec) -> OpenedPull:
        return self.counted(await open_pull_request(spec))

    async def file_sub_issues(self, spec: SubIssuesSpec) -> FiledIssues:
        return self.counted(await file_sub_issues(spec))

    async def post_feedback(self, issue: int, body: str) -> Posted:
        return self.counted(await post_feedback(issue, body))


@env.task(
    report=True,
    triggers=(
        flyte.Trigger(
            name="builder_schedule",
            automation=flyte.Cron(SCHEDULE),
            inputs={"trigger_time": flyte.TriggerTime},
        ),
    ),
)
async def builder_tick(
    trigger_time: datetime | None = None, issue: int | None = None
) -> dict[str, str]:
    """One builder tick: take the oldest eligible issue (or `issue`) to a PR or sub-issues.

    Returns the summary (`{}` when idle): run id, outcome, target, links, error, and
    the GitHub requests the tick made.
    """
    settings = load_settings()
    _log.info(
        "builder.tick", trigger_time=trigger_time.isoformat() if trigger_time else None, issue=issue
    )
    async with open_runtime(settings, Role.BUILDER) as runtime:
        writes = TaskWrites(runtime.github.stats)
        record = await run_builder_tick(runtime, issue, writes=writes)
    await flyte.report.log.aio(report_html(record), do_flush=True)
    return summarize(record)
