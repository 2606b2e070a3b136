"""A run's record as it is being made, and the guarantee that it ends recorded.

Every pipeline (builder, reviewer, distiller) has the same outer shape: time its stages
(as `flyte.group`s, so a run's timeline reads as phases), collect attempts, trace and
links, and on *every* exit path release what it claimed and write exactly one
`RunRecord`, or, when it claimed nothing, only bump the cheap idle counter (or, when
the rate-limit reserve stopped it before a claim, the paused counter). That shape
lives here once; the pipelines fill in the body.

Exit paths include a stop the operator asked for (SIGINT, SIGTERM: see `_interrupt`):
the body runs behind a `StopGate`, which cancels it where it waits, never while it
writes a claim (`RunScope.holding`) and never once it started writing its result (the
first guarded write: `RunScope.commit`), so a push and its record are never split. The
run then releases its claim and is recorded as `interrupted`. A cancellation from
outside (a cluster aborting the action) takes the same path, its cleanup shielded, and
then propagates.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Concatenate, Literal, ParamSpec, TypeVar

import flyte
import structlog

from agent_loop_common.claims import Claim, ClaimLost, ClaimTarget
from agent_loop_common.github import GitHub, RateReserve
from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.memory import (
    collecting_problems,
    count_idle_run,
    count_paused_run,
    write_run_record,
)
from agent_loop_common.progress import emit, run_progress
from agent_loop_common.records import (
    Attempt,
    GitHubUsage,
    LessonExposure,
    Links,
    Outcome,
    RunRecord,
    StaleLesson,
    Target,
    TargetKind,
    TestEvidence,
    TraceStep,
    Usage,
    WorkKind,
)
from agent_loop_common.runtime._faults import operator_fault
from agent_loop_common.runtime._holders import drop_holder, note_holder
from agent_loop_common.runtime._interrupt import StopGate, open_gate
from agent_loop_common.runtime._pause import Pause, ReserveReached, check_reserve
from agent_loop_common.runtime._preflight import preflight_model
from agent_loop_common.runtime._probe import probe_model
from agent_loop_common.runtime._runtime import Runtime
from agent_loop_common.runtime._sandbox import TESTING_ROLES
from agent_loop_common.runtime._writes import Receipt, Writer

__all__ = ["RunScope", "record_failure", "run_scoped"]

_log = structlog.get_logger(__name__)

_MAX_ERROR_CHARS = 4_000
_MAX_NOTES_CHARS = 8_000


@dataclass
class RunScope:
    """Mutable notes of one run, turned into its `RunRecord` at the end."""

    runtime: Runtime
    started_at: datetime
    target: Target | None = None
    """Set as soon as the run claims something: from then on a record is owed."""
    outcome: Outcome | None = None
    error: str = ""
    attempts: list[Attempt] = field(default_factory=list[Attempt])
    trace: list[TraceStep] = field(default_factory=list[TraceStep])
    links: Links = field(default_factory=Links)
    lesson_ids: list[str] = field(default_factory=list[str])
    stale_lessons: list[StaleLesson] = field(default_factory=list[StaleLesson])
    """Lessons hidden for a citation missing from the run's base tree."""
    exposures: list[LessonExposure] = field(default_factory=list[LessonExposure])
    """Every candidate lesson's draw (see `agent_loop_common.lessons`), for the record."""
    work_kind: WorkKind | None = None
    """The run's stratum for lesson effects, set when its lessons are assembled."""
    stage_seconds: dict[str, float] = field(default_factory=dict[str, float])
    fault: Literal["", "operator", "work"] = ""
    """Whose failure ended the run (see `operator_fault`); empty while it has not failed."""
    backoff_until: datetime | None = None
    """When the target rests until, if this run backed it off."""
    problems: list[str] = field(default_factory=list[str])
    """What the run worked around (a corrupt memory document, ...), for its record."""
    _beats: dict[ClaimTarget, asyncio.Task[None]] = field(
        default_factory=dict[ClaimTarget, "asyncio.Task[None]"]
    )
    _lost: dict[ClaimTarget, str] = field(default_factory=dict[ClaimTarget, str])
    tests: TestEvidence | None = None
    """What the repository's tests said about the last change the run checked."""
    pause: Pause | None = None
    """Set when the rate-limit reserve stopped the run before it claimed anything."""
    diff: str = ""
    """The last change the run proposed, as a capped unified diff (`RunRecord.diff`)."""
    gate: StopGate | None = None
    """Where a stop request reaches the body (`run_scoped` opens it)."""
    _renewals: dict[ClaimTarget, asyncio.Task[object]] = field(
        default_factory=dict[ClaimTarget, "asyncio.Task[object]"]
    )

    @contextmanager
    def holding(self) -> Generator[None]:
        """A section a stop must not cut (a claim's ref and comment being written, a
        back-off being posted); a stop requested meanwhile is delivered as it ends."""
        if self.gate is None:
            yield
            return
        with self.gate.hold():
            yield

    def commit(self) -> None:
        """The run starts writing its result: no stop cuts it from here on (a push and
        its record are never split; the body runs to its end)."""
        if self.gate is not None:
            self.gate.commit()

    @asynccontextmanager
    async def stage(self, name: str) -> AsyncGenerator[None]:
        """Time a phase and show it as a group in the Flyte run's timeline (and, as it
        starts, stop if the operator asked: a stage boundary is a safe point)."""
        if self.gate is not None:
            self.gate.checkpoint()
        started = time.perf_counter()
        try:
            with flyte.group(name):
                yield
        finally:
            elapsed = time.perf_counter() - started
            self.stage_seconds[name] = round(self.stage_seconds.get(name, 0.0) + elapsed, 4)

    def add_attempt(
        self,
        number: int,
        *,
        verified: bool,
        notes: str,
        staged_paths: list[str] | None = None,
        tokens_at_start: int | None = None,
        tests: str = "",
    ) -> Attempt:
        """Record one try; its tokens are the run's usage since `tokens_at_start`.

        The one place a try's token count is computed: take `scope.tokens()` when the
        try starts and pass it here when it ends. `tests` is the try's test verdict line.
        """
        used = 0 if tokens_at_start is None else self.tokens() - tokens_at_start
        attempt = Attempt(
            number=number,
            verified=verified,
            notes=notes[:_MAX_NOTES_CHARS],
            staged_paths=staged_paths or [],
            tokens=max(used, 0),
            tests=tests,
        )
        self.attempts.append(attempt)
        return attempt

    async def claim(self, kind: TargetKind, key: int | str, *, title: str = "") -> Claim | None:
        """Claim a target, after proving the run could finish its work.

        First the GitHub budget: at the rate-limit reserve nothing new is claimed
        (`ReserveReached`; `run_scoped` ends the tick `paused`). Then the preflight: the
        model is usable and, for the builder and the reviewer, a sandbox can run the
        tests; the model's endpoint answers and takes the key (`probe_model`: one cheap
        request per process). Having work and a usable model, the run starts loading the
        model library in the background (`Runtime.warm_model`) before the probe, the
        sandbox's check and the claim's writes, which then overlap it. A missing key, an unknown model or no working sandbox stops the run with
        nothing public written; a tick that finds no work needs neither and is not
        stopped by them. A won claim is the run's first progress event (`run.claimed`,
        with `title`).
        """
        check_reserve(
            self.runtime.github.rate_budget, RateReserve.from_settings(self.runtime.settings)
        )
        preflight_model(self.runtime.settings)
        self.runtime.warm_model()  # under way while the probe, the sandbox and the claim go
        await probe_model(self.runtime.settings)  # the endpoint answers, the key is taken
        if self.runtime.role in TESTING_ROLES:
            await self.runtime.sandbox()
        return await self.take(kind, key, title=title)

    async def take(
        self, kind: TargetKind, key: int | str, *, heartbeat: bool = True, title: str = ""
    ) -> Claim | None:
        """The claim itself (`claim` without its checks; the distiller's, which guards
        memory bookkeeping that needs no model): never cut by a stop between its ref and
        its comment, noted as this process's (`note_holder`), renewed every ttl/3 unless
        `heartbeat` is off. A won claim is the run's first progress event (`run.claimed`)."""
        with self.holding():
            claim = await self.runtime.claimer.claim(kind, key)
        if claim is not None:
            note_holder(self.runtime.settings.home, self.runtime.run_id)
            if heartbeat:
                self._beats[claim.target] = asyncio.create_task(self._heartbeat(claim.target))
            self.runtime.progress.target = _target_label(kind, key)
            emit("run.claimed", title=title)
        return claim

    async def _heartbeat(self, target: ClaimTarget) -> None:
        """Renew the claim every ttl/3 while the run works; stop when it is released.

        A run may think for many minutes between two writes (a slow model, a long test
        run); without renewals its claim would expire and another run take the target
        over. A renewal that finds the claim lost records it, and every later write is
        refused (`ensure_held`).
        """
        rt = self.runtime
        interval = rt.claimer.heartbeat.total_seconds()
        while True:
            await rt.sleep(interval)
            current = next((c for c in rt.claimer.held() if c.target == target), None)
            if current is None:
                return
            # Its own task: stopping the heartbeat never cuts a renewal between its ref
            # update and its bookkeeping (`end_heartbeats` waits for it).
            renewal = asyncio.ensure_future(rt.claimer.extend(current))
            self._renewals[target] = renewal
            try:
                await asyncio.shield(renewal)
            except ClaimLost as exc:
                self._lost[target] = str(exc)
                _log.warning("run.claim_lost", target=str(target), error=str(exc))
                return
            except Exception as exc:  # a failed renewal is retried; expiry is checked on write
                _log.warning("run.heartbeat_failed", target=str(target), error=repr(exc))

    def ensure_held(self) -> None:
        """Refuse to go on writing once a claim of this run is lost or has expired.

        Every write after the claim goes through here (`guarded`, `rest`): a run that lost
        its target writes nothing more to it.

        Raises:
            ClaimLost: A renewal found the claim taken, or it expired unrenewed.
        """
        claimer = self.runtime.claimer
        now = self.runtime.clock()
        for target, reason in self._lost.items():
            raise ClaimLost(f"{target}: {reason}")
        for claim in claimer.held():
            if claim.until - claimer.skew <= now:
                raise ClaimLost(f"{claim.target}: the claim expired at {claim.until.isoformat()}")

    def guarded(self, write: Writer) -> Writer:
        """`write`, refusing every write once this run's claim is lost (`ensure_held`)."""
        return _GuardedWriter(self, write)

    async def end_heartbeats(self) -> None:
        """Stop renewing (the run is ending; its claims are about to be released).

        A renewal in flight finishes first: cut between its ref update and its
        bookkeeping, it would leave the ref at a commit the release does not know, and
        the claim would stay until it expires.
        """
        for task in self._beats.values():
            task.cancel()
        self._beats.clear()
        pending = [r for r in self._renewals.values() if not r.done()]
        self._renewals.clear()
        if pending:
            await asyncio.wait(pending)
            for renewal in pending:
                if not renewal.cancelled():
                    renewal.exception()  # retrieved: the heartbeat logged it already

    def tokens(self) -> int:
        """Prompt plus completion tokens of the run so far (every model call)."""
        return self.runtime.usage.total_tokens

    @asynccontextmanager
    async def resting_on_failure(self, target: ClaimTarget) -> AsyncGenerator[None]:
        """Work on a claimed target; a failure rests it (back-off) before it propagates.

        A persistent failure must not burn every tick, so the target's thread records a
        back-off before the error goes on to `run_scoped` (which records it). A lost
        claim is not the target's failure. A failing back-off write never masks the
        error that caused it.
        """
        try:
            yield
        except ClaimLost:
            raise
        except Exception as exc:
            if self.gate is not None and self.gate.stopped:  # the operator's stop: no rest
                raise
            reason = operator_fault(exc)
            if reason is not None:
                self.fault = "operator"
                _log.warning("run.operator_fault", target=str(target), reason=reason)
                raise
            if not self._lost:  # a run that lost its claim writes nothing more
                await self.rest(target, f"the run stopped with {type(exc).__name__}")
            raise

    async def rest(self, target: ClaimTarget, reason: str) -> None:
        """Back the target off after the work failed (a failing write here is only logged).

        Args:
            target: The claimed issue or PR.
            reason: Posted publicly on the target (no secrets, no raw error text).
        """
        self.fault = "work"
        self.ensure_held()
        try:
            with self.holding():
                backoff = await self.runtime.claimer.record_failure(target, reason)
        except Exception as nested:  # the record still tells what happened
            _log.warning("run.backoff_failed", target=str(target), error=repr(nested))
            return
        self.backoff_until = backoff.until

    def finish(self, outcome: Outcome, error: str = "") -> None:
        """Set how the run ended (the last call wins)."""
        self.outcome = outcome
        self.error = error[:_MAX_ERROR_CHARS]

    def record(self) -> RunRecord:
        """The run's record as of now."""
        if self.target is None:
            raise ValueError("a run that claimed nothing has no record")
        rt = self.runtime
        stats = rt.github.stats
        usage = rt.usage
        return RunRecord(
            run_id=rt.run_id,
            role=rt.role,
            deployment=rt.settings.deployment_id,
            repo=rt.settings.repo,
            target=self.target,
            outcome=self.outcome or Outcome.ERROR,
            started_at=self.started_at,
            finished_at=rt.clock(),
            attempts=self.attempts,
            model=rt.model_name,
            usage=Usage(
                tokens_in=usage.prompt_tokens,
                tokens_out=usage.completion_tokens,
                llm_calls=usage.llm_calls,
                cost_usd=usage.cost_usd,
                tokens_cache_read=usage.cache_read_tokens,
                tokens_cache_write=usage.cache_write_tokens,
            ),
            github=GitHubUsage(
                requests=stats.total,
                not_modified=stats.not_modified,
                by_route={
                    route: sum(counts.values()) for route, counts in stats.by_route().items()
                },
            ),
            stage_seconds=self.stage_seconds,
            trace=self.trace,
            links=self.links,
            error=self.error,
            lesson_ids=self.lesson_ids,
            stale_lessons=self.stale_lessons,
            exposures=self.exposures,
            work_kind=self.work_kind,
            fault=self.fault,
            backoff_until=self.backoff_until,
            problems=self.problems,
            tests=self.tests,
            diff=self.diff,
        )


