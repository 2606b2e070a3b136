"""Lesson upkeep that needs no model: ranking, freshness, expiry. Pure.

A tick is reproducible from its inputs: the order lessons are shown in (digest, prompt,
report), which lessons count as recently seen, and which expire are plain functions of
the book, the records and the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from agent_loop_common.metrics import SUCCESS_OUTCOMES
from agent_loop_common.records import Lesson, LessonBook, Outcome, RunRecord

__all__ = ["expire_stale", "hits_of", "rank_lessons", "refresh_from_usage", "seen_at"]


def seen_at(lesson: Lesson) -> datetime:
    """When evidence last backed the lesson (books before 1.1: its last edit)."""
    return lesson.last_seen_at or lesson.updated_at


def hits_of(lesson: Lesson) -> int:
    """Runs that backed the lesson (books written before hits were kept: its sources)."""
    return max(lesson.hits, len(lesson.source_run_ids))


def rank_lessons(lessons: Iterable[Lesson]) -> list[Lesson]:
    """Most hits first, then most recently seen, then id: a deterministic order."""
    return sorted(
        lessons,
        key=lambda lesson: (-hits_of(lesson), -seen_at(lesson).timestamp(), lesson.id),
    )


def refresh_from_usage(book: LessonBook, records: Iterable[RunRecord]) -> LessonBook:
    """Mark lessons as seen when a successful run had them in its context.

    A lesson that is being followed stops producing failures, so without this it would
    never be re-evidenced and would expire exactly when it works.
    """
    latest: dict[str, datetime] = {}
    for record in records:
        if record.outcome in SUCCESS_OUTCOMES and record.outcome is not Outcome.DISTILLED:
            for used in record.lesson_ids:
                if used not in latest or record.finished_at > latest[used]:
                    latest[used] = record.finished_at
    if not latest:
        return book
    lessons = [
        lesson.model_copy(update={"last_seen_at": latest[lesson.id]})
        if lesson.id in latest and latest[lesson.id] > seen_at(lesson)
        else lesson
        for lesson in book.lessons
    ]
    return book.model_copy(update={"lessons": lessons})


def expire_stale(
    book: LessonBook, now: datetime, max_age: timedelta
) -> tuple[LessonBook, list[Lesson]]:
    """Drop lessons not seen for longer than `max_age`; returns the book and the expired."""
    kept: list[Lesson] = []
    expired: list[Lesson] = []
    for lesson in book.lessons:
        (expired if now - seen_at(lesson) > max_age else kept).append(lesson)
    if not expired:
        return book, []
    return book.model_copy(update={"lessons": kept}), expired
