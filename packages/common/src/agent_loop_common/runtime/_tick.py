"""The body of every agent's scheduled task: load settings, run the pipeline, report.

Each agent's `env.py` declares its task (its own `TaskEnvironment`, trigger and
signature) and hands the work to `tick_body`, so what happens around a pipeline (the
runtime opened from the task's settings, the durable writes wired in, the report logged,
the typed summary returned) is the same for every agent and written once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import flyte
import flyte.report

from agent_loop_common.records import Role, RunRecord
from agent_loop_common.report import run_report_html
from agent_loop_common.runtime._fleet import Scout, WorkTask, fleet_tick
from agent_loop_common.runtime._runtime import Runtime, open_runtime
from agent_loop_common.runtime._summary import TickSummary, summarize
from agent_loop_common.runtime._writes import TaskWrites, Writer
from agent_loop_common.settings import Settings, load_settings

__all__ = ["Pipeline", "tick_body", "work_body"]


class Pipeline(Protocol):
    """An agent's Flyte-free tick: `run_builder_tick`, `run_reviewer_tick`."""

    async def __call__(
        self,
        runtime: Runtime,
        target: int | None = None,
        write: Writer | None = None,
        *,
        retry_now: bool = False,
        among: Sequence[int] | None = None,
    ) -> RunRecord | None: ...


async def tick_body(
    role: Role,
    target: int | None,
    pipeline: Pipeline,
    *,
    tasks: TaskWrites,
    heading: str,
    idle: str,
    retry_now: bool = False,
    scout: Scout | None = None,
    work: WorkTask | None = None,
) -> TickSummary:
    """Run one tick of `pipeline` inside the agent's task and return its summary.

    With `AGENT_LOOP_REPOS` or a parallelism above 1 (and no `target`), the tick shares
    its work out instead (`fleet_tick`): `scout` looks at each repository and `work`
    (the agent's work task) runs each slot as its own action, which calls `work_body`.

    Args:
        role: The agent.
        target: The task's `target` input (one issue or PR), or `None`.
        pipeline: The agent's tick (`run_builder_tick`, `run_reviewer_tick`).
        tasks: The agent's durable writes as tasks of its environment.
        heading: The report's title.
        idle: What an idle tick says (report and summary).
        retry_now: The operator's `--retry-now` for `target` (its back-off is ignored).
        scout: The agent's cheap look at one repository (many repositories or slots).
        work: The agent's work task (many repositories or slots).
    """
    settings = load_settings()
    fleet = settings.many_repos or settings.parallel(role.value) > 1  # pyright: ignore[reportArgumentType]
    if fleet and scout is not None and work is not None and target is None:
        summary = await fleet_tick(settings, role, scout=scout, work=work, idle=idle)
        await flyte.report.log.aio(_fleet_report(summary, heading), do_flush=True)
        return summary
    if settings.many_repos:
        settings = _one_repo(settings)
    async with open_runtime(settings, role) as runtime:
        record = await pipeline(
            runtime,
            target,
            tasks.writer(runtime.github.stats, runtime.settings.repo),
            retry_now=retry_now,
        )
    html = run_report_html(record, heading=heading, idle=f"Idle: {idle}.")
    await flyte.report.log.aio(html, do_flush=True)
    return summarize(role, record, idle=idle, paused=runtime.paused)


async def work_body(
    role: Role,
    repo: str,
    among: Sequence[int],
    pipeline: Pipeline,
    *,
    tasks: TaskWrites,
    heading: str,
    idle: str,
) -> TickSummary:
    """One slot of a shared-out tick (its own action): work the first of `among` in
    `repo` that is eligible and claimed, and return that run's summary."""
    settings = load_settings()
    if settings.many_repos:
        settings = settings.for_repo(repo)
    async with open_runtime(settings, role) as runtime:
        record = await pipeline(
            runtime,
            None,
            tasks.writer(runtime.github.stats, runtime.settings.repo),
            among=list(among),
        )
    html = run_report_html(record, heading=heading, idle=f"Idle: {idle}.")
    await flyte.report.log.aio(html, do_flush=True)
    return summarize(role, record, idle=idle, paused=runtime.paused)


def _one_repo(settings: Settings) -> Settings:
    """A one-target run with `AGENT_LOOP_REPOS` needs the list to name one repository."""
    named = [r for r in settings.repos if not r.endswith("/*")]
    if len(settings.repos) != 1 or len(named) != 1:
        from agent_loop_common.settings import ConfigError

        raise ConfigError(
            [
                "a run on one issue or pull request needs one repository: AGENT_LOOP_REPOS "
                f"lists {', '.join(settings.repos)}; name one (agent-loop run --repo OWNER/NAME)"
            ]
        )
    return settings.for_repo(named[0])


def _fleet_report(summary: TickSummary, heading: str) -> str:
    """The tick's own report: one line per run (each run's action has its full report)."""
    from html import escape

    rows = "".join(
        f"<li>{escape(r.repo)} {escape(r.target_label)}: {escape(str(r.outcome))}"
        f"{' - ' + escape(r.error) if r.error else ''}</li>"
        for r in (summary.runs or ([] if summary.idle else [summary]))
    )
    return f"<h1>{escape(heading)}</h1><p>{escape(summary.note)}</p><ul>{rows}</ul>"