async def run_scoped(
    runtime: Runtime, body: Callable[[RunScope], Awaitable[None]]
) -> RunRecord | None:
    """Run a pipeline body so that it always ends recorded and released.

    The body sets `scope.target` once it holds a claim and `scope.finish(...)` when it
    knows the outcome. Whatever happens (return, exception, budget stop, lost claim, the
    operator's stop), claims still held are released, and the record is written (or,
    for a run that claimed nothing, the idle counter bumped). Errors never escape: a
    scheduled run must not crash the schedule. A stop request (`request_stop`) ends the
    body at its next safe point and the run as `interrupted`; only a cancellation from
    outside propagates, after the same cleanup (shielded).

    Returns:
        The written record, or `None` when the run claimed nothing (then
        `runtime.paused` says whether the rate-limit reserve held it back, and
        `runtime.interrupted` whether the operator stopped it first).
    """
    scope = RunScope(runtime=runtime, started_at=runtime.clock())
    with run_progress(runtime.progress):
        with collecting_problems() as problems:
            cancelled = await _run_body(runtime, scope, body)
            if cancelled is not None:  # from outside: release and record, shielded, then go
                await _shielded(_release_all(runtime, scope))
        scope.problems.extend(p for p in problems if p not in scope.problems)
        stopped = (Outcome.ERROR, Outcome.INTERRUPTED, None)
        if runtime.usage.exceeded and scope.outcome not in stopped:
            scope.finish(Outcome.BUDGET_EXCEEDED, runtime.usage.exceeded)
        if cancelled is not None:
            await _shielded(_persist(runtime, scope))
            raise cancelled
        return await _persist(runtime, scope)


