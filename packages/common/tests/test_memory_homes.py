"""Small single-owner state through the real MemoryStore: ETag cache, reviewed marks,
grades and rollups (plain async code with an explicit root)."""

from __future__ import annotations

import pathlib
from datetime import UTC, date, datetime, timedelta

import pytest

from agent_loop_common.github import ETagCache
from agent_loop_common.memory import (
    MemoryLocation,
    ReviewedMark,
    fold_into_rollups,
    grade_month,
    mark_reviewed,
    read_etag_state,
    read_grades,
    read_reviewed,
    read_rollups,
    write_etag_state,
    write_grades,
)
from agent_loop_common.records import (
    Grade,
    GradeState,
    Outcome,
    Role,
    RunRecord,
    Target,
    TargetKind,
)

NOW = datetime(2026, 3, 31, 23, 0, tzinfo=UTC)


@pytest.fixture
def location(tmp_path: pathlib.Path) -> MemoryLocation:
    return MemoryLocation(org="o", project="p", domain="d", root=str(tmp_path / "mem"))


async def test_etag_state_round_trips_the_facades_cache(location: MemoryLocation) -> None:
    assert await read_etag_state(location, Role.BUILDER) is None
    cache = ETagCache()
    cache.put("https://api/x", 'W/"1"', "[]", None)
    await write_etag_state(location, Role.BUILDER, cache.dump())
    loaded = ETagCache.load(await read_etag_state(location, Role.BUILDER))
    assert loaded.get("https://api/x") == ('W/"1"', "[]", None)
    assert not loaded.changed
    assert await read_etag_state(location, Role.REVIEWER) is None


async def test_reviewed_marks_are_per_pr(location: MemoryLocation) -> None:
    assert await read_reviewed(location, 7) is None
    await mark_reviewed(location, ReviewedMark(pr=7, head_sha="abc", reviewed_at=NOW, run_id="r1"))
    await mark_reviewed(location, ReviewedMark(pr=7, head_sha="def", reviewed_at=NOW, run_id="r2"))
    await mark_reviewed(location, ReviewedMark(pr=8, head_sha="123", reviewed_at=NOW))
    mark = await read_reviewed(location, 7)
    assert mark is not None
    assert (mark.head_sha, mark.run_id) == ("def", "r2")


async def test_grades_live_in_the_month_their_pr_was_opened(location: MemoryLocation) -> None:
    def grade(n: int, state: GradeState, opened: datetime) -> Grade:
        return Grade(
            target=Target(kind=TargetKind.PR, number=n),
            state=state,
            graded_at=NOW,
            opened_at=opened,
        )

    march, april = (
        grade(1, GradeState.OPEN, NOW),
        grade(2, GradeState.MERGED, NOW + timedelta(hours=2)),
    )
    assert (grade_month(march), grade_month(april)) == ("202603", "202604")
    await write_grades(location, [march, april])
    await write_grades(location, [march.model_copy(update={"state": GradeState.MERGED})])
    [regraded] = await read_grades(location, "202603")
    assert regraded.state is GradeState.MERGED
    assert [g.target.number for g in await read_grades(location, "202604")] == [2]


async def test_rollups_span_months_and_read_back_a_window(location: MemoryLocation) -> None:
    def record(run_id: str, finished: datetime) -> RunRecord:
        return RunRecord(
            run_id=run_id,
            role=Role.BUILDER,
            target=Target(kind=TargetKind.ISSUE, number=1),
            outcome=Outcome.OPENED_PR,
            started_at=finished,
            finished_at=finished,
        )

    records = [
        record("a", NOW),
        record("b", NOW + timedelta(hours=2)),
        record("c", NOW - timedelta(days=3)),
    ]
    assert await fold_into_rollups(location, records, []) == 3
    assert await fold_into_rollups(location, records, []) == 0
    window = await read_rollups(location, date(2026, 3, 31), date(2026, 4, 1))
    assert [(r.day, r.tally.runs) for r in window] == [
        (date(2026, 3, 31), 1),
        (date(2026, 4, 1), 1),
    ]
