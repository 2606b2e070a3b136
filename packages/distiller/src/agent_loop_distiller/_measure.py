"""One tick's measurement: fold new records into the effect state, decide, act. Pure.

```python
result = measure_effects(effects, book, records, now, policy)   # effects is updated in place
book = result.book                                      # states set, decided lessons out
```

Each record is counted once (`EffectBook.recent_run_ids`); its outcomes are graded once
and its applicable exposures are grouped per lesson, so each touched lesson's runs are
folded in one call (`_effect.fold`); compliance is taken from the run's trace (or, for
a lesson that names nothing, the model's judgments bought for it) and token cost from
the lesson's text. The outcomes of the run's pull request (merged, threads, first CI,
revert, review fix) are decided later, one by one: `fold_pull_outcomes` adds each to
the same run's arm once decided (`fold(..., late=True)`) and remembers which (run,
metric) it folded, so no tick or restart folds one twice. Then every touched lesson is
decided
again; a lesson that became `no_effect` or `harmful` leaves the book, kept as a
`RetiredLesson` in its effect state with the diagnosis as the reason, and a `proven`
one stays with its state set (runs then hold it out less often). A lesson's replay pairs
(`Lesson.replay`, `AGENT_LOOP_LESSON_REPLAY=on`) enter every decision about it through
their own e-values (`_effect.decide`). Cost: proportional to
the new records times their exposures, whatever the history; the state holds the
book's lessons and at most 50 departed ones (`_effect.forget_departed`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from agent_loop_common.records import (
    Grade,
    GradeState,
    Lesson,
    LessonBook,
    LessonState,
    RetiredLesson,
    Role,
    RunRecord,
    TargetKind,
    WorkKind,
)
from agent_loop_distiller._diagnosis import (
    Diagnosis,
    count_use,
    cues_of,
    diagnose,
    followed,
    trace_text,
)
from agent_loop_distiller._digest import estimate_tokens
from agent_loop_distiller._effect import (
    EffectBook,
    EffectPolicy,
    Run,
    decide,
    fold,
    forget_departed,
    graded_of,
    remember_runs,
)
from agent_loop_distiller._outcomes import PR_METRICS, outcomes_of, pr_outcomes

__all__ = ["Measured", "fold_pull_outcomes", "measure_effects", "replay_tally", "stratum_of"]


@dataclass
class Measured:
    """What one tick's measurement did."""

    book: LessonBook
    """The lessons after it: states updated, retired lessons removed."""
    counted: int = 0
    """Records newly counted."""
    changed: dict[str, LessonState] = field(default_factory=dict[str, LessonState])
    """Lessons whose state changed, and to what."""
    retired: list[RetiredLesson] = field(default_factory=list[RetiredLesson])
    """Lessons retired for their effect (also kept in the effect state)."""
    diagnoses: dict[str, Diagnosis] = field(default_factory=dict[str, Diagnosis])
    """The diagnosis of every lesson touched this tick."""


def stratum_of(record: RunRecord) -> str:
    """The record's stratum: repository and work kind."""
    return _stratum(record.repo, record.work_kind)


def _stratum(repo: str, kind: WorkKind | None) -> str:
    return f"{repo or '-'}|{kind.value if kind is not None else 'unknown'}"


def replay_tally(lesson: Lesson) -> tuple[int, int]:
    """The lesson's discordant replay pairs: `(resolved only with it, only without)`."""
    return (lesson.replay.wins, lesson.replay.losses) if lesson.replay else (0, 0)


def _settled(grade: Grade) -> bool:
    """Decided, and a merge's revert check decided too (or impossible: no merge sha)."""
    if grade.state is GradeState.OPEN:
        return False
    return grade.state is not GradeState.MERGED or grade.reverted is not None or not grade.merge_sha


def fold_pull_outcomes(
    effects: EffectBook,
    lessons: dict[str, Lesson],
    grades: Iterable[Grade],
    policy: EffectPolicy,
) -> set[str]:
    """Fold the newly decided PR outcomes of graded builder runs; the lessons touched.

    `grades` are every grade still followed (the grading window): a run whose grade is
    no longer among them is never read again, so its fold marks are dropped, which
    keeps the state bounded by the window, not the history.
    """
    runs: dict[str, list[Run]] = {}
    live: set[str] = set()
    for grade in grades:
        if grade.target.kind is not TargetKind.PR or not grade.run_id or not grade.exposures:
            continue
        live.add(grade.run_id)
        done = effects.pull_folded.get(grade.run_id, [])
        if len(done) == len(PR_METRICS):
            continue  # every PR-level outcome of the run is settled: nothing to compute
        new = {
            metric: y
            for metric, y in pr_outcomes(grade).binary().items()
            if y is not None and metric not in done
        }
        if _settled(grade):
            # Nothing more can be decided (the first decision is final): the metrics
            # left undecided (no CI, an excused close) are marked settled too.
            effects.pull_folded[grade.run_id] = [
                *done, *new, *(m for m in PR_METRICS if m not in done and m not in new)
            ]  # fmt: skip
        elif new:
            effects.pull_folded[grade.run_id] = [*done, *new]
        if not new:
            continue
        graded = graded_of(new)
        stratum = _stratum(grade.repo, grade.work_kind)
        for e in grade.exposures:
            if e.applicable and (e.shown or e.held_out):
                runs.setdefault(e.lesson_id, []).append((stratum, e.shown, e.holdout, graded))
    for lesson_id, lesson_runs in runs.items():
        effect = effects.effect(lesson_id)
        lesson = lessons.get(lesson_id)
        if lesson is not None:
            effect.metric = lesson.metric
        fold(effect, lesson_runs, policy, late=True)
    for run_id in [r for r in effects.pull_folded if r not in live]:
        del effects.pull_folded[run_id]
    return set(runs)


