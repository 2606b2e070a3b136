"""Which lessons a run shows: scope, then a hash-seeded draw that holds some out. Pure.

A lesson's effect can only be measured against runs where it applied but was not shown.
So each applicable lesson is held out with a known probability, and the choice is a
hash of (run id, lesson id): no state, no randomness source to seed, and a replay of
the run (same id) draws the same. The draw is independent across lessons and runs, so
the comparison of shown and held-out runs of one lesson is a randomized experiment
whatever the other lessons did.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from agent_loop_common.records import (
    CitationStatus,
    Lesson,
    LessonExposure,
    LessonState,
    Role,
    WorkKind,
)

__all__ = [
    "PROVEN_HOLDOUT_SHARE",
    "LessonDraw",
    "draw_lessons",
    "holdout_of",
    "uniform_draw",
    "work_kind_of",
]

PROVEN_HOLDOUT_SHARE = 0.25
"""A proven lesson is held out at this share of the configured rate: enough to notice
its effect decaying, little enough that most runs get its help."""

_BUG_LABELS = frozenset({"bug", "defect", "regression", "type: bug", "kind/bug"})
_DOCS_LABELS = frozenset({"documentation", "docs", "doc", "type: docs", "kind/documentation"})
_SPEC_LABELS = frozenset({"spec", "specification", "epic", "decompose", "design"})


def uniform_draw(run_id: str, lesson_id: str) -> float:
    """A number in [0, 1) fixed by the pair: the same run and lesson always draw the same."""
    digest = hashlib.sha256(f"agent-loop/holdout\0{run_id}\0{lesson_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def holdout_of(lesson: Lesson, rate: float) -> float:
    """The probability `lesson` is held out of a run where it applies."""
    if rate <= 0:
        return 0.0
    return rate * PROVEN_HOLDOUT_SHARE if lesson.state is LessonState.PROVEN else rate


def work_kind_of(labels: Iterable[str], *, role: Role) -> WorkKind:
    """The stratum of a run, from what is known before any lesson is shown.

    The reviewer always fixes or reviews an agent PR; an issue's kind comes from its
    labels (a label a maintainer set, so a model cannot choose its own stratum).
    """
    if role is Role.REVIEWER:
        return WorkKind.REVIEW_FIX
    names = {label.strip().casefold() for label in labels}
    if names & _BUG_LABELS:
        return WorkKind.BUG
    if names & _DOCS_LABELS:
        return WorkKind.DOCS
    if names & _SPEC_LABELS:
        return WorkKind.DECOMPOSITION
    return WorkKind.FEATURE


@dataclass(frozen=True, slots=True)
class LessonDraw:
    """The outcome of the draw for one run, before the prompt's budget is applied."""

    kind: WorkKind
    """The run's stratum."""
    drawn_in: tuple[Lesson, ...]
    """Applicable lessons the draw kept, in book order: the ones the run may show."""
    exposures: tuple[LessonExposure, ...]
    """One entry per candidate lesson, `shown` still false (see `record`)."""

    @property
    def hidden_ids(self) -> set[str]:
        """Every candidate a model of the run must not see: held out or not applicable."""
        kept = {lesson.id for lesson in self.drawn_in}
        return {e.lesson_id for e in self.exposures if e.lesson_id not in kept}

    def record(self, shown_ids: Collection[str]) -> list[LessonExposure]:
        """The exposures for the run's record, given the ids that reached the prompt.

        A drawn-in lesson that did not reach it (the context budget ran out) is noted as
        such; its run does not count for or against it.
        """
        kept = {lesson.id for lesson in self.drawn_in}
        out: list[LessonExposure] = []
        for e in self.exposures:
            if e.lesson_id in shown_ids and e.lesson_id in kept:
                out.append(e.model_copy(update={"shown": True}))
            elif e.lesson_id in kept:
                out.append(e.model_copy(update={"note": "budget"}))
            else:
                out.append(e)
        return out


def draw_lessons(
    lessons: Sequence[Lesson], *, run_id: str, role: Role, kind: WorkKind, rate: float
) -> LessonDraw:
    """Decide, for every lesson in the book, whether this run may show it.

    Args:
        lessons: The book's lessons (every one is a candidate).
        run_id: The run's id, half of the draw's seed.
        role: The agent running; a lesson for another role does not apply.
        kind: The run's work kind; a lesson narrowed to other kinds does not apply.
        rate: `AGENT_LOOP_LESSON_HOLDOUT`; 0 shows every applicable lesson.
    """
    drawn_in: list[Lesson] = []
    exposures: list[LessonExposure] = []
    for lesson in lessons:
        applicable = (
            lesson.applies_to(role, kind) and lesson.citation_status is not CitationStatus.BROKEN
        )
        if not applicable:
            exposures.append(LessonExposure(lesson_id=lesson.id, applicable=False))
            continue
        p = holdout_of(lesson, rate)
        held = p > 0 and uniform_draw(run_id, lesson.id) < p
        exposures.append(
            LessonExposure(lesson_id=lesson.id, applicable=True, held_out=held, holdout=p)
        )
        if not held:
            drawn_in.append(lesson)
    return LessonDraw(kind, tuple(drawn_in), tuple(exposures))
