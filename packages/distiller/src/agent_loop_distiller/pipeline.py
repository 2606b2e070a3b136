"""One distiller pass: ingest -> grade -> claim -> distill -> commit -> report. Flyte-free.

```python
async with open_runtime(settings, Role.DISTILLER) as runtime:
    result = await run_distiller_pass(runtime)      # or run_distiller_tick -> RunRecord | None
```

A pass first looks without writing anything: it collects unseen records (the ledger,
the open buckets) and, only when there are none, asks GitHub with one conditional
request whether any issue or PR opened or closed (a free `304` when not), regrading
read-only when something did. Nothing new means no claim, no model call and no write
beyond the idle counter (`PassKind.IDLE`).

Otherwise it claims the repository-level target `distiller` (a compare-and-swap on a git
ref, so two passes never write the context at once; the loser stops as `BUSY`),
re-reads under the claim, grades, and then either

- distills: the agent edits the lessons from the new builder/reviewer records and the
  decided grades; the run is recorded (`DISTILLED`, or `error`/`rejected`/
  `budget_exceeded` with nothing committed, so the ledger stays where it was); or
- keeps the books (`BOOKKEEPING`): grades, rollups and ledger (and the digest when the
  grades it shows changed) are committed without a model call and without a record,
  so a pass that only folds the distiller's own records never wakes the next one.

`DistillerMemory.commit` saves lessons and digest, then grades, then rollups, and only
then the ledger. The claim is renewed just before, so a pass that lost it commits nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import structlog

from agent_loop_common.memory import (
    DIGEST_PATH,
    LEDGER_PATH,
    LESSONS_PATH,
    ContextView,
    DistillerMemory,
    IngestBatch,
    IngestPolicy,
    grade_month,
    grade_path,
    read_rollups,
)
from agent_loop_common.records import (
    Attempt,
    Grade,
    Lesson,
    LessonBook,
    Outcome,
    RunRecord,
    Target,
    TargetKind,
)
from agent_loop_common.runtime import RunScope, Runtime, run_scoped
from agent_loop_distiller.digest import render_digest
from agent_loop_distiller.distill import distill
from agent_loop_distiller.errors import DistillationFailed, EditsRejected
from agent_loop_distiller.grading import GradingResult, follow_up
from agent_loop_distiller.lessons import Edit, LessonLimits, expire_stale, refresh_from_usage
from agent_loop_distiller.news import (
    Backoff,
    PassKind,
    failure_streak,
    learnable,
    plan_peek,
    retry_at,
)
from agent_loop_distiller.report import MemoryFile, ReportData

__all__ = [
    "CLAIM_KEY",
    "DistillerOptions",
    "PassResult",
    "run_distiller_pass",
    "run_distiller_tick",
]

_log = structlog.get_logger(__name__)

CLAIM_KEY = "distiller"
"""The repository-level claim target every distiller run competes for."""


@dataclass(frozen=True)
class DistillerOptions:
    """Knobs of a pass that are not deployment settings (defaults suit production)."""

    limits: LessonLimits = field(default_factory=LessonLimits)
    """Size bounds of the lesson book."""
    lesson_max_age: timedelta | None = None
    """Lessons unseen for longer expire; `None`: the record retention window."""
    housekeeping_buckets: int = 24
    """Commit the ledger without news once a pass has to scan more hourly buckets than this."""
    backoff: Backoff | None = None
    """Waits between failed distillations of the same records; `None`: the settings'
    back-off (`AGENT_LOOP_BACKOFF_BASE_MINUTES`, `AGENT_LOOP_BACKOFF_CAP_MINUTES`)."""
    report_days: int = 30
    """Days of rollups the report's Metrics tab covers."""
    prompt_chars: int = 60_000
    """Most characters of evidence in the distiller agent's prompt."""
    with_report: bool = True
    """Build the report's data after a pass that did work (reads the window's rollups)."""


@dataclass
class PassResult:
    """What one pass did (the record, when one was written, is the durable account)."""

    kind: PassKind = PassKind.IDLE
    record: RunRecord | None = None
    """The run's record (distillations and failed attempts only)."""
    ingested: int = 0
    """Records committed as ingested."""
    deferred: int = 0
    """Records newly left un-ingested (unknown major, invalid)."""
    grades_changed: list[Grade] = field(default_factory=list[Grade])
    """Grades written."""
    lessons: LessonBook | None = None
    """The lessons after the pass (when it read them)."""
    digest: str = ""
    """The digest written (empty when unchanged or not written)."""
    edits: list[Edit] = field(default_factory=list[Edit])
    """Lesson edits committed."""
    expired: list[Lesson] = field(default_factory=list[Lesson])
    """Lessons dropped as stale."""
    note: str = ""
    """Why the pass stopped or what it did, in one line."""
    report: ReportData | None = None
    """Data for the report, after a pass that did work."""


@dataclass
class _Work:
    """What the pass learned under the claim, for the commit and the report."""

    memory: DistillerMemory
    batch: IngestBatch
    context: ContextView
    grading: GradingResult
    book: LessonBook
    digest: str = ""