class _Compliance:
    """Counts one tick's compliance into the lessons' effect state: from the trace for
    the lessons that name something to check, from the model's judgments (when one was
    bought) for those that do not."""

    def __init__(
        self, effects: EffectBook, book: LessonBook, judgments: Mapping[tuple[str, str], bool]
    ) -> None:
        self.effects = effects
        self.cues = {x.id: c for x in book.lessons if (c := cues_of(x))}
        self.tokens = {x.id: estimate_tokens(x.text) + 4 for x in book.lessons}
        self.judgments = judgments
        self._text = ("", "")
        """(run id, its `trace_text`): the trace is rendered once per run, not per lesson."""

    def count(self, lesson_id: str, shown: bool, record: RunRecord, kind: str) -> None:
        cues = self.cues.get(lesson_id)
        if cues:
            if self._text[0] != record.run_id:
                self._text = (record.run_id, trace_text(record.trace))
            used: bool | None = followed(cues, self._text[1])
        elif not self.judgments:
            return
        else:
            used = self.judgments.get((lesson_id, record.run_id))
        if used is not None:
            count_use(self.effects.effect(lesson_id), kind, shown, used, by_model=not cues)


def measure_effects(
    effects: EffectBook,
    book: LessonBook,
    records: Iterable[RunRecord],
    now: datetime,
    policy: EffectPolicy | None = None,
    judgments: Mapping[tuple[str, str], bool] | None = None,
    grades: Iterable[Grade] | None = None,
    replayed: Iterable[str] = (),
) -> Measured:
    """Count the new records' exposures and the newly decided PR outcomes of `grades`
    (every grade followed; `None`: none this tick), decide, and retire what the
    evidence retires.

    `judgments` (lesson id, run id) -> followed: the model's compliance judgments for
    lessons that name nothing to look for in a trace (`_judge.judge_compliance`).
    `replayed`: lessons whose replay evidence (`Lesson.replay`) grew this tick; they
    are decided again too. Every decision takes a lesson's replay pairs into account.
    """
    rules = policy or EffectPolicy()
    lessons = {x.id: x for x in book.lessons}
    seen = set(effects.recent_run_ids)
    new_ids: list[str] = []
    candidates: dict[str, int] = {}
    runs: dict[str, list[Run]] = {}
    compliance = _Compliance(effects, book, judgments or {})
    for record in records:
        if record.role is Role.DISTILLER or not record.exposures or record.run_id in seen:
            continue
        seen.add(record.run_id)
        new_ids.append(record.run_id)
        graded = graded_of(outcomes_of(record).binary())
        stratum = stratum_of(record)
        kind = record.work_kind.value if record.work_kind is not None else "unknown"
        for e in record.exposures:
            lesson_id = e.lesson_id
            candidates[lesson_id] = candidates.get(lesson_id, 0) + 1
            if not e.applicable or not (e.shown or e.held_out):
                continue
            runs.setdefault(lesson_id, []).append((stratum, e.shown, e.holdout, graded))
            compliance.count(lesson_id, e.shown, record, kind)
    for lesson_id, count in candidates.items():
        effect = effects.touch(lesson_id)
        lesson = lessons.get(lesson_id)
        if lesson is not None:
            effect.metric = lesson.metric
        effect.candidates += count
        shown_before = effect.shown
        fold(effect, runs.get(lesson_id, ()), rules)
        effect.tokens_shown += compliance.tokens.get(lesson_id, 0) * (effect.shown - shown_before)
    touched = set(candidates)
    for lesson_id in replayed:
        if lesson_id in lessons:
            effect = effects.touch(lesson_id)
            effect.metric = lessons[lesson_id].metric
            touched.add(lesson_id)
    if grades is not None:
        touched |= fold_pull_outcomes(effects, lessons, grades, rules)
    remember_runs(effects, new_ids)
    out = Measured(book=book, counted=len(new_ids))
    kept: list[Lesson] = []
    for lesson in book.lessons:
        effect = effects.lessons.get(lesson.id)
        if effect is None or lesson.id not in touched:
            kept.append(lesson)
            continue
        state = decide(effect, rules, replay_tally(lesson))
        if state is not effect.state:
            effect.state = state
            effect.decided_after = effect.applicable
            out.changed[lesson.id] = state
        diagnosis = diagnose(effect, lesson)
        out.diagnoses[lesson.id] = diagnosis
        if diagnosis.action == "retire" and not lesson.pinned:
            gone = RetiredLesson(
                lesson=lesson.model_copy(update={"state": state}),
                kind="retired",
                reason=diagnosis.reason,
                at=now,
            )
            effect.retired = gone
            out.retired.append(gone)
            continue
        kept.append(lesson if lesson.state is state else lesson.model_copy(update={"state": state}))
    out.book = book.model_copy(update={"lessons": kept})
    forget_departed(effects, {x.id for x in kept})
    return out
