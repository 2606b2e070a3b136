"""The distiller's Flyte environment and its scheduled task `distiller_tick`.

One tick every 10 minutes by default (`AGENT_LOOP_DISTILLER_SCHEDULE`, read at
import because triggers are declared at import). The distiller writes only memory (its
GitHub writes are the claim ref, through the claims helper), so it has no durable
write sub-tasks: its commit is ordered by `DistillerMemory.commit` and protected by the
repository-level claim.
"""

from __future__ import annotations

import pathlib
from collections.abc import Sequence
from datetime import datetime

import flyte
import flyte.report

from agent_loop_common.deploy import (
    agent_env_vars,
    agent_image,
    agent_reuse,
    agent_schedule,
    agent_secrets,
    agent_trigger,
)
from agent_loop_common.progress import ProgressEvent
from agent_loop_common.records import Outcome, Role
from agent_loop_common.report import progress_html
from agent_loop_common.runtime import (
    TickSummary,
    open_runtime,
    resolve_repos,
    stop_on_signals,
    stop_requested,
    summarize,
    summarize_many,
)
from agent_loop_common.settings import load_settings
from agent_loop_distiller._pipeline import DistillerOptions, TickResult, run_distiller_tick
from agent_loop_distiller._report import render_summary, render_tabs
from agent_loop_distiller._select import TickKind

__all__ = [
    "IDLE_NOTE",
    "PACKAGE_DIR",
    "REUSE",
    "SCHEDULE",
    "distiller_tick",
    "env",
    "summarize_tick",
]

PACKAGE_DIR = pathlib.Path(__file__).resolve().parents[2]
"""`packages/distiller`: where the image's exported lock lives."""

SCHEDULE = agent_schedule("distiller")
"""Cron schedule of the tick (5 fields, UTC)."""

REUSE = agent_reuse()
"""Reusable containers (`AGENT_LOOP_REUSE_IDLE_MINUTES`): a tick after the first runs
warm, with no container start and no imports; `None` when switched off."""

env = flyte.TaskEnvironment(
    name="distiller",
    image=agent_image("distiller", PACKAGE_DIR, reuse=REUSE),
    secrets=agent_secrets(),
    # A scheduled run has no shell: the deploying shell's settings travel with the env.
    env_vars=agent_env_vars(),
    reusable=REUSE,
)


IDLE_NOTE = "nothing new"
"""What an idle distiller tick says."""

_IDLE_KINDS = frozenset({TickKind.IDLE, TickKind.BUSY, TickKind.BOOKKEEPING})
"""Ticks that wrote no run record and did no model work: idle to the caller."""


def _diagnosis_figures(result: TickResult) -> dict[str, str]:
    """What the tick did about the lessons' diagnoses (only what it did something about)."""
    figures: dict[str, int] = {}
    if result.judged is not None:
        figures["compliance_judgments"] = result.judged.asked
    if result.acted is not None:
        figures["narrowed"] = len(result.acted.narrowed)
        figures["reworded"] = len(result.acted.reworded)
        figures["flagged"] = len(result.acted.flagged)
    if result.replayed is not None:
        figures["replayed_pairs"] = result.replayed.count
        figures["replay_model_calls"] = result.replayed.llm_calls
    return {key: str(n) for key, n in figures.items() if n}


def summarize_tick(result: TickResult) -> TickSummary:
    """The task's output: the common summary, with the tick's kind and figures as details
    (with `AGENT_LOOP_LESSONS_PR=on`, what the lessons pull request did, e.g. `opened #7`,
    and whose edits of it were ignored; with `AGENT_LOOP_LESSON_REPLAY=on`, the pairs
    replayed, their model calls, and why the replays stopped early)."""
    details = {"tick": result.kind.value}
    pull = result.lessons_pull
    if pull is not None:
        details["lessons_pr"] = pull.action + (f" #{pull.number}" if pull.number else "")
    if result.lessons_edits_ignored:
        details["lessons_edits_ignored"] = "; ".join(
            x.describe() for x in result.lessons_edits_ignored
        )
    if result.replayed is not None:
        details |= _diagnosis_figures(result)  # replays may run on a tick with no record
        if result.replayed.stopped:  # the budget, a failure (the eval not deployed), a stop
            details["replays_stopped"] = result.replayed.stopped
    if result.record is not None:
        details["ingested"] = str(result.ingested)
        details["lessons"] = str(len(result.lessons.lessons)) if result.lessons else "0"
        details |= _diagnosis_figures(result)
        # A replay tick says what its replays did (a distillation's record says the rest).
        note = result.note if result.kind is TickKind.REPLAYED else ""
        return summarize(Role.DISTILLER, result.record, idle=IDLE_NOTE, note=note, details=details)
    if result.kind is TickKind.INTERRUPTED:
        return TickSummary(
            role=Role.DISTILLER, outcome=Outcome.INTERRUPTED, note=result.note, details=details
        )
    if result.kind in _IDLE_KINDS:
        return summarize(Role.DISTILLER, None, idle=IDLE_NOTE, note=result.note, details=details)
    return TickSummary(
        role=Role.DISTILLER, outcome=Outcome.BACKED_OFF, note=result.note, details=details
    )


async def publish_report(
    result: TickResult,
    run_id: str,
    model: str = "",
    events: Sequence[ProgressEvent] = (),
) -> None:
    """Log the tick to the task's report: a summary and the pass's progress, and the
    four tabs after real work.

    Args:
        result: The tick's result.
        run_id: The tick's run id.
        model: The model that answered (`Runtime.model_name`: a replayed or scripted
            model is named as such).
        events: The pass's progress events (`Runtime.progress`), as `run` printed them.
    """
    facts = {"run": run_id, "tick": result.kind.value, "note": result.note or "–"}
    if model:
        facts["model"] = model
    if result.record is not None:
        facts["outcome"] = result.record.outcome.value
        if result.record.error:
            facts["error"] = result.record.error
    await flyte.report.log.aio(render_summary(facts) + progress_html(events))
    if result.report is not None:
        for name, html in render_tabs(result.report).items():
            flyte.report.get_tab(name).log(html)


@env.task(report=True, triggers=(agent_trigger("distiller"),))
async def distiller_tick(
    trigger_time: datetime | None = None, target: int | None = None, retry_now: bool = False
) -> TickSummary:
    """One distiller tick: ingest, grade, distill, commit, report.

    `target` is accepted for the common tick signature and must be `None`: the
    distiller works on the repository as a whole. `retry_now` does not wait out the
    back-off after failed ticks.
    """
    if target is not None:
        raise ValueError("the distiller takes no target: it works on the repository as a whole")
    del trigger_time  # the schedule's time only names the run; the tick uses the clock
    settings = load_settings()
    summaries: list[TickSummary] = []
    # Each repository's memory namespace has its own records, ledger and lessons: one
    # pass each, in turn (a distiller pass is cheap when nothing is new).
    with stop_on_signals():  # on a cluster the task owns the signals (SIGTERM on eviction)
        for repo in await resolve_repos(settings):
            one = settings.for_repo(repo) if settings.many_repos else settings
            async with open_runtime(one, Role.DISTILLER) as runtime:
                result = await run_distiller_tick(runtime, DistillerOptions(retry_now=retry_now))
                run_id, model = runtime.run_id, runtime.model_name
            await publish_report(result, run_id, model, runtime.progress.events)
            summaries.append(summarize_tick(result))
            if stop_requested() is not None:  # the operator stopped the tick: no next pass
                break
    return summarize_many(Role.DISTILLER, summaries, idle=IDLE_NOTE)