def _retention(runtime: Runtime) -> int:
    return runtime.settings.record_retention_days


def _backoff(runtime: Runtime, opts: DistillerOptions) -> Backoff:
    if opts.backoff is not None:
        return opts.backoff
    s = runtime.settings
    return Backoff(
        base=timedelta(minutes=s.backoff_base_minutes), cap=timedelta(minutes=s.backoff_cap_minutes)
    )


async def _collect(runtime: Runtime, now: datetime) -> tuple[DistillerMemory, IngestBatch]:
    memory = await DistillerMemory.open(
        runtime.memory, IngestPolicy(retention_days=_retention(runtime))
    )
    return memory, await memory.collect(now)


@dataclass
class _Peek:
    """The read-only look: what it found, and whether the pass stops there."""

    memory: DistillerMemory
    batch: IngestBatch
    stop: PassKind | None


async def _peek(runtime: Runtime, scope: RunScope, opts: DistillerOptions, now: datetime) -> _Peek:
    """Collect without writing; stop here (a kind), or go on and claim (`stop is None`)."""
    async with scope.stage("ingest"):
        memory, batch = await _collect(runtime, now)
    learn = learnable(batch.records)
    grades_changed = False
    if not learn and not batch.deferred:
        # One conditional listing; only when GitHub changed, a read-only regrade.
        async with scope.stage("grade"):
            grading = await follow_up(
                runtime.github, runtime.memory, [], now, retention_days=_retention(runtime)
            )
        grades_changed = bool(grading.changed)
    stop = plan_peek(
        learn=len(learn),
        deferred=len(batch.deferred),
        buckets_scanned=batch.buckets_scanned,
        grades_changed=grades_changed,
        housekeeping_buckets=opts.housekeeping_buckets,
        retry=retry_at(failure_streak(batch.records), _backoff(runtime, opts)),
        now=now,
    )
    return _Peek(memory, batch, stop)


async def _under_claim(
    runtime: Runtime, peek: _Peek, now: datetime
) -> tuple[DistillerMemory, IngestBatch]:
    """The batch to commit: the look's, unless another pass moved the ledger meanwhile.

    Records written since the look are not lost: they are not in the ledger's `seen`,
    so the next pass collects them.
    """
    fresh = await DistillerMemory.open(
        runtime.memory, IngestPolicy(retention_days=_retention(runtime))
    )
    if fresh.ledger == peek.memory.ledger:
        return peek.memory, peek.batch
    return fresh, await fresh.collect(now)


async def _distill(
    runtime: Runtime, scope: RunScope, work: _Work, opts: DistillerOptions, now: datetime
) -> list[Edit]:
    """Run the agent on the evidence; sets the record's attempt and trace."""
    records = learnable(work.batch.records)
    scope.target = Target(kind=TargetKind.REPO, title="distil lessons")
    scope.lesson_ids = [lesson.id for lesson in work.context.lessons.lessons]
    before = runtime.usage.total_tokens
    async with scope.stage("distill"):
        try:
            result = await distill(
                call_llm=runtime.call_llm("agent"),
                model=runtime.settings.model,
                book=work.book,
                records=records,
                decided=work.grading.decided,
                now=now,
                max_turns=runtime.settings.max_turns("distiller"),
                limits=opts.limits,
                prompt_chars=opts.prompt_chars,
            )
        except DistillationFailed as exc:
            scope.trace = exc.trace
            scope.attempts = [
                Attempt(
                    number=1,
                    verified=False,
                    notes=str(exc),
                    tokens=runtime.usage.total_tokens - before,
                )
            ]
            raise
    scope.trace = result.run.trace
    scope.attempts = [
        Attempt(
            number=1,
            verified=True,
            notes=result.summary,
            staged_paths=[f"{e.op}:{e.lesson_id}" for e in result.edits],
            tokens=runtime.usage.total_tokens - before,
        )
    ]
    work.book = result.book
    return result.edits


async def _commit(runtime: Runtime, work: _Work) -> bool:
    """Save what changed, ledger last; returns whether the context was written."""
    claim = next(c for c in runtime.claimer.held() if c.target.key == CLAIM_KEY)
    await runtime.claimer.extend(claim)  # raises ClaimLost: then nothing is written
    lessons_changed = work.book != work.context.lessons
    digest_changed = work.digest != work.context.digest
    await work.memory.commit(
        work.batch,
        lessons=work.book if lessons_changed else None,
        digest=work.digest if digest_changed else None,
        grades=work.grading.changed,
    )
    return lessons_changed or digest_changed


