"""Schema 1.1 of grades and lessons: what the distiller needs to grade idempotently and
to keep lesson provenance, readable by 1.0 readers and from 1.0 documents."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_common.metrics import GradeTally, compute_metrics, tally_grades
from agent_loop_common.records import (
    Grade,
    GradeState,
    Lesson,
    LessonBook,
    Target,
    TargetKind,
)

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def pr_grade(n: int, state: GradeState, rounds: int = 0) -> Grade:
    return Grade(
        target=Target(kind=TargetKind.PR, number=n),
        state=state,
        review_rounds=rounds,
        review_run_ids=[f"r{n}-{i}" for i in range(rounds)],
        graded_at=NOW,
        issue_number=n - 1,
    )


def decomposition(n: int, subs: list[int], closed: list[int]) -> Grade:
    return Grade(
        target=Target(kind=TargetKind.ISSUE, number=n),
        state=GradeState.MERGED if set(closed) >= set(subs) else GradeState.OPEN,
        graded_at=NOW,
        issue_number=n,
        sub_issues=subs,
        sub_issues_closed=closed,
    )


def test_decompositions_count_sub_issues_not_pr_states() -> None:
    grades = [
        pr_grade(2, GradeState.MERGED, 2),
        pr_grade(4, GradeState.CLOSED_UNMERGED),
        decomposition(10, [11, 12, 13], [11]),
        decomposition(20, [21], [21]),
    ]
    tally = tally_grades(grades)
    assert tally == GradeTally(
        graded=2,
        merged=1,
        closed_unmerged=1,
        review_rounds=2,
        decompositions=2,
        sub_issues=4,
        sub_issues_closed=2,
    )
    metrics = compute_metrics([], grades)
    assert metrics.graded_prs == 2
    assert metrics.open_prs == 0
    assert metrics.merged_rate == 0.5
    assert metrics.decompositions == 2
    assert metrics.sub_issue_completion_rate == 0.5


def test_no_sub_issues_means_unknown_completion() -> None:
    assert compute_metrics([], [pr_grade(2, GradeState.OPEN)]).sub_issue_completion_rate is None


def test_closed_numbers_outside_the_sub_issues_are_not_counted() -> None:
    tally = tally_grades([decomposition(10, [11], [11, 99, 11])])
    assert (tally.sub_issues, tally.sub_issues_closed) == (1, 1)


def test_version_1_0_documents_still_read() -> None:
    old_grade = {
        "schema_version": "1.0",
        "target": {"kind": "pr", "number": 7},
        "state": "open",
        "review_rounds": 1,
        "graded_at": NOW.isoformat(),
    }
    grade = Grade.model_validate(old_grade)
    assert grade.review_run_ids == []
    assert grade.issue_number is None
    old_book = {
        "schema_version": "1.0",
        "lessons": [
            {"id": "L-1", "text": "t", "created_at": NOW.isoformat(), "updated_at": NOW.isoformat()}
        ],
    }
    lesson = LessonBook.model_validate(old_book).lessons[0]
    assert (lesson.hits, lesson.source_refs, lesson.last_seen_at) == (0, [], None)


def test_new_fields_round_trip() -> None:
    lesson = Lesson(
        id="L-1",
        text="Run the tests before submitting.",
        source_run_ids=["run-a"],
        source_refs=["issue-3", "pr-4"],
        hits=2,
        last_seen_at=NOW,
        created_at=NOW,
        updated_at=NOW,
        general=True,
    )
    book = LessonBook(lessons=[lesson])
    assert book.schema_version == "1.5"  # 1.2 `general`, 1.3 citations, 1.4 diagnosis, 1.5 replay
    assert LessonBook.model_validate_json(book.model_dump_json()) == book
    grade = pr_grade(5, GradeState.OPEN, 1)
    assert Grade.model_validate_json(grade.model_dump_json()) == grade


def test_pr_outcome_figures_count_only_what_is_decided() -> None:
    """Schema 1.2: threads, first CI, trusted close reasons and reverts become rates."""
    from agent_loop_common.records import CloseReason

    grades = [
        pr_grade(2, GradeState.MERGED).model_copy(
            update={"unresolved_threads": 1, "first_ci": "failed", "reverted": True}
        ),
        pr_grade(4, GradeState.MERGED).model_copy(
            update={"unresolved_threads": 0, "first_ci": "passed", "reverted": None}
        ),
        pr_grade(6, GradeState.CLOSED_UNMERGED).model_copy(
            update={"close_reason": CloseReason.DUPLICATE, "first_ci": "none"}
        ),
        pr_grade(8, GradeState.CLOSED_UNMERGED).model_copy(
            update={"close_reason": CloseReason.NO_REASON, "unresolved_threads": 0}
        ),
        pr_grade(10, GradeState.OPEN),
    ]
    tally = tally_grades(grades)
    assert (tally.closed_excused, tally.threads_checked, tally.left_unresolved) == (1, 3, 1)
    assert (tally.ci_checked, tally.ci_green, tally.revert_decided, tally.reverted) == (2, 1, 1, 1)
    metrics = compute_metrics([], grades)
    assert metrics.merged_rate == 2 / 4
    assert metrics.merged_unless_excused_rate == 2 / 3  # the duplicate is not a failure
    assert metrics.unresolved_threads_rate == 1 / 3
    assert metrics.first_ci_green_rate == 1 / 2
    assert metrics.revert_rate == 1.0
    old = Grade.model_validate_json(
        '{"schema_version": "1.1", "target": {"kind": "pr", "number": 3}, "state": "merged",'
        ' "graded_at": "2026-03-01T12:00:00Z"}'
    )
    assert (old.unresolved_threads, old.first_ci, old.reverted, old.exposures) == (
        None,
        None,
        None,
        [],
    )
    assert compute_metrics([], [old]).first_ci_green_rate is None