async def record_failure(runtime: Runtime, exc: Exception) -> RunRecord:
    """Record a run that failed before it could claim anything (a repository that
    answers 404, a lost permission, a rate limit), the way `run_scoped` records one:
    outcome `preflight_failed`, target the repository."""
    scope = RunScope(runtime=runtime, started_at=runtime.clock())
    reason = operator_fault(exc)
    scope.fault = "operator" if reason is not None else "work"
    scope.finish(Outcome.ERROR, f"{type(exc).__name__}: {exc}")
    with run_progress(runtime.progress):
        record = await _persist(runtime, scope)
    assert record is not None  # a failure is always recorded (`preflight_failed`)
    return record


async def _run_body(
    runtime: Runtime, scope: RunScope, body: Callable[[RunScope], Awaitable[None]]
) -> asyncio.CancelledError | None:
    """Run the body behind a stop gate; the outcome set, claims released. Returns the
    cancellation that came from outside (not a stop request), for the caller to raise
    after recording."""
    outside: asyncio.CancelledError | None = None
    with open_gate(lambda: _holding(runtime)) as gate:
        scope.gate = gate
        try:
            gate.checkpoint()  # a stop requested before the run started
            await body(scope)
        except asyncio.CancelledError as exc:
            if not gate.stopped:
                outside = exc
            _stopped(runtime, scope, gate, outside)
        except ReserveReached as exc:  # before any claim: not a failure, nothing to rest
            scope.pause = exc.pause
            _log.info("run.paused", role=runtime.role.value, reason=exc.pause.note)
        except BudgetExceeded as exc:
            scope.finish(Outcome.BUDGET_EXCEEDED, str(exc))
        except ClaimLost as exc:
            scope.finish(Outcome.LOST_CLAIM, str(exc))
        except Exception as exc:
            if gate.stopped and not gate.committing:  # the stop's cancellation, reworded
                _stopped(runtime, scope, gate, None)
            else:
                reason = operator_fault(exc)
                if reason is not None:
                    scope.fault = "operator"
                    _log.error(
                        "run.operator_fault",
                        role=runtime.role.value,
                        reason=reason,
                        error=str(exc),
                    )
                else:
                    scope.fault = scope.fault or "work"
                    _log.exception("run.error", role=runtime.role.value, run_id=runtime.run_id)
                scope.finish(Outcome.ERROR, f"{type(exc).__name__}: {exc}")
        finally:
            task = asyncio.current_task()
            for _ in range(gate.cancels if task is not None and outside is None else 0):
                task.uncancel()  # pyright: ignore[reportOptionalMemberAccess]
    # The gate is closed: a stop requested now cannot cut the cleanup.
    if outside is None:
        await scope.end_heartbeats()
        await _release_all(runtime, scope)
    else:
        await _shielded(scope.end_heartbeats())
    return outside