async def _body(runtime: Runtime, scope: RunScope, opts: DistillerOptions, out: PassResult) -> None:
    now = runtime.clock()
    peek = await _peek(runtime, scope, opts, now)
    if peek.stop is not None:
        out.kind = peek.stop
        idle = peek.stop is PassKind.IDLE
        out.note = "nothing new" if idle else "waiting after failed attempts"
        return
    async with scope.stage("claim"):
        claim = await runtime.claimer.claim("repo", CLAIM_KEY)
    if claim is None:
        out.kind, out.note = PassKind.BUSY, "another distiller run holds the claim"
        return
    async with scope.stage("ingest"):
        memory, batch = await _under_claim(runtime, peek, now)
        context = await memory.context()
    records = learnable(batch.records)
    async with scope.stage("grade"):
        grading = await follow_up(
            runtime.github, runtime.memory, records, now,
            retention_days=_retention(runtime), force=True,
        )  # fmt: skip
    book = refresh_from_usage(context.lessons, records)
    max_age = opts.lesson_max_age or timedelta(days=_retention(runtime))
    book, out.expired = expire_stale(book, now, max_age)
    work = _Work(memory, batch, context, grading, book)
    out.lessons = context.lessons
    retry = retry_at(failure_streak(batch.records), _backoff(runtime, opts))
    if (records or grading.decided) and (retry is None or now >= retry):
        out.kind = PassKind.DISTILLED
        try:
            out.edits = await _distill(runtime, scope, work, opts, now)
        except DistillationFailed as exc:
            out.kind, out.note = PassKind.FAILED, str(exc)
            budget = runtime.usage.exceeded
            if budget:
                scope.finish(Outcome.BUDGET_EXCEEDED, budget)
            else:
                rejected = isinstance(exc, EditsRejected)
                scope.finish(Outcome.REJECTED if rejected else Outcome.ERROR, str(exc))
            await _report(runtime, scope, opts, out, work, now)
            return
    elif grading.changed or batch.deferred or batch.buckets_scanned > opts.housekeeping_buckets:
        out.kind = PassKind.BOOKKEEPING
    else:
        out.kind, out.note = PassKind.IDLE, "nothing new under the claim"
        return
    work.digest = render_digest(work.book, grading.current, runtime.settings.digest_token_budget)
    async with scope.stage("commit"):
        wrote_context = await _commit(runtime, work)
    out.ingested = len(batch.records)
    out.deferred = len(batch.deferred)
    out.grades_changed = grading.changed
    out.lessons = work.book
    out.digest = work.digest if wrote_context else ""
    out.note = (
        f"ingested {out.ingested} record(s), {len(out.edits)} lesson edit(s), "
        f"{len(grading.changed)} grade(s) changed"
    )
    if out.kind is PassKind.DISTILLED:
        scope.finish(Outcome.DISTILLED)
        await _report(runtime, scope, opts, out, work, now)
    else:
        _log.info("distiller.bookkeeping", note=out.note)


async def _report(
    runtime: Runtime,
    scope: RunScope,
    opts: DistillerOptions,
    out: PassResult,
    work: _Work,
    now: datetime,
) -> None:
    """Gather the report's data (the rendering is pure and happens in the task)."""
    if not opts.with_report:
        return
    async with scope.stage("report"):
        today = now.astimezone(UTC).date()
        rollups = await read_rollups(
            runtime.memory, today - timedelta(days=opts.report_days - 1), today
        )
        own = scope.record()
        keys = runtime.memory.keys
        files = [
            MemoryFile(keys.context, DIGEST_PATH, work.digest or work.context.digest),
            MemoryFile(keys.context, LESSONS_PATH, work.book.model_dump_json(indent=2)),
            MemoryFile(keys.ledger, LEDGER_PATH, work.memory.ledger.model_dump_json(indent=2)),
        ]
        files += [
            MemoryFile(
                keys.grades(grade_month(g)), grade_path(g.target), g.model_dump_json(indent=2)
            )
            for g in out.grades_changed
        ]
        ingested = sorted(work.batch.records, key=lambda r: r.finished_at, reverse=True)
        out.report = ReportData(
            generated_at=now,
            repo=runtime.settings.repo,
            book=work.book,
            rollups=rollups,
            grades=work.grading.current,
            runs=[own, *ingested],
            edits=out.edits,
            expired=out.expired,
            memory=files,
            note=out.note,
        )


async def run_distiller_pass(
    runtime: Runtime, options: DistillerOptions | None = None
) -> PassResult:
    """Run one pass; never raises (the outcome is in the result and the record)."""
    opts = options or DistillerOptions()
    out = PassResult()

    async def body(scope: RunScope) -> None:
        await _body(runtime, scope, opts, out)

    out.record = await run_scoped(runtime, body)
    if out.record is not None and out.record.outcome is not Outcome.DISTILLED:
        out.kind = PassKind.FAILED
        out.note = out.note or out.record.error
    if out.report is not None and out.record is not None:
        runs = [out.record, *out.report.runs[1:]]
        out.report = replace(out.report, runs=runs)
    return out


async def run_distiller_tick(
    runtime: Runtime, options: DistillerOptions | None = None
) -> RunRecord | None:
    """The contract's entry point: one pass, its record (or `None` when it recorded none)."""
    return (await run_distiller_pass(runtime, options)).record
