"""Lessons 1.3: provenance, citations and history survive a round trip; hidden lessons
leave both the book and the digest."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_common.memory import ContextView
from agent_loop_common.records import (
    Citation,
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    LessonEvent,
    RetiredLesson,
    Role,
    RunRecord,
    StaleLesson,
)

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def lesson(lesson_id: str, **extra: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": f"advice {lesson_id}", "created_at": NOW, "updated_at": NOW}
        | extra
    )


def test_new_fields_round_trip_and_old_books_read_with_defaults() -> None:
    full = lesson(
        "o/r#L-1",
        repo="o/r",
        visibility="private",
        author=LessonAuthor.MAINTAINER,
        author_login="maint",
        citations=[Citation(kind="symbol", value="parse", path="src/a.py")],
        citation_status=CitationStatus.OK,
        pinned=True,
        history=[LessonEvent(at=NOW, op="reworded", by=LessonAuthor.MAINTAINER, login="maint")],
    )
    book = LessonBook(lessons=[full])
    assert LessonBook.model_validate_json(book.model_dump_json()) == book
    old = LessonBook.model_validate_json(
        '{"schema_version": "1.2", "lessons": [{"id": "L-1", "text": "t",'
        ' "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}]}'
    )
    assert old.lessons[0].repo == ""
    assert old.lessons[0].visibility == ""
    assert old.lessons[0].author is LessonAuthor.DISTILLER
    assert full.citations[0].label() == "symbol parse in src/a.py"
    gone = RetiredLesson(
        lesson=full, kind="superseded", reason="merged", replaced_by=["o/r#L-2"], at=NOW
    )
    assert RetiredLesson.model_validate_json(gone.model_dump_json()) == gone


def test_a_broken_lesson_applies_to_no_role() -> None:
    book = LessonBook(
        lessons=[lesson("L-ok"), lesson("L-bad", citation_status=CitationStatus.BROKEN)]
    )
    assert [x.id for x in book.for_role(Role.BUILDER)] == ["L-ok"]
    assert [x.id for x in book.for_role(Role.REVIEWER)] == ["L-ok"]


def test_without_takes_lessons_out_of_book_and_digest() -> None:
    digest = (
        "# agent-loop context\n\n## Lessons\n- [L-a] (all; backed by 1 run) advice L-a\n"
        "- [L-b] (all; backed by 2 runs) advice L-b\n\n## Work\n- PR #3: merged\n"
    )
    view = ContextView(digest, LessonBook(lessons=[lesson("L-a"), lesson("L-b")]))
    hidden = view.without({"L-a"})
    assert [x.id for x in hidden.lessons.lessons] == ["L-b"]
    assert "L-a" not in hidden.digest
    assert "- [L-b]" in hidden.digest
    assert "PR #3: merged" in hidden.digest
    assert view.without(()) is view


def test_record_keeps_the_lessons_it_hid() -> None:
    stale = StaleLesson(lesson_id="L-a", broken=["path src/gone.py"], base_sha="abc")
    data = {
        "run_id": "b-1",
        "role": "builder",
        "agent_id": "builder@1",
        "target": {"kind": "issue", "number": 1},
        "outcome": "opened_pr",
        "started_at": NOW,
        "finished_at": NOW,
        "model": "m",
        "stale_lessons": [stale.model_dump()],
    }
    record = RunRecord.model_validate(data)
    assert record.stale_lessons == [stale]
