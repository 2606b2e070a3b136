"""The editor keeps what leaves the book, refuses to overrule the operator or a
maintainer, and the upkeep folds citations, provenance and the operator's edits in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.records import (
    Citation,
    CitationStatus,
    Lesson,
    LessonAuthor,
    LessonBook,
    OperatorEdit,
    Outcome,
    Role,
    RunRecord,
    StaleLesson,
    Target,
    TargetKind,
)
from agent_loop_distiller import EditRefused, LessonEditor
from agent_loop_distiller._lessons import Evidence, parse_citations
from agent_loop_distiller._upkeep import (
    apply_operator_edits,
    expire_stale,
    mark_citations,
    stamp_origin,
)

NOW = datetime(2026, 12, 3, 9, 0, tzinfo=UTC)


def _lesson(lesson_id: str, **extra: object) -> Lesson:
    return Lesson.model_validate(
        {"id": lesson_id, "text": f"text {lesson_id}", "created_at": NOW, "updated_at": NOW} | extra
    )


def _editor(*lessons: Lesson) -> LessonEditor:
    return LessonEditor(
        book=LessonBook(lessons=list(lessons)),
        evidence={"r1": Evidence("r1", ("issue-1",), NOW)},
        now=NOW,
        repo="acme/api",
        visibility="public",
    )


def _record(run_id: str, *, shown: list[str], stale: list[StaleLesson]) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        role=Role.BUILDER,
        agent_id="builder@1",
        target=Target(kind=TargetKind.ISSUE, number=1),
        outcome=Outcome.OPENED_PR,
        started_at=NOW,
        finished_at=NOW,
        model="m",
        lesson_ids=shown,
        stale_lessons=stale,
    )


def test_new_ids_carry_the_repository_and_citations_are_parsed() -> None:
    editor = _editor()
    lesson = editor.add(
        "Run make lint first.", ["r1"], cites=["command:make lint", "symbol:add@src/calc.py"]
    )
    assert lesson.id.startswith("acme/api#L-")
    assert (lesson.repo, lesson.visibility) == ("acme/api", "public")
    assert lesson.citations == [
        Citation(kind="command", value="make lint"),
        Citation(kind="symbol", value="add", path="src/calc.py"),
    ]
    assert [e.op for e in lesson.history] == ["added"]
    with pytest.raises(EditRefused, match="bad citation"):
        parse_citations(["src/calc.py"])


def test_retired_and_merged_lessons_are_kept_with_reason_and_replacement() -> None:
    editor = _editor(_lesson("L-a"), _lesson("L-b"), _lesson("L-c"))
    editor.retire("L-a", "wrong since the refactor")
    merged = editor.merge(["L-b", "L-c"], "One lesson for both.")
    kept = {(r.lesson.id, r.kind): r for r in editor.retired}
    assert kept["L-a", "retired"].reason == "wrong since the refactor"
    assert kept["L-b", "superseded"].replaced_by == [merged.id]
    assert kept["L-c", "superseded"].replaced_by == [merged.id]


def test_the_distiller_cannot_overrule_a_pin_or_a_maintainer() -> None:
    editor = _editor(
        _lesson("L-pin", pinned=True),
        _lesson("L-own", author=LessonAuthor.MAINTAINER, author_login="maint"),
    )
    with pytest.raises(EditRefused, match="pinned"):
        editor.retire("L-pin", "old")
    with pytest.raises(EditRefused, match="maintainer"):
        editor.reword("L-own", "Other words.")
    assert editor.confirm("L-own", ["r1"]).hits == 1


def test_rewording_with_new_citations_fixes_a_stale_lesson() -> None:
    stale = _lesson(
        "L-s",
        citations=[Citation(kind="path", value="src/old.py")],
        citation_status=CitationStatus.BROKEN,
        stale_reason="missing",
    )
    fixed = _editor(stale).reword("L-s", "Edit src/new.py.", ["path:src/new.py"])
    assert fixed.citation_status is CitationStatus.UNCHECKED
    assert fixed.stale_reason == ""
    assert [e.op for e in fixed.history] == ["fixed"]


def test_runs_mark_citations_broken_or_ok() -> None:
    cited = [Citation(kind="path", value="a.py")]
    book = LessonBook(lessons=[_lesson("L-x", citations=cited), _lesson("L-y", citations=cited)])
    gone = StaleLesson(lesson_id="L-x", broken=["path a.py"], base_sha="abcdef1234567890")
    marked = mark_citations(book, [_record("r", shown=["L-y"], stale=[gone])], NOW)
    x, y = marked.lessons
    assert x.citation_status is CitationStatus.BROKEN
    assert x.stale_reason == "missing at abcdef123456: path a.py"
    assert y.citation_status is CitationStatus.OK
    assert mark_citations(marked, [_record("r", shown=[], stale=[gone])], NOW) == marked


def test_operator_edits_apply_once_and_keep_the_retired() -> None:
    book = LessonBook(lessons=[_lesson("L-a"), _lesson("L-b")])
    edits = [
        OperatorEdit(op="pin", lesson_id="L-a", login="ops", at=NOW),
        OperatorEdit(op="retire", lesson_id="L-b", reason="noise", login="ops", at=NOW),
        OperatorEdit(op="retire", lesson_id="L-zzz", at=NOW),
    ]
    after, retired = apply_operator_edits(book, edits, NOW)
    assert [(x.id, x.pinned) for x in after.lessons] == [("L-a", True)]
    assert [(r.lesson.id, r.by, r.reason) for r in retired] == [
        ("L-b", LessonAuthor.OPERATOR, "noise")
    ]
    again, none = apply_operator_edits(after, edits, NOW)
    assert again is after
    assert none == []


def test_pinned_and_maintainer_lessons_do_not_expire_and_origin_is_stamped() -> None:
    old = NOW - timedelta(days=90)
    book = LessonBook(
        lessons=[
            _lesson("L-old", last_seen_at=old),
            _lesson("L-pin", last_seen_at=old, pinned=True),
            _lesson("L-own", last_seen_at=old, author=LessonAuthor.MAINTAINER),
        ]
    )
    kept, expired = expire_stale(book, NOW, timedelta(days=30))
    assert [x.id for x in expired] == ["L-old"]
    stamped = stamp_origin(kept, "acme/api", "private")
    assert {(x.repo, x.visibility) for x in stamped.lessons} == {("acme/api", "private")}