def _forget_holder(runtime: Runtime) -> None:
    """This process holds nothing more of the run: drop its note (`note_holder`)."""
    if not runtime.claimer.held():
        drop_holder(runtime.settings.home, runtime.run_id)


def _stopped(
    runtime: Runtime,
    scope: RunScope,
    gate: StopGate,
    outside: asyncio.CancelledError | None,
) -> None:
    """Set the outcome of a run the operator stopped (or that was cancelled from
    outside): `interrupted`, on its claimed target; a run that claimed nothing has no
    record and says so on `runtime.interrupted`."""
    interrupt = gate.interrupt
    why = (
        f"stopped by the operator ({interrupt.name}) at a safe point"
        if interrupt is not None
        else f"cancelled from outside ({outside or 'the task was cancelled'})"
    )
    held = runtime.claimer.held()
    if scope.target is None and held:
        claimed = held[0].target
        scope.target = Target(
            kind=claimed.kind,
            number=claimed.number if claimed.has_thread else None,
            title="" if claimed.has_thread else f"{runtime.role.value} tick",
        )
    runtime.interrupted = interrupt
    scope.finish(Outcome.INTERRUPTED, why)
    _log.warning(
        "run.interrupted",
        role=runtime.role.value,
        run_id=runtime.run_id,
        reason=why,
        claimed=[str(c.target) for c in held],
    )


