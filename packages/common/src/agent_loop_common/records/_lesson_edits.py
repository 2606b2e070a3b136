"""Edits of a lesson's life that need no model, shared by the distiller and the CLI. Pure."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from agent_loop_common.records._lessons import (
    MAX_LESSON_EVENTS,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    OperatorEdit,
    RetiredLesson,
)

__all__ = ["apply_operator_edits", "with_event"]


def with_event(lesson: Lesson, event: LessonEvent, **update: object) -> Lesson:
    """`lesson` with `update` applied and `event` added to its bounded history."""
    history = [*lesson.history, event][-MAX_LESSON_EVENTS:]
    return lesson.model_copy(update={**update, "history": history})


def apply_operator_edits(
    book: LessonBook, edits: Iterable[OperatorEdit], now: datetime
) -> tuple[LessonBook, list[RetiredLesson]]:
    """The operator's retire / pin / unpin edits, applied in order; idempotent."""
    by_id = {lesson.id: lesson for lesson in book.lessons}
    retired: list[RetiredLesson] = []
    for edit in edits:
        lesson = by_id.get(edit.lesson_id)
        if lesson is None:
            continue
        event = LessonEvent(
            at=edit.at, op=f"{edit.op}d" if edit.op == "retire" else f"{edit.op}ned",
            by=LessonAuthor.OPERATOR, login=edit.login, detail=edit.reason,
        )  # fmt: skip
        if edit.op == "retire":
            del by_id[lesson.id]
            retired.append(
                RetiredLesson(
                    lesson=with_event(lesson, event),
                    kind="retired",
                    reason=edit.reason or "retired by the operator",
                    by=LessonAuthor.OPERATOR,
                    login=edit.login,
                    at=edit.at,
                )
            )
        elif lesson.pinned != (edit.op == "pin"):
            by_id[lesson.id] = with_event(lesson, event, pinned=edit.op == "pin")
    if not retired and all(by_id.get(x.id) is x for x in book.lessons):
        return book, []
    kept = [by_id[x.id] for x in book.lessons if x.id in by_id]
    return book.model_copy(update={"lessons": kept}), retired
