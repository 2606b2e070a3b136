"""The body of every agent's scheduled task: load settings, run the pipeline, report.

Each agent's `env.py` declares its task (its own `TaskEnvironment`, trigger and
signature) and hands the work to `tick_body`, so what happens around a pipeline (the
runtime opened from the task's settings, the durable writes wired in, the report logged,
the typed summary returned) is the same for every agent and written once.
"""

from __future__ import annotations

from typing import Protocol

import flyte
import flyte.report

from agent_loop_common.records import Role, RunRecord
from agent_loop_common.report import run_report_html
from agent_loop_common.runtime._runtime import Runtime, open_runtime
from agent_loop_common.runtime._summary import TickSummary, summarize
from agent_loop_common.runtime._writes import TaskWrites, Writer
from agent_loop_common.settings import load_settings

__all__ = ["Pipeline", "tick_body"]


class Pipeline(Protocol):
    """An agent's Flyte-free tick: `run_builder_tick`, `run_reviewer_tick`."""

    async def __call__(
        self,
        runtime: Runtime,
        target: int | None = None,
        write: Writer | None = None,
        *,
        retry_now: bool = False,
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
) -> TickSummary:
    """Run one tick of `pipeline` inside the agent's task and return its summary.

    Args:
        role: The agent.
        target: The task's `target` input (one issue or PR), or `None`.
        pipeline: The agent's tick (`run_builder_tick`, `run_reviewer_tick`).
        tasks: The agent's durable writes as tasks of its environment.
        heading: The report's title.
        idle: What an idle tick says (report and summary).
        retry_now: The operator's `--retry-now` for `target` (its back-off is ignored).
    """
    settings = load_settings()
    async with open_runtime(settings, role) as runtime:
        record = await pipeline(
            runtime, target, tasks.writer(runtime.github.stats), retry_now=retry_now
        )
    html = run_report_html(record, heading=heading, idle=f"Idle: {idle}.")
    await flyte.report.log.aio(html, do_flush=True)
    return summarize(role, record, idle=idle, paused=runtime.paused)