def _holding(runtime: Runtime) -> list[str]:
    """What a run holds now, for an operator about to exit at once."""
    repo = runtime.settings.repo
    return [
        f"{claim.target} in {repo} (run {claim.run}, until {claim.until.strftime('%H:%M:%S UTC')})"
        for claim in runtime.claimer.held()
    ]


async def _shielded(step: Awaitable[object]) -> None:
    """Run a cleanup step to its end even if the caller is cancelled again meanwhile."""
    await asyncio.shield(asyncio.ensure_future(step))


async def _release_all(runtime: Runtime, scope: RunScope) -> None:
    """Release what the body still holds, saying honestly how the run ended."""
    failed = scope.outcome in _FAILED
    if scope.outcome is Outcome.INTERRUPTED:
        note = f"{scope.error}; nothing was changed"
    elif scope.fault == "operator":
        note = "stopped by a configuration or infrastructure problem; nothing was changed"
    elif failed:
        note = f"the run stopped ({scope.outcome.value if scope.outcome else 'error'})"
    else:
        note = "run ended"
    for claim in runtime.claimer.held():
        try:
            await runtime.claimer.release(
                claim, note, ok=not failed, withdraw=scope.fault == "operator"
            )
        except Exception as exc:  # the claim expires by itself; never hide the outcome
            _log.warning("run.release_failed", target=str(claim.target), error=repr(exc))
    _forget_holder(runtime)


