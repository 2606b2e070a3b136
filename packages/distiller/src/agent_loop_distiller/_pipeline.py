"""One distiller tick: ingest -> grade -> claim -> distill -> commit -> report. Flyte-free.

```python
async with open_runtime(settings, Role.DISTILLER) as runtime:
    result = await run_distiller_tick(runtime)      # or run_distiller_tick -> RunRecord | None
```

A tick first looks without writing anything: it collects unseen records (the ledger,
the open buckets) and, only when there are none, asks GitHub with one conditional
request whether any issue or PR opened or closed (a free `304` when not), regrading
read-only when something did. Nothing new means no claim, no model call and no write
beyond the idle counter (`TickKind.IDLE`).

Otherwise it claims the repository-level target `distiller` (a compare-and-swap on a git
ref, so two ticks never write the context at once; the loser stops as `BUSY`),
re-reads under the claim, grades, and then either

- distills: the agent edits the lessons from the new builder/reviewer records and the
  decided grades; the run is recorded (`DISTILLED`, or `error`/`rejected`/
  `budget_exceeded` with nothing committed, so the ledger stays where it was); or
- replays (`REPLAYED`, `AGENT_LOOP_LESSON_REPLAY=on` only): lessons still proving were
  replayed on mined instances with and without each (`_replay`); their pairs and the
  decisions they led to are committed without a distillation, and the run recorded; or
- keeps the books (`BOOKKEEPING`): grades, rollups and ledger (and the digest when the
  grades it shows changed) are committed without a model call and without a record,
  so a tick that only folds the distiller's own records never wakes the next one.
  A maintainer's edit of the lessons section (`AGENT_LOOP_LESSONS_PR=on`) is folded in
  this way too, on a tick that found nothing else new but saw the lessons file move.

`DistillerMemory.commit` saves lessons and digest, then grades, then rollups, and only
then the ledger. The claim is renewed just before, so a tick that lost it commits nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import structlog

from agent_loop_common.github import BranchHead, GitHubError
from agent_loop_common.memory import (
    MemoryLocation,
    archive_lessons,
    read_operator_edits,
    write_general_lessons,
)
from agent_loop_common.progress import RunProgress, run_progress
from agent_loop_common.records import (
    Attempt,
    LessonBook,
    Outcome,
    RetiredLesson,
    Target,
    TargetKind,
    TraceStep,
    Visibility,
)
from agent_loop_common.runtime import (
    RunScope,
    Runtime,
    call_task_by_name,
    preflight_model,
    probe_model,
    run_scoped,
    stop_requested,
)
from agent_loop_common.settings import ConfigError
from agent_loop_common.trust import Trust
from agent_loop_distiller._act import act_on_diagnoses
from agent_loop_distiller._attempt import distill
from agent_loop_distiller._candidates import backoff_of, look, retention_of, under_claim
from agent_loop_distiller._digest import render_digest
from agent_loop_distiller._effect import EffectBook
from agent_loop_distiller._errors import DistillationFailed, EditsRejected
from agent_loop_distiller._flow_back import apply_flow_back, merge_ignored, read_flow_back
from agent_loop_distiller._grading import follow_up
from agent_loop_distiller._judge import ModelAsk, judge_compliance
from agent_loop_distiller._lessons import Edit
from agent_loop_distiller._measure import measure_effects
from agent_loop_distiller._publish import (
    lessons_branch,
    lessons_moved,
    sync_lessons_pull,
)
from agent_loop_distiller._replay import (
    REPLAY_TASK,
    Replayed,
    plan_replays,
    read_replay_instances,
    run_replays,
    with_replays,
)
from agent_loop_distiller._report._gather import gather_report
from agent_loop_distiller._select import TickKind, failure_streak, learnable, retry_at
from agent_loop_distiller._state import CLAIM_KEY, DistillerOptions, TickResult, Work
from agent_loop_distiller._upkeep import (
    apply_operator_edits,
    expire_stale,
    expired_record,
    mark_citations,
    refresh_from_usage,
    stamp_origin,
)

__all__ = [
    "CLAIM_KEY",
    "DistillerOptions",
    "TickResult",
    "run_distiller_tick",
]

_log = structlog.get_logger(__name__)


async def _distill(
    runtime: Runtime, scope: RunScope, work: Work, opts: DistillerOptions, now: datetime
) -> list[Edit]:
    """Run the agent on the evidence; sets the record's attempt and trace."""
    records = learnable(work.batch.records)
    scope.target = Target(kind=TargetKind.REPO, title="distill lessons")
    preflight_model(runtime.settings)
    await probe_model(runtime.settings)  # a wrong endpoint or key: named, not retried 4 times
    scope.lesson_ids = [lesson.id for lesson in work.context.lessons.lessons]
    before = runtime.usage.total_tokens
    async with scope.stage("distill"):
        try:
            result = await distill(
                call_llm=runtime.call_llm("agent"),
                model=runtime.agent_model(),
                book=work.book,
                records=records,
                decided=work.grading.decided,
                now=now,
                max_turns=runtime.settings.max_turns("distiller"),
                limits=opts.limits,
                prompt_chars=opts.prompt_chars,
                repo=runtime.settings.repo,
                visibility=work.visibility,
                measured=frozenset(
                    x for x, e in (work.effects or EffectBook()).lessons.items() if e.applicable
                ),
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
    work.retired += result.retired
    return result.edits


def _asked(ask: ModelAsk | None, replayed: Replayed | None) -> list[TraceStep]:
    """What the tick asked before the distiller agent ran: its model questions and its
    replays (one step per pair), ahead of the agent's steps in the run's record."""
    return [*(ask.steps if ask else []), *(replayed.steps if replayed else [])]


def _model_ask(runtime: Runtime) -> ModelAsk | None:
    """The distiller's model for single-answer questions, or `None` when it is unusable
    here (the distillation then fails with the reason; the diagnosis only flags)."""
    try:
        preflight_model(runtime.settings)
    except ConfigError as exc:
        _log.warning("distiller.no_model_for_questions", error=str(exc))
        return None
    return ModelAsk(runtime.call_llm("agent"), runtime.agent_model())


async def _replay(
    runtime: Runtime, book: LessonBook, stored: LessonBook, now: datetime
) -> Replayed:
    """Replay the lessons still proving on the repository's mined instances, with and
    without each (`AGENT_LOOP_LESSON_REPLAY=on`), by calling the eval's task by name,
    within the tick's budget of model calls (`_replay`)."""
    settings = runtime.settings
    instances = read_replay_instances(settings.eval_instances, settings.repo)
    plan = plan_replays(book, stored, instances, max_instances=settings.lesson_replay_max_instances)

    async def call(instance: Mapping[str, Any], lessons: str) -> Mapping[str, Any]:
        # The build's progress is the replay's, not the distiller run's: its lines read
        # `replay stage_file ...`, and the distiller's own events stay its own.
        side = "without lessons" if lessons == "off" else f"with {lessons}"
        run = RunProgress(role="replay", target=f"{instance.get('instance_id', '?')} {side}")
        with run_progress(run):
            return await call_task_by_name(
                REPLAY_TASK, instance=instance, lessons=lessons, model=""
            )

    replayed = await run_replays(
        call, plan, budget_calls=settings.lesson_replay_model_calls, now=now,
        stopping=lambda: stop_requested() is not None,
    )  # fmt: skip
    if not instances:
        replayed.stopped = f"no mined instance of {settings.repo} in {settings.eval_instances}"
    _log.info("distiller.replays", pairs=replayed.count, planned=replayed.planned,
              calls=replayed.llm_calls, stopped=replayed.stopped or None)  # fmt: skip
    return replayed


async def _visibility(runtime: Runtime, base: BranchHead | None) -> Visibility:
    """The repository's visibility, recorded on its lessons (unknown if GitHub says no);
    `base`: the default branch as the tick already read it, which says it (no request)."""
    if base is not None:
        return "private" if base.private else "public"
    try:
        return "private" if (await runtime.github.repository()).private else "public"
    except GitHubError as exc:
        _log.warning("distiller.visibility_unknown", error=str(exc))
        return ""


async def _flow_back(
    runtime: Runtime, trust: Trust, book: LessonBook, now: datetime, out: TickResult
) -> tuple[LessonBook, list[RetiredLesson]]:
    """People's edits of the lessons section that GitHub vouches for a trusted person,
    folded in (`AGENT_LOOP_LESSONS_PR=on` only): on the default branch (merged lessons)
    and on the pull request's own branch (a review edit before the merge). `trust` is
    the tick's (the grading's permission look-ups are reused). GitHub failing leaves the
    book as it was."""
    settings = runtime.settings
    retired: list[RetiredLesson] = []
    try:
        out.lessons_base = base = await runtime.github.default_branch()
        lessons = lessons_branch(settings.branch_prefix)
        # The default branch by omission (`None`): the same conditional listing as the
        # look's `lessons_moved`, so an unchanged history is a free 304 here too.
        for branch, name in ((None, base.name), (lessons, lessons)):
            flow = await read_flow_back(runtime.github, trust, settings.lessons_file, branch, name)
            out.lessons_edits_ignored = merge_ignored(out.lessons_edits_ignored, flow.ignored)
            book, gone = apply_flow_back(book, flow, now)
            retired += gone
    except GitHubError as exc:
        _log.warning("distiller.lessons_flow_back_failed", error=str(exc))
    return book, retired


async def _sync_pull(runtime: Runtime, work: Work, out: TickResult) -> None:
    """Keep the lessons pull request in step (`AGENT_LOOP_LESSONS_PR=on` only)."""
    try:
        out.lessons_pull = await sync_lessons_pull(
            runtime.github,
            book=work.book,
            effects=work.effects or EffectBook(),
            path=runtime.settings.lessons_file,
            branch_prefix=runtime.settings.branch_prefix,
            base=out.lessons_base,
            ignored=out.lessons_edits_ignored,
        )
        if out.lessons_pull.action in ("opened", "updated"):
            # This tick moved the lessons branch: look at it again now, so the next tick's
            # conditional look answers 304 instead of waking for the tick's own write.
            settings = runtime.settings
            await lessons_moved(runtime.github, settings.lessons_file, settings.branch_prefix)
    except GitHubError as exc:
        _log.warning("distiller.lessons_pull_failed", error=str(exc))


async def _commit(runtime: Runtime, work: Work) -> bool:
    """Save what changed, ledger last; returns whether the context was written."""
    claim = next(c for c in runtime.claimer.held() if c.target.key == CLAIM_KEY)
    await runtime.claimer.extend(claim)  # raises ClaimLost: then nothing is written
    lessons_changed = work.book != work.context.lessons or work.context.lessons_corrupt
    digest_changed = work.digest != work.context.digest
    await work.memory.commit(
        work.batch,
        lessons=work.book if lessons_changed else None,
        digest=work.digest if digest_changed else None,
        grades=work.grading.changed,
        effects=work.effects,
    )
    await archive_lessons(runtime.memory, work.retired)
    settings = runtime.settings
    shared = MemoryLocation.shared_from_settings(settings, runtime.memory.root)
    listed = settings.repo.lower() in {s.lower() for s in settings.share_lessons_from}
    if shared is not None and lessons_changed and listed:
        await write_general_lessons(shared, runtime.memory, work.book)
    return lessons_changed or digest_changed


async def _body(runtime: Runtime, scope: RunScope, opts: DistillerOptions, out: TickResult) -> None:
    now = runtime.clock()
    seen = await look(runtime, scope, opts, now)
    if seen.stop is not None:
        out.kind = seen.stop
        idle = seen.stop is TickKind.IDLE
        out.note = "nothing new" if idle else "waiting after failed attempts"
        return
    async with scope.stage("claim"):
        # The claim guards memory, which bookkeeping writes without a model: the model is
        # checked only before the distiller agent runs.
        # Replays run builds for minutes: then the claim is renewed while the tick works.
        claim = await scope.take(
            TargetKind.REPO, CLAIM_KEY, heartbeat=runtime.settings.lesson_replay
        )
    if claim is None:
        out.kind, out.note = TickKind.BUSY, "another distiller run holds the claim"
        return
    async with scope.stage("ingest"):
        memory, batch = await under_claim(runtime, seen, now)
        context = await memory.context()
    records = learnable(batch.records)
    async with scope.stage("grade"):
        trust = Trust(
            runtime.github,
            minimum=runtime.settings.trusted_min_permission,
            agent_login=await runtime.claimer.agent_login(),
        )
        grading = await follow_up(
            runtime.github, runtime.memory, records, now,
            retention_days=retention_of(runtime), force=True, trust=trust,
            repo=runtime.settings.repo,
        )  # fmt: skip
    book = mark_citations(refresh_from_usage(context.lessons, records), records, now)
    book, retired = apply_operator_edits(book, await read_operator_edits(runtime.memory), now)
    flowed = False
    if runtime.settings.lessons_pr:
        async with scope.stage("lessons_pr"):
            unedited = book
            book, edited = await _flow_back(runtime, trust, book, now, out)
        retired += edited
        flowed = book != unedited
    max_age = opts.lesson_max_age or timedelta(days=retention_of(runtime))
    book, out.expired = expire_stale(book, now, max_age)
    retired += [expired_record(lesson, now, max_age) for lesson in out.expired]
    visibility = await _visibility(runtime, out.lessons_base)
    book = stamp_origin(book, runtime.settings.repo, visibility)
    retry = (
        None
        if opts.retry_now
        else retry_at(failure_streak(batch.records), backoff_of(runtime, opts))
    )
    if (records or grading.decided) and retry is not None and now < retry:
        # Committing now would move the ledger past records nobody learned from (and a
        # measurement now would be thrown away with its model questions).
        out.kind, out.note = TickKind.BACKED_OFF, "waiting after failed attempts"
        out.lessons = context.lessons
        return
    if runtime.settings.lesson_replay:
        async with scope.stage("replay"):
            out.replayed = await _replay(runtime, book, context.lessons, now)
        book = with_replays(book, out.replayed)
    replayed = out.replayed.pairs if out.replayed is not None else {}
    async with scope.stage("measure"):
        effects = await memory.read_effects(EffectBook) or EffectBook()
        ask = _model_ask(runtime) if records else None
        out.judged = await judge_compliance(
            ask, effects, book, records, runtime.settings.compliance_judgments
        )
        out.measured = measure_effects(
            effects, book, records, now, judgments=out.judged.answers, grades=grading.current,
            replayed=replayed,
        )  # fmt: skip
        out.acted = await act_on_diagnoses(
            ask, effects, out.measured, now, limits=opts.limits, max_rewords=opts.max_rewords,
            repo=runtime.settings.repo, visibility=visibility,
        )  # fmt: skip
    book = out.acted.book
    retired += out.measured.retired + out.acted.retired
    work = Work(memory, batch, context, grading, book, retired=retired, visibility=visibility)
    work.effects = effects
    out.lessons = context.lessons
    if records or grading.decided:
        out.kind = TickKind.DISTILLED
        try:
            edits = await _distill(runtime, scope, work, opts, now)
            out.edits = [*(out.acted.edits if out.acted else []), *edits]
        except DistillationFailed as exc:
            scope.trace = [*_asked(ask, out.replayed), *scope.trace]
            out.kind, out.note = TickKind.FAILED, str(exc)
            budget = runtime.usage.exceeded
            if budget:
                scope.finish(Outcome.BUDGET_EXCEEDED, budget)
            else:
                rejected = isinstance(exc, EditsRejected)
                scope.finish(Outcome.REJECTED if rejected else Outcome.ERROR, str(exc))
            await gather_report(runtime, scope, opts, out, work, now, committed=False)
            return
        scope.trace = [*_asked(ask, out.replayed), *scope.trace]  # what the model was asked
    elif replayed:  # the pairs are kept on their lessons; the replays' run is recorded
        out.kind = TickKind.REPLAYED
    elif (
        grading.changed
        or batch.deferred
        or batch.buckets_scanned > opts.housekeeping_buckets
        or flowed
    ):
        out.kind = TickKind.BOOKKEEPING
    elif seen.lessons_moved:
        # Only the lessons file or its pull request moved, and nothing of it flows back
        # (the agents' own write, or an edit by someone not trusted): keep the pull
        # request in step with memory as it is, which puts an untrusted edit back.
        out.kind, out.note = TickKind.IDLE, "lessons checked: nothing to fold in"
        work.book = context.lessons
        async with scope.stage("lessons_pr"):
            scope.commit()  # a branch push and its pull request: a stop waits for both
            await _sync_pull(runtime, work, out)
        return
    else:
        out.kind, out.note = TickKind.IDLE, "nothing new under the claim"
        return
    work.digest = render_digest(work.book, grading.current, runtime.settings.digest_token_budget)
    async with scope.stage("commit"):
        scope.commit()  # memory saves in order, then the lessons PR: a stop waits for the end
        wrote_context = await _commit(runtime, work)
    if runtime.settings.lessons_pr:
        async with scope.stage("lessons_pr"):
            await _sync_pull(runtime, work, out)
    out.ingested = len(batch.records)
    out.deferred = len(batch.deferred)
    out.grades_changed = grading.changed
    out.lessons = work.book
    out.digest = work.digest if wrote_context else ""
    out.note = (
        f"ingested {out.ingested} record(s), {len(out.edits)} lesson edit(s), "
        f"{len(grading.changed)} grade(s) changed"
    ) + _replay_note(out)
    if out.kind is TickKind.REPLAYED:
        scope.target = Target(kind=TargetKind.REPO, title="replay lessons")
        scope.trace = _asked(None, out.replayed)
        scope.attempts = [Attempt(number=1, verified=True, notes=out.note)]
    if out.kind in (TickKind.DISTILLED, TickKind.REPLAYED):
        scope.finish(Outcome.DISTILLED)
        await gather_report(runtime, scope, opts, out, work, now, committed=True)
    else:
        _log.info("distiller.bookkeeping", note=out.note)


def _replay_note(out: TickResult) -> str:
    """What the tick's replays did, for its note: pairs, model calls, decisions."""
    replayed = out.replayed
    if replayed is None or not replayed.count:
        return ""
    note = (
        f"; replayed {replayed.count} pair(s) of {len(replayed.pairs)} lesson(s) "
        f"({replayed.llm_calls} model calls)"
    )
    changed = out.measured.changed if out.measured is not None else {}
    decided = [f"{x} {changed[x].value}" for x in replayed.pairs if x in changed]
    return note + (f": {', '.join(decided)}" if decided else "")


async def run_distiller_tick(
    runtime: Runtime, options: DistillerOptions | None = None
) -> TickResult:
    """Run one tick; never raises (the outcome is in the result and the record)."""
    opts = options or DistillerOptions()
    out = TickResult()

    async def body(scope: RunScope) -> None:
        await _body(runtime, scope, opts, out)

    out.record = await run_scoped(runtime, body)
    if out.record is not None and out.record.outcome is Outcome.INTERRUPTED:
        out.kind, out.note = TickKind.INTERRUPTED, out.record.error
    elif out.record is None and runtime.interrupted is not None:
        out.kind = TickKind.INTERRUPTED
        out.note = f"stopped by the operator ({runtime.interrupted.name}) before it claimed"
    elif out.record is not None and out.record.outcome is not Outcome.DISTILLED:
        out.kind = TickKind.FAILED
        out.note = out.note or out.record.error
    if out.report is not None and out.record is not None:
        runs = [out.record, *out.report.runs[1:]]
        out.report = replace(out.report, runs=runs)
    return out
