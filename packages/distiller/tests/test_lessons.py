"""Itemized lesson edits keep provenance; refused edits say why; stale lessons expire."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.records import Lesson, LessonBook, Outcome, Role
from agent_loop_distiller import (
    EditRefused,
    Evidence,
    LessonEditor,
    LessonLimits,
    evidence_of,
    expire_stale,
    lesson_id,
    rank_lessons,
    refresh_from_usage,
)

NOW = datetime(2026, 3, 10, 12, tzinfo=UTC)
DAY = timedelta(days=1)


def ev(run: str, *refs: str, days_ago: int = 1) -> Evidence:
    return Evidence(run, refs, NOW - days_ago * DAY)


def lesson(id_: str, text: str, *, hits: int = 1, seen_days_ago: int = 1) -> Lesson:
    return Lesson(
        id=id_,
        text=text,
        source_run_ids=[f"run-{id_}"],
        source_refs=[f"issue-{id_[-1]}"],
        hits=hits,
        last_seen_at=NOW - seen_days_ago * DAY,
        created_at=NOW - 20 * DAY,
        updated_at=NOW - 20 * DAY,
    )


def editor(*lessons: Lesson, limits: LessonLimits | None = None) -> LessonEditor:
    evidence = {
        "r1": ev("r1", "issue-1", "pr-2"),
        "r2": ev("r2", "pr-2", days_ago=0),
        "r3": ev("r3", "issue-9", days_ago=3),
    }
    return LessonEditor(
        book=LessonBook(lessons=list(lessons)),
        evidence=evidence,
        now=NOW,
        limits=limits or LessonLimits(),
    )


def test_add_derives_provenance_from_the_cited_runs() -> None:
    ed = editor()
    added = ed.add("  Test   empty inputs. ", ["r1", "r2", "r1"], ["builder", "Builder"])
    assert added.text == "Test empty inputs."
    assert added.source_run_ids == ["r1", "r2"]
    assert added.source_refs == ["issue-1", "pr-2"]
    assert added.hits == 2
    assert added.last_seen_at == NOW
    assert added.roles == [Role.BUILDER]
    assert added.id == lesson_id("Test empty inputs.", "r1")
    assert [e.op for e in ed.edits] == ["add"]


@pytest.mark.parametrize(
    ("runs", "roles", "message"),
    [
        ([], [], "at least one run id"),
        (["nope"], [], "unknown run id(s) nope"),
        (["r1"], ["tester"], "unknown role 'tester'"),
        (["r1"], ["distiller"], "not the distiller"),
    ],
)
def test_add_refuses_bad_evidence_and_roles(
    runs: list[str], roles: list[str], message: str
) -> None:
    with pytest.raises(EditRefused, match=re.escape(message)):
        editor().add("A lesson.", runs, roles)


def test_add_refuses_duplicates_oversize_text_and_a_full_book() -> None:
    ed = editor(
        lesson("L-1", "Run the tests."), limits=LessonLimits(max_lessons=1, max_text_chars=20)
    )
    with pytest.raises(EditRefused, match="use confirm_lesson"):
        ed.add("run the TESTS.", ["r1"])
    with pytest.raises(EditRefused, match="keep a lesson under 20"):
        ed.add("x" * 21, ["r1"])
    with pytest.raises(EditRefused, match="the limit"):
        ed.add("Another lesson.", ["r1"])
    assert ed.edits == []


def test_confirm_adds_only_new_evidence() -> None:
    ed = editor(lesson("L-1", "Run the tests.", hits=3, seen_days_ago=5))
    confirmed = ed.confirm("L-1", ["r1", "r3"])
    assert confirmed.hits == 5
    assert confirmed.source_run_ids == ["run-L-1", "r1", "r3"]
    assert confirmed.source_refs == ["issue-1", "pr-2", "issue-9"]
    assert confirmed.last_seen_at == NOW - DAY
    with pytest.raises(EditRefused, match="already lists every one"):
        ed.confirm("L-1", ["r1"])


def test_merge_keeps_everything_the_parts_had() -> None:
    a = lesson("L-a", "Test empty input.", hits=2, seen_days_ago=4)
    b = lesson("L-b", "Test empty lists.", hits=3, seen_days_ago=2)
    ed = editor(a, b, lesson("L-c", "Other."))
    merged = ed.merge(["L-a", "L-b"], "Test empty inputs of every kind.")
    assert merged.hits == 5
    assert set(merged.source_run_ids) == {"run-L-a", "run-L-b"}
    assert merged.last_seen_at == NOW - 2 * DAY
    assert merged.created_at == NOW - 20 * DAY
    assert [x.id for x in ed.lessons] == ["L-c", merged.id]
    with pytest.raises(EditRefused, match="at least two"):
        ed.merge([merged.id, merged.id], "x")
    with pytest.raises(EditRefused, match="no lesson 'L-a'"):
        ed.merge(["L-a", "L-c"], "x")


def test_reword_and_retire() -> None:
    ed = editor(lesson("L-1", "Run tests."), lesson("L-2", "Keep PRs small."))
    reworded = ed.reword("L-1", "Run the whole test suite before submitting.")
    assert reworded.id == "L-1"
    assert reworded.source_run_ids == ["run-L-1"]
    assert reworded.updated_at == NOW
    with pytest.raises(EditRefused, match="already has exactly this text"):
        ed.reword("L-1", "Run the whole test suite before submitting.")
    with pytest.raises(EditRefused, match="say why"):
        ed.retire("L-2", "  ")
    ed.retire("L-2", "Obsolete since the size limit.")
    assert [x.id for x in ed.lessons] == ["L-1"]
    assert [(e.op, e.lesson_id) for e in ed.edits] == [("reword", "L-1"), ("retire", "L-2")]


def test_finish_closes_the_editor() -> None:
    ed = editor()
    ed.finish("  nothing   to change ")
    assert ed.summary == "nothing to change"
    with pytest.raises(EditRefused, match="finish was already called"):
        ed.add("Late lesson.", ["r1"])


def test_ranking_is_by_hits_then_recency_then_id() -> None:
    lessons = [
        lesson("L-b", "b", hits=1, seen_days_ago=1),
        lesson("L-a", "a", hits=1, seen_days_ago=1),
        lesson("L-c", "c", hits=4, seen_days_ago=9),
        lesson("L-d", "d", hits=1, seen_days_ago=0),
    ]
    assert [x.id for x in rank_lessons(lessons)] == ["L-c", "L-d", "L-a", "L-b"]


def test_stale_lessons_expire_by_last_seen() -> None:
    book = LessonBook(lessons=[lesson("L-1", "old", seen_days_ago=31), lesson("L-2", "new")])
    kept, expired = expire_stale(book, NOW, timedelta(days=30))
    assert [x.id for x in kept.lessons] == ["L-2"]
    assert [x.id for x in expired] == ["L-1"]
    same, none = expire_stale(kept, NOW, timedelta(days=30))
    assert same is kept
    assert none == []


def test_successful_runs_that_used_a_lesson_keep_it_fresh() -> None:
    from agent_loop_common.records import RunRecord, Target, TargetKind

    def run(outcome: Outcome, used: list[str], when: datetime) -> RunRecord:
        return RunRecord(
            run_id=f"r-{outcome.value}",
            role=Role.BUILDER,
            target=Target(kind=TargetKind.ISSUE, number=1),
            outcome=outcome,
            started_at=when,
            finished_at=when,
            lesson_ids=used,
        )

    book = LessonBook(
        lessons=[lesson("L-1", "x", seen_days_ago=40), lesson("L-2", "y", seen_days_ago=40)]
    )
    refreshed = refresh_from_usage(
        book, [run(Outcome.OPENED_PR, ["L-1"], NOW), run(Outcome.ERROR, ["L-2"], NOW)]
    )
    by_id = {x.id: x for x in refreshed.lessons}
    assert by_id["L-1"].last_seen_at == NOW
    assert by_id["L-2"].last_seen_at == NOW - 40 * DAY
    assert refresh_from_usage(book, []) is book


def test_evidence_of_a_record_names_its_target_and_what_it_opened() -> None:
    from agent_loop_common.records import Links, RunRecord, Target, TargetKind

    record = RunRecord(
        run_id="r",
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=7),
        outcome=Outcome.OPENED_ISSUES,
        started_at=NOW,
        finished_at=NOW,
        links=Links(
            pr_url="https://github.com/a/b/pull/9",
            issue_urls=["https://github.com/a/b/issues/10", "https://x/issues/11?x=1"],
        ),
    )
    assert evidence_of(record).refs == ("issue-7", "pr-9", "issue-10", "issue-11")


def test_a_run_whose_tests_proved_nothing_never_reads_as_a_test_pass() -> None:
    """Issue 22: `no_evidence` is its own status, shown as such to the distiller."""
    from agent_loop_common.metrics import tally_records
    from agent_loop_common.records import RunRecord, Target, TargetKind, TestEvidence
    from agent_loop_distiller._prompts import build_prompt

    record = RunRecord(
        run_id="r",
        role=Role.BUILDER,
        target=Target(kind=TargetKind.ISSUE, number=7),
        outcome=Outcome.OPENED_PR,
        started_at=NOW,
        finished_at=NOW,
        tests=TestEvidence(
            command="/bin/false",
            source="setting",
            backend="bwrap",
            status="no_evidence",
            summary="exit 1 (base: exit 1)",
        ),
    )
    prompt = build_prompt(LessonBook(), [record], [])
    assert "NO EVIDENCE (the tests ran but prove nothing; not a test pass)" in prompt
    assert ": passed" not in prompt
    # the metrics count verifier passes and outcomes, no test status: a "no evidence"
    # run cannot inflate a test-pass figure (a new one must handle `no_evidence`)
    assert not [k for k in tally_records([record]).model_dump() if "test" in k]
