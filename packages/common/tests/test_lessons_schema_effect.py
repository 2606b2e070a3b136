"""Schema 1.3 of lessons and 1.4 of records: work kinds, metric, state and exposures."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_common.records import (
    SCHEMA_VERSION,
    Lesson,
    LessonBook,
    LessonExposure,
    LessonState,
    Outcome,
    OutcomeMetric,
    Role,
    RunRecord,
    Target,
    TargetKind,
    WorkKind,
)

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _lesson(lesson_id: str, **kw: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": f"text of {lesson_id}", "created_at": T0, "updated_at": T0, **kw}
    )


def test_a_1_2_book_reads_with_the_new_defaults() -> None:
    old = {
        "schema_version": "1.2",
        "lessons": [{"id": "L-1", "text": "t", "created_at": T0.isoformat(),
                     "updated_at": T0.isoformat(), "general": True}],
    }  # fmt: skip
    book = LessonBook.model_validate(old)
    lesson = book.lessons[0]
    assert lesson.state is LessonState.PROVING
    assert lesson.kinds == []
    assert lesson.metric is OutcomeMetric.FIRST_TRY_TESTS


def test_applies_to_checks_role_and_kind() -> None:
    narrow = _lesson("L-1", roles=["builder"], kinds=["docs"])
    assert narrow.applies_to(Role.BUILDER, WorkKind.DOCS)
    assert not narrow.applies_to(Role.BUILDER, WorkKind.BUG)
    assert not narrow.applies_to(Role.REVIEWER, WorkKind.DOCS)
    assert _lesson("L-2").applies_to(Role.REVIEWER, WorkKind.REVIEW_FIX)


def test_a_record_keeps_its_exposures_and_kind() -> None:
    record = RunRecord(
        run_id="r1", role=Role.BUILDER, target=Target(kind=TargetKind.ISSUE, number=3),
        outcome=Outcome.OPENED_PR, started_at=T0, finished_at=T0,
        work_kind=WorkKind.BUG,
        exposures=[
            LessonExposure(lesson_id="L-1", applicable=True, held_out=True, holdout=0.2),
            LessonExposure(lesson_id="L-2", applicable=False),
        ],
    )  # fmt: skip
    again = RunRecord.model_validate_json(record.model_dump_json())
    assert again == record
    assert again.exposures[0].held_out
    assert not again.exposures[0].shown
    assert again.schema_version == SCHEMA_VERSION
