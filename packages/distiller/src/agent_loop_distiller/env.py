"""The distiller's Flyte environment and its scheduled task `distiller_tick`.

One pass per tick (every 10 minutes by default, `AGENT_LOOP_DISTILLER_SCHEDULE`, read at
import because triggers are declared at import). The distiller writes only memory (its
GitHub writes are the claim ref, through the claims helper), so it has no durable
write sub-tasks: its commit is ordered by `DistillerMemory.commit` and protected by the
repository-level claim.
"""

from __future__ import annotations

import pathlib
from datetime import datetime

import flyte
import flyte.report

from agent_loop_common.deploy import agent_env_vars, agent_image, agent_schedule, agent_secrets
from agent_loop_common.records import Role
from agent_loop_common.runtime import open_runtime
from agent_loop_common.settings import load_settings
from agent_loop_distiller.news import PassKind
from agent_loop_distiller.pipeline import PassResult, run_distiller_pass
from agent_loop_distiller.report import render_summary, render_tabs

__all__ = ["PACKAGE_DIR", "SCHEDULE", "distiller_tick", "env", "summarize_pass"]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/distiller`: where the image's exported lock lives."""

SCHEDULE = agent_schedule("distiller")
"""Cron schedule of the tick (5 fields, UTC)."""

env = flyte.TaskEnvironment(
    name="distiller",
    image=agent_image("distiller", PACKAGE_DIR),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
)


def summarize_pass(result: PassResult) -> dict[str, str]:
    """The task's output: a few strings about the pass, `{}` for an idle tick."""
    record = result.record
    if record is None:
        if result.kind is PassKind.IDLE:
            return {}
        return {"pass": result.kind.value, "note": result.note}
    out = {
        "run_id": record.run_id,
        "outcome": record.outcome.value,
        "target": record.target.kind.value,
        "github_requests": str(record.github.requests),
        "pass": result.kind.value,
        "ingested": str(result.ingested),
        "lessons": str(len(result.lessons.lessons)) if result.lessons else "0",
    }
    if record.error:
        out["error"] = record.error
    return out


async def publish_report(result: PassResult, run_id: str) -> None:
    """Log the pass to the task's report: a summary, and the four tabs after real work."""
    facts = {"run": run_id, "pass": result.kind.value, "note": result.note or "–"}
    if result.record is not None:
        facts["outcome"] = result.record.outcome.value
        if result.record.error:
            facts["error"] = result.record.error
    await flyte.report.log.aio(render_summary(facts))
    if result.report is not None:
        for name, html in render_tabs(result.report).items():
            flyte.report.get_tab(name).log(html)


@env.task(
    report=True,
    triggers=(
        flyte.Trigger(
            name="distiller_schedule",
            automation=flyte.Cron(SCHEDULE),
            inputs={"trigger_time": flyte.TriggerTime},
        )
    ),
)
async def distiller_tick(trigger_time: datetime | None = None) -> dict[str, str]:
    """One distiller pass: ingest, grade, distil, commit, report."""
    settings = load_settings()
    async with open_runtime(settings, Role.DISTILLER) as runtime:
        result = await run_distiller_pass(runtime)
        run_id = runtime.run_id
    await publish_report(result, run_id)
    del trigger_time  # the schedule's time only names the run; the pass uses the clock
    return summarize_pass(result)