_FAILED = frozenset(
    {
        Outcome.ERROR,
        Outcome.BUDGET_EXCEEDED,
        Outcome.LOST_CLAIM,
        Outcome.REJECTED,
        Outcome.CONFLICT,
        Outcome.INTERRUPTED,
    }
)
"""Outcomes whose release comment must not carry a success mark."""


async def _persist(runtime: Runtime, scope: RunScope) -> RunRecord | None:
    if scope.target is None and scope.pause is not None:
        runtime.paused = scope.pause
        pause = scope.pause
        await count_paused_run(
            runtime.memory, runtime.role, note=pause.note, until=pause.until, now=runtime.clock()
        )
        return None
    if scope.target is None:
        if scope.outcome is Outcome.INTERRUPTED:  # stopped before claiming: nothing to keep
            return None
        if scope.outcome not in (Outcome.ERROR, Outcome.PREFLIGHT_FAILED):
            await count_idle_run(runtime.memory, runtime.role, now=runtime.clock())
            return None
        # It could not even look for work, or not reach what it found (credentials, a
        # repository that is not there, the model endpoint, corrupt state): a failure a
        # cron job must see, never an idle tick, and never one of the agents' runs.
        _log.error("run.failed_before_claim", role=runtime.role.value, error=scope.error)
        scope.target = Target(kind=TargetKind.REPO, title=f"{runtime.role.value} tick")
        scope.finish(Outcome.PREFLIGHT_FAILED, scope.error)
    record = scope.record()
    await write_run_record(runtime.memory, record, now=runtime.clock())
    emit(
        "run.ended",
        outcome=record.outcome.value,
        tokens=record.usage.tokens,
        cost_usd=record.usage.cost_usd,
        llm_calls=record.usage.llm_calls,
        seconds=round(runtime.progress.seconds, 2),
        links=[u for u in (record.links.pr_url, *record.links.issue_urls) if u],
        error=record.error[:300],
    )
    _log.info(
        "run.recorded",
        role=runtime.role.value,
        run_id=runtime.run_id,
        outcome=record.outcome.value,
        target=f"{record.target.kind.value}#{record.target.number}",
    )
    return record


def _target_label(kind: TargetKind, key: int | str) -> str:
    """`issue #5`, `PR #7`, `repo`: the target as a progress line names it."""
    if kind is TargetKind.REPO:
        return "repo"
    return f"{'PR' if kind is TargetKind.PR else kind.value} #{key}"


class _GuardedWriter:
    """A `Writer` that checks the run still holds its claim before each write."""

    def __init__(self, scope: RunScope, write: Writer) -> None:
        self._scope = scope
        self._write = write

    async def __call__(
        self,
        write: Callable[Concatenate[GitHub, _P], Awaitable[_R]],
        /,
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R:
        self._scope.ensure_held()
        self._scope.commit()  # past the point of no return: a stop waits for the end
        return await self._write(write, *args, **kwargs)


_P = ParamSpec("_P")
_R = TypeVar("_R", bound=Receipt)
