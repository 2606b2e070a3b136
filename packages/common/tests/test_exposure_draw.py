"""The lesson draw: scope first, then a reproducible, known-probability holdout."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_loop_common.exposure import (
    PROVEN_HOLDOUT_SHARE,
    draw_lessons,
    holdout_of,
    uniform_draw,
    work_kind_of,
)
from agent_loop_common.memory import ContextView
from agent_loop_common.records import Lesson, LessonBook, LessonState, Role, WorkKind

T0 = datetime(2026, 12, 1, tzinfo=UTC)


def _lesson(lesson_id: str, **kw: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": f"do {lesson_id}", "created_at": T0, "updated_at": T0, **kw}
    )


def test_the_draw_is_a_pure_function_of_run_and_lesson() -> None:
    assert uniform_draw("run-1", "L-1") == uniform_draw("run-1", "L-1")
    assert uniform_draw("run-1", "L-1") != uniform_draw("run-2", "L-1")
    assert uniform_draw("run-1", "L-1") != uniform_draw("run-1", "L-2")
    # "run-1" + "0" must not collide with "run-10" + "": the parts are separated.
    assert uniform_draw("run-1", "0L") != uniform_draw("run-10", "L")


def test_held_out_share_matches_the_rate() -> None:
    lesson = _lesson("L-a")
    held = sum(
        draw_lessons([lesson], run_id=f"r{i}", role=Role.BUILDER, kind=WorkKind.BUG, rate=0.2)
        .exposures[0]
        .held_out
        for i in range(20_000)
    )
    assert held / 20_000 == pytest.approx(0.2, abs=0.01)


def test_candidates_are_recorded_with_scope_and_probability() -> None:
    book = [
        _lesson("L-all"),
        _lesson("L-docs", kinds=["docs"]),
        _lesson("L-rev", roles=["reviewer"]),
        _lesson("L-proven", state="proven"),
        _lesson("L-stale", citation_status="broken"),
    ]
    draw = draw_lessons(book, run_id="r-7", role=Role.BUILDER, kind=WorkKind.BUG, rate=0.2)
    by_id = {e.lesson_id: e for e in draw.exposures}
    assert [e.lesson_id for e in draw.exposures] == [x.id for x in book]
    assert not by_id["L-docs"].applicable
    assert not by_id["L-rev"].applicable
    assert not by_id["L-stale"].applicable
    assert by_id["L-all"].applicable
    assert by_id["L-all"].holdout == 0.2
    assert by_id["L-proven"].holdout == pytest.approx(0.2 * PROVEN_HOLDOUT_SHARE)
    assert {"L-docs", "L-rev", "L-stale"} <= draw.hidden_ids
    for e in draw.exposures:
        if e.applicable:
            assert e.held_out == (uniform_draw("r-7", e.lesson_id) < e.holdout)
            assert (e.lesson_id in draw.hidden_ids) == e.held_out


def test_record_marks_shown_and_budget_cut() -> None:
    book = [_lesson("L-1"), _lesson("L-2"), _lesson("L-3", kinds=["docs"])]
    draw = draw_lessons(book, run_id="r", role=Role.BUILDER, kind=WorkKind.FEATURE, rate=0.0)
    out = {e.lesson_id: e for e in draw.record(["L-1"])}
    assert out["L-1"].shown
    assert not out["L-2"].shown
    assert out["L-2"].note == "budget"
    assert not out["L-3"].shown
    assert not out["L-3"].applicable
    assert all(e.holdout == 0.0 and not e.held_out for e in out.values())


def test_rate_zero_turns_measurement_off() -> None:
    assert holdout_of(_lesson("L"), 0.0) == 0.0
    assert holdout_of(_lesson("L", state=LessonState.PROVEN), 0.0) == 0.0


def test_a_held_out_lesson_leaves_the_digest_too() -> None:
    book = LessonBook(lessons=[_lesson("L-1"), _lesson("L-2")])
    digest = "# ctx\n- [L-1] (all; backed by 1 run) do L-1\n- [L-2] (all) do L-2\n"
    view = ContextView(digest=digest, lessons=book)
    draw = next(
        d
        for i in range(200)
        if (d := draw_lessons(book.lessons, run_id=f"r{i}", role=Role.BUILDER,
                              kind=WorkKind.FEATURE, rate=0.5)).hidden_ids == {"L-1"}
    )  # fmt: skip
    seen = view.without(draw.hidden_ids)
    assert "L-1" not in seen.digest
    assert "L-2" in seen.digest
    assert [x.id for x in seen.lessons.lessons] == ["L-2"]


@pytest.mark.parametrize(
    ("labels", "role", "kind"),
    [
        (("bug",), Role.BUILDER, WorkKind.BUG),
        (("Documentation",), Role.BUILDER, WorkKind.DOCS),
        (("spec", "bug"), Role.BUILDER, WorkKind.BUG),
        (("specification",), Role.BUILDER, WorkKind.DECOMPOSITION),
        ((), Role.BUILDER, WorkKind.FEATURE),
        (("bug",), Role.REVIEWER, WorkKind.REVIEW_FIX),
    ],
)
def test_work_kind_from_labels(labels: tuple[str, ...], role: Role, kind: WorkKind) -> None:
    assert work_kind_of(labels, role=role) is kind
