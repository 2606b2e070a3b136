"""The body of every agent's scheduled task: load settings, run the pipeline, report.

Each agent's `env.py` declares its task (its own `TaskEnvironment`, trigger and
signature) and hands the work to `tick_body`, so what happens around a pipeline (the
runtime opened from the task's settings, the durable writes wired in, the report logged,
the typed summary returned) is the same for every agent and written once. Every tick
also leaves its `IdleProof` (void unless it was provably idle) for the next tick's lean
path (`fast_idle_tick`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import flyte
import flyte.report
import structlog

from agent_loop_common.memory import MemoryLocation, write_idle_proof
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.report import run_report_html
from agent_loop_common.runtime._fleet import Scout, WorkTask, fleet_tick
from agent_loop_common.runtime._idle_proof import (
    PROOF_MAX_AGE,
    PROVABLY_IDLE_ROLES,
    VOID_PROOF,
    IdleProof,
    ProvenRead,
    settings_fingerprint,
)
from agent_loop_common.runtime._interrupt import stop_on_signals
from agent_loop_common.runtime._runtime import Runtime, open_runtime
from agent_loop_common.runtime._summary import TickSummary, summarize
from agent_loop_common.runtime._writes import TaskWrites, Writer
from agent_loop_common.settings import Settings, load_settings

__all__ = ["Pipeline", "leave_idle_proof", "tick_body", "work_body"]

_log = structlog.get_logger(__name__)


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
    with stop_on_signals():  # on a cluster the task owns the signals (SIGTERM on eviction)
        if fleet and scout is not None and work is not None and target is None:
            summary = await fleet_tick(settings, role, scout=scout, work=work, idle=idle)
            await _write_proof(MemoryLocation.from_settings(settings), role, None)
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
            await leave_idle_proof(runtime, record, note=idle, untargeted=target is None)
        html = run_report_html(
            record, heading=heading, idle=f"Idle: {idle}.", events=runtime.progress.events
        )
        await flyte.report.log.aio(html, do_flush=True)
    return summarize(
        role, record, idle=idle, paused=runtime.paused, interrupted=runtime.interrupted
    )


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
    with stop_on_signals():  # a slot's own container on a cluster
        async with open_runtime(settings, role) as runtime:
            record = await pipeline(
                runtime,
                None,
                tasks.writer(runtime.github.stats, runtime.settings.repo),
                among=list(among),
            )
        html = run_report_html(
            record, heading=heading, idle=f"Idle: {idle}.", events=runtime.progress.events
        )
        await flyte.report.log.aio(html, do_flush=True)
    return summarize(
        role, record, idle=idle, paused=runtime.paused, interrupted=runtime.interrupted
    )


async def leave_idle_proof(
    runtime: Runtime, record: RunRecord | None, *, note: str, untargeted: bool = True
) -> IdleProof | None:
    """Leave the tick's `IdleProof` for the next tick's lean path, and return it.

    A void one unless the run was untargeted and idle (no record, not paused) and its
    decision can be re-checked by conditional reads alone (see `IdleProof`). A failure
    to save costs the next tick its fast path, never this tick.

    Args:
        runtime: The run, still open (its facade's `reads`, its `recheck_at`).
        record: What the pipeline returned (`None`: it claimed nothing).
        note: What the idle tick says (`no eligible issue`).
        untargeted: The tick chose its own work (a targeted run leaves a void proof).
    """
    idle = untargeted and record is None and runtime.paused is None and runtime.interrupted is None
    proof = _proof_of(runtime, note) if idle else None
    await _write_proof(runtime.memory, runtime.role, proof)
    return proof


def _proof_of(runtime: Runtime, note: str) -> IdleProof | None:
    reads = runtime.github.reads
    if runtime.role not in PROVABLY_IDLE_ROLES or not reads.only_polled:
        return None
    now = runtime.clock()
    recheck_at = now + PROOF_MAX_AGE
    if runtime.recheck_at is not None:
        recheck_at = min(recheck_at, runtime.recheck_at)
    if recheck_at <= now:
        return None
    return IdleProof(
        role=runtime.role.value,
        repo=runtime.settings.repo,
        settings=settings_fingerprint(runtime.settings.model_dump_json()),
        reads=tuple(ProvenRead(r.url, r.etag, r.headers) for r in reads.polled.values()),
        decided_at=now,
        recheck_at=recheck_at,
        note=note,
    )


async def _write_proof(memory: MemoryLocation, role: Role, proof: IdleProof | None) -> None:
    if role not in PROVABLY_IDLE_ROLES:
        return
    try:
        await write_idle_proof(memory, role, proof.to_json() if proof else VOID_PROOF)
    except Exception as exc:
        _log.warning("tick.idle_proof_not_saved", error=repr(exc))


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
