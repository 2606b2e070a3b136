"""Metrics: denominators, empty windows, additivity of tallies and idempotent rollups."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from agent_loop_common.metrics import (
    DailyRollup,
    GradeTally,
    Metrics,
    Tally,
    compute_metrics,
    fold_records,
    summarize,
    tally_grades,
    tally_records,
    total_tally,
)
from agent_loop_common.records import (
    Attempt,
    Grade,
    GradeState,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
    Usage,
)

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
_ids = itertools.count()


def rec(
    outcome: Outcome,
    *,
    role: Role = Role.BUILDER,
    tries: tuple[bool, ...] = (),
    cost: float = 0.0,
    tokens: tuple[int, int] = (0, 0),
    issue_age: timedelta | None = None,
    finished: datetime = T0,
) -> RunRecord:
    return RunRecord(
        run_id=f"r{next(_ids)}",
        role=role,
        target=Target(
            kind=TargetKind.ISSUE,
            number=1,
            created_at=None if issue_age is None else finished - issue_age,
        ),
        outcome=outcome,
        started_at=finished - timedelta(minutes=1),
        finished_at=finished,
        attempts=[Attempt(number=i + 1, verified=v) for i, v in enumerate(tries)],
        usage=Usage(tokens_in=tokens[0], tokens_out=tokens[1], cost_usd=cost),
    )


def grade(state: GradeState, rounds: int, n: int = 1) -> Grade:
    return Grade(
        target=Target(kind=TargetKind.PR, number=n), state=state, review_rounds=rounds, graded_at=T0
    )


def test_empty_window_gives_none_not_zero() -> None:
    m = compute_metrics([])
    assert m.runs == 0
    rates = {
        k: v
        for k, v in m.model_dump().items()
        if k.endswith(("_rate", "_per_opened_pr", "_per_pr"))
    }
    assert rates
    assert all(v is None for v in rates.values())
    assert m.mean_issue_to_pr_seconds is None


def test_rates_use_their_stated_denominators() -> None:
    records = [
        rec(
            Outcome.OPENED_PR,
            tries=(True,),
            cost=1.0,
            tokens=(900, 100),
            issue_age=timedelta(hours=2),
        ),
        rec(
            Outcome.OPENED_PR,
            tries=(False, True),
            cost=3.0,
            tokens=(1800, 200),
            issue_age=timedelta(hours=4),
        ),
        rec(Outcome.REJECTED, tries=(False, False, False), cost=2.0),
        rec(Outcome.ERROR),
        rec(Outcome.SKIPPED),
        rec(Outcome.PUSHED_FIX, role=Role.REVIEWER, tries=(True,), cost=2.0, tokens=(0, 1000)),
    ]
    m = compute_metrics(records)
    assert m.runs == 6
    assert m.success_rate == pytest.approx(3 / 5)  # skipped is not in the denominator
    assert m.verification_rate == pytest.approx(3 / 4)  # runs with tries: 4
    assert m.first_try_verification_rate == pytest.approx(2 / 4)
    assert m.error_rate == pytest.approx(1 / 6)
    assert m.opened_prs == 2
    assert m.cost_per_opened_pr == pytest.approx(8.0 / 2)  # every role's cost counts
    assert m.tokens_per_opened_pr == pytest.approx(4000 / 2)
    assert m.mean_issue_to_pr_seconds == pytest.approx(3 * 3600)


def test_issue_time_unknown_or_after_pr_is_left_out() -> None:
    records = [
        rec(Outcome.OPENED_PR, issue_age=None),
        rec(Outcome.OPENED_PR, issue_age=-timedelta(hours=1)),
        rec(Outcome.OPENED_PR, issue_age=timedelta(minutes=30)),
    ]
    m = compute_metrics(records)
    assert m.mean_issue_to_pr_seconds == pytest.approx(1800)


def test_grade_rates_cover_decided_prs_and_rounds_cover_all() -> None:
    grades = [
        grade(GradeState.MERGED, 1, 1),
        grade(GradeState.MERGED, 3, 2),
        grade(GradeState.CLOSED_UNMERGED, 0, 3),
        grade(GradeState.OPEN, 2, 4),
    ]
    m = compute_metrics([], grades)
    assert m.merged_rate == pytest.approx(2 / 3)
    assert m.closed_unmerged_rate == pytest.approx(1 / 3)
    assert m.review_rounds_per_pr == pytest.approx(6 / 4)
    assert (m.graded_prs, m.open_prs) == (4, 1)
    only_open = compute_metrics([], [grade(GradeState.OPEN, 1)])
    assert only_open.merged_rate is None
    assert only_open.closed_unmerged_rate is None


def test_every_rate_is_within_unit_interval_for_any_mix() -> None:
    outcomes = list(Outcome)
    for seed in range(30):
        records = [
            rec(
                outcomes[(seed * 7 + i) % len(outcomes)],
                tries=tuple(bool((seed >> j) & 1) for j in range(i % 4)),
            )
            for i in range(seed % 9)
        ]
        m = compute_metrics(records)
        for name in Metrics.model_fields:
            if name.endswith("_rate") and (value := getattr(m, name)) is not None:
                assert 0.0 <= value <= 1.0, (seed, name, value)


def test_tallies_add_up_to_the_tally_of_the_union() -> None:
    a = [rec(Outcome.OPENED_PR, tries=(True,), cost=1.5, issue_age=timedelta(hours=1))]
    b = [rec(Outcome.ERROR), rec(Outcome.REJECTED, tries=(False,), cost=0.25)]
    assert tally_records(a) + tally_records(b) == tally_records(a + b)
    g1, g2 = [grade(GradeState.MERGED, 1)], [grade(GradeState.OPEN, 2, 2)]
    assert tally_grades(g1) + tally_grades(g2) == tally_grades(g1 + g2)
    assert summarize(Tally(), GradeTally()) == compute_metrics([])


def test_rollup_folding_is_idempotent_and_per_day() -> None:
    day1 = [rec(Outcome.OPENED_PR, tries=(True,), cost=1.0), rec(Outcome.ERROR)]
    day2 = [rec(Outcome.REVIEWED_CLEAN, role=Role.REVIEWER, finished=T0 + timedelta(days=1))]
    first = fold_records({}, day1 + day2)
    assert set(first) == {date(2026, 3, 1), date(2026, 3, 2)}
    again = fold_records(first, day1 + day2)
    assert again == {}  # nothing new: nothing to save
    extra = rec(Outcome.OPENED_PR, cost=2.0)
    more = fold_records(first, [*day1, extra])
    assert set(more) == {date(2026, 3, 1)}
    rollups: list[DailyRollup] = [more[date(2026, 3, 1)], first[date(2026, 3, 2)]]
    assert total_tally(rollups) == tally_records([*day1, *day2, extra])
    assert total_tally(rollups, Role.REVIEWER) == tally_records(day2)
    assert rollups[0].tally.cost_usd == pytest.approx(3.0)


def test_rollup_day_is_the_utc_day_of_finish() -> None:
    late = T0.replace(hour=23, minute=30)
    record = rec(Outcome.ERROR, finished=late.astimezone(ZoneInfo("Asia/Tokyo")))
    assert set(fold_records({}, [record])) == {date(2026, 3, 1)}


def test_interrupted_and_preflight_failed_runs_change_no_rate() -> None:
    worked = [
        rec(Outcome.OPENED_PR, tries=(True,)),
        rec(Outcome.REJECTED, tries=(False, False)),
        rec(Outcome.ERROR),
        rec(Outcome.SKIPPED),
    ]
    bad_input = [
        rec(Outcome.PREFLIGHT_FAILED),
        rec(Outcome.PREFLIGHT_FAILED),
        rec(Outcome.INTERRUPTED, tries=(False,)),
        rec(Outcome.INTERRUPTED),
    ]
    before, after = compute_metrics(worked), compute_metrics([*worked, *bad_input])
    rates = [k for k in Metrics.model_fields if k.endswith("_rate")]
    assert {k: getattr(after, k) for k in rates} == {k: getattr(before, k) for k in rates}
    assert (before.success_rate, before.error_rate) == (pytest.approx(1 / 3), pytest.approx(1 / 4))
    assert after.runs == before.runs + 2  # interrupted runs reached their target
    assert (after.interrupted, after.preflight_failures) == (2, 2)
    tally = tally_records(bad_input)
    assert (tally.runs, tally.worked, tally.errors, tally.with_attempts) == (2, 0, 0, 0)
    assert tally.attempts == 1  # the tries spent still count as spent
