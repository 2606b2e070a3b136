"""Lesson upkeep that needs no model: ranking, freshness, expiry, citations, provenance
and the operator's edits. Pure.

A tick is reproducible from its inputs: the order lessons are shown in (digest, prompt,
report), which lessons count as recently seen, and which expire are plain functions of
the book, the records and the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from agent_loop_common.metrics import SUCCESS_OUTCOMES
from agent_loop_common.records import (
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    Outcome,
    RetiredLesson,
    RunRecord,
    StaleLesson,
    Visibility,
    apply_operator_edits,
    with_event,
)

__all__ = [
    "apply_operator_edits",
    "expire_stale",
    "expired_record",
    "hits_of",
    "mark_citations",
    "rank_lessons",
    "refresh_from_usage",
    "seen_at",
    "stamp_origin",
    "with_event",
]


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
    """Drop lessons no run backed for longer than `max_age`; returns the book and the expired.

    Expiry follows evidence: a lesson in use is seen by every successful run that showed
    it (`refresh_from_usage`), so only a lesson no run needs any more expires. A pinned
    lesson (the operator) or one a maintainer wrote never expires for lack of runs.
    """
    kept: list[Lesson] = []
    expired: list[Lesson] = []
    for lesson in book.lessons:
        keep = lesson.pinned or lesson.author is LessonAuthor.MAINTAINER
        (expired if not keep and now - seen_at(lesson) > max_age else kept).append(lesson)
    if not expired:
        return book, []
    return book.model_copy(update={"lessons": kept}), expired


def mark_citations(book: LessonBook, records: Iterable[RunRecord], now: datetime) -> LessonBook:
    """Fold what runs found about the lessons' citations into the book.

    A run that hid a lesson for a missing citation (`RunRecord.stale_lessons`) marks it
    `broken`: from then on no run shows it, and the distiller is asked to fix its
    citations (reword) or retire it. A run that showed a lesson with citations found
    them all, which marks an unchecked lesson `ok`.
    """
    stale: dict[str, tuple[datetime, StaleLesson]] = {}
    shown: set[str] = set()
    for record in records:
        shown.update(record.lesson_ids)
        for item in record.stale_lessons:
            known = stale.get(item.lesson_id)
            if known is None or record.finished_at > known[0]:
                stale[item.lesson_id] = (record.finished_at, item)
    if not stale and not shown:
        return book
    lessons: list[Lesson] = []
    for lesson in book.lessons:
        if lesson.id in stale:
            item = stale[lesson.id][1]
            reason = f"missing at {item.base_sha[:12] or 'the base commit'}: " + "; ".join(
                item.broken
            )
            if lesson.citation_status is not CitationStatus.BROKEN or lesson.stale_reason != reason:
                event = LessonEvent(at=now, op="stale", detail=reason)
                lesson = with_event(
                    lesson, event, citation_status=CitationStatus.BROKEN, stale_reason=reason
                )
        elif (
            lesson.id in shown
            and lesson.citations
            and lesson.citation_status is CitationStatus.UNCHECKED
        ):
            lesson = lesson.model_copy(update={"citation_status": CitationStatus.OK})
        lessons.append(lesson)
    return book.model_copy(update={"lessons": lessons})


def stamp_origin(book: LessonBook, repo: str, visibility: Visibility) -> LessonBook:
    """Record the repository (and its current visibility) on every lesson of its book.

    Lessons written before 1.3 carry no repository: the book's own repository is theirs.
    A repository that turned private makes its lessons private at the next tick.
    """
    lessons = [
        lesson.model_copy(update={"repo": lesson.repo or repo, "visibility": visibility})
        if (lesson.repo in ("", repo)) and (lesson.repo != repo or lesson.visibility != visibility)
        else lesson
        for lesson in book.lessons
    ]
    return book.model_copy(update={"lessons": lessons})


def expired_record(lesson: Lesson, now: datetime, max_age: timedelta) -> RetiredLesson:
    """How an expired lesson is kept in the archive."""
    return RetiredLesson(
        lesson=lesson,
        kind="retired",
        reason=f"expired: no run backed it for {max_age.days} day(s)",
        at=now,
    )
