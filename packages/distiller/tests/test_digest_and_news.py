"""The digest stays within its budget deterministically; pass planning and back-off."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.claims import BackoffPolicy
from agent_loop_common.records import (
    Grade,
    GradeState,
    Lesson,
    LessonBook,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)
from agent_loop_distiller import (
    TickKind,
    estimate_tokens,
    failure_streak,
    learnable,
    plan_peek,
    render_digest,
    retry_at,
    work_lines,
)

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)


def book(n: int) -> LessonBook:
    return LessonBook(
        lessons=[
            Lesson(
                id=f"L-{i:03d}",
                text=f"Lesson number {i}: " + "be careful " * 8,
                hits=i % 5,
                source_run_ids=[f"r{i}"],
                last_seen_at=NOW - timedelta(hours=i),
                created_at=NOW,
                updated_at=NOW,
            )
            for i in range(n)
        ]
    )


def pr_grade(n: int, state: GradeState, rounds: int = 0, title: str = "Title") -> Grade:
    return Grade(
        target=Target(kind=TargetKind.PR, number=n, title=title),
        state=state,
        review_rounds=rounds,
        graded_at=NOW,
        opened_at=NOW - timedelta(hours=n),
        issue_number=n - 1,
    )


@pytest.mark.parametrize("budget", [100, 200, 400, 1_000, 4_000])
@pytest.mark.parametrize(("lessons", "grades"), [(0, 0), (3, 2), (40, 60)])
def test_digest_fits_its_budget(budget: int, lessons: int, grades: int) -> None:
    graded = [pr_grade(n + 2, GradeState.MERGED, n % 3) for n in range(grades)]
    digest = render_digest(book(lessons), graded, budget)
    assert estimate_tokens(digest) <= budget
    assert digest == render_digest(book(lessons), list(reversed(graded)), budget)


def test_digest_shows_most_backed_lessons_first_and_counts_the_rest() -> None:
    digest = render_digest(book(40), [pr_grade(5, GradeState.OPEN)], 400)
    lines = [line for line in digest.splitlines() if line.startswith("- [L-")]
    assert lines
    assert "backed by 4 runs" in lines[0]
    assert "more not shown)" in digest
    assert '- issue #4 -> PR #5 "Title": open' in digest


def test_work_lines_are_a_deterministic_rollup_of_grades() -> None:
    decomposition = Grade(
        target=Target(kind=TargetKind.ISSUE, number=20, title='Big "one"\u200b'),
        state=GradeState.OPEN,
        graded_at=NOW,
        opened_at=NOW,
        issue_number=20,
        sub_issues=[22, 21, 21],
        sub_issues_closed=[21],
    )
    old = pr_grade(3, GradeState.OPEN)
    newer = old.model_copy(
        update={"state": GradeState.MERGED, "review_rounds": 1, "graded_at": NOW + timedelta(1)}
    )
    lines = work_lines([old, decomposition, newer, pr_grade(9, GradeState.CLOSED_UNMERGED, 2)])
    assert lines == [
        "- issue #20 \"Big 'one'\" -> sub-issues #21, #22 (1 of 2 closed)",
        '- issue #2 -> PR #3 "Title": merged after 1 review round',
        '- issue #8 -> PR #9 "Title": closed without merge after 2 review rounds',
    ]


def rec(run: str, role: Role, outcome: Outcome, minutes: int) -> RunRecord:
    when = NOW - timedelta(minutes=minutes)
    return RunRecord(
        run_id=run,
        role=role,
        target=Target(kind=TargetKind.REPO),
        outcome=outcome,
        started_at=when,
        finished_at=when,
    )


def test_failure_streak_restarts_after_a_success() -> None:
    records = [
        rec("d1", Role.DISTILLER, Outcome.ERROR, 50),
        rec("d2", Role.DISTILLER, Outcome.DISTILLED, 40),
        rec("d3", Role.DISTILLER, Outcome.REJECTED, 30),
        rec("b1", Role.BUILDER, Outcome.ERROR, 25),
        rec("d4", Role.DISTILLER, Outcome.BUDGET_EXCEEDED, 20),
    ]
    assert [r.run_id for r in failure_streak(records)] == ["d3", "d4"]
    assert [r.run_id for r in learnable(records)] == ["b1"]


def test_retry_is_immediate_once_then_exponential_and_capped() -> None:
    policy = BackoffPolicy(base=timedelta(minutes=15), cap=timedelta(hours=1))
    one = [rec("d1", Role.DISTILLER, Outcome.ERROR, 0)]
    assert retry_at(one, policy) is None
    two = [*one, rec("d2", Role.DISTILLER, Outcome.ERROR, 0)]
    assert retry_at(two, policy) == NOW + timedelta(minutes=15)
    three = [*two, rec("d3", Role.DISTILLER, Outcome.ERROR, 0)]
    assert retry_at(three, policy) == NOW + timedelta(minutes=30)
    many = three * 4
    assert retry_at(many, policy) == NOW + timedelta(hours=1)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, TickKind.IDLE),
        ({"learn": 2}, None),
        ({"learn": 2, "retry": NOW + timedelta(minutes=1)}, TickKind.BACKED_OFF),
        ({"learn": 2, "retry": NOW - timedelta(minutes=1)}, None),
        ({"grades_changed": True}, None),
        ({"deferred": 1}, None),
        ({"buckets_scanned": 25}, None),
        ({"buckets_scanned": 24}, TickKind.IDLE),
    ],
)
def test_the_read_only_look_decides_whether_to_claim(
    kwargs: dict[str, object], expected: TickKind | None
) -> None:
    args: dict[str, object] = {
        "learn": 0,
        "deferred": 0,
        "buckets_scanned": 3,
        "grades_changed": False,
        "housekeeping_buckets": 24,
        "retry": None,
        "now": NOW,
    }
    assert plan_peek(**{**args, **kwargs}) is expected  # type: ignore[arg-type]
