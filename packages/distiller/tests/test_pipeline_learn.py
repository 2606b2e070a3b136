"""New records become lessons with provenance and a budgeted digest; nothing new costs nothing."""

from __future__ import annotations

from typing import Any

import pytest

from agent_loop_common.memory import read_context, read_grades, read_rollups
from agent_loop_common.metrics import total_tally
from agent_loop_common.records import GradeState, Outcome, Role, TargetKind
from agent_loop_distiller import DISTILLER_MARKER, TickKind, estimate_tokens
from agent_loop_testing import ScriptedModel, call, turn

NOTES = "The change has no test for the empty input case; add one before submitting."


@pytest.fixture
async def history(
    make_record: Any, write_record: Any, agent_pr: Any, pr_url: Any
) -> dict[str, Any]:
    """A rejected builder run, a builder run that opened a PR, and a reviewer fix on it."""
    pr = agent_pr(4, "Handle empty widgets")
    rejected = await write_record(
        make_record(
            "b-rejected",
            number=3,
            title="Parse sizes",
            outcome=Outcome.REJECTED,
            notes=[(False, NOTES), (False, "Still no test for empty input.")],
        )
    )
    opened = await write_record(
        make_record("b-opened", number=4, title="Handle empty widgets", pr_url=pr_url(pr))
    )
    fixed = await write_record(
        make_record(
            "r-fixed",
            role=Role.REVIEWER,
            kind=TargetKind.PR,
            number=pr,
            title="Handle empty widgets",
            outcome=Outcome.PUSHED_FIX,
        )
    )
    return {"pr": pr, "rejected": rejected, "opened": opened, "fixed": fixed}


# The three records `history` writes (and so the runs the first tick ingests and rolls up).
HISTORY_RECORDS = 3
# The turns `lesson_script` scripts: read a record, add a lesson, finish, answer.
LESSON_SCRIPT_CALLS = 4


def lesson_script() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[call("read_record", run_id="b-rejected").expecting("REJECTED", NOTES)],
                # Verifier notes of rejected attempts come before every other record.
                expect_in_messages=["run b-rejected"],
                expect_in_system=DISTILLER_MARKER,
            ),
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text="Add a test for empty inputs with every parser change.",
                        evidence_run_ids=["b-rejected"],
                        roles=["builder"],
                    ).expecting("Added")
                ]
            ),
            turn(tool_calls=[call("finish", summary="One lesson.").expecting("1 edit")]),
            turn("Added one lesson."),
        ],
        name="distiller",
    )


async def test_new_records_become_lessons_with_provenance_and_a_budgeted_digest(
    history: dict[str, Any], install: Any, tick: Any, memory: Any, settings: Any
) -> None:
    seeded = history
    model = install(lesson_script())

    result = await tick()

    model.assert_finished()
    prompt = model.calls[0].messages[0]["content"]
    assert prompt.index("b-rejected") < prompt.index("b-opened")
    assert result.kind is TickKind.DISTILLED
    assert result.record is not None
    assert result.record.outcome is Outcome.DISTILLED
    assert result.record.target.kind is TargetKind.REPO
    assert [s.tool for s in result.record.trace if s.tool != "llm"] == [
        "read_record",
        "add_lesson",
        "finish",
    ]
    assert result.record.usage.llm_calls == LESSON_SCRIPT_CALLS
    assert result.ingested == HISTORY_RECORDS

    context = await read_context(memory)
    (lesson,) = context.lessons.lessons
    assert lesson.text == "Add a test for empty inputs with every parser change."
    assert lesson.source_run_ids == ["b-rejected"]
    assert lesson.source_refs == ["issue-3"]
    assert lesson.hits == 1
    assert lesson.roles == [Role.BUILDER]
    assert lesson.last_seen_at == seeded["rejected"].finished_at

    digest = context.digest
    assert estimate_tokens(digest) <= settings.digest_token_budget
    assert f"[{lesson.id}]" in digest
    assert (
        f'issue #4 -> PR #{seeded["pr"]} "Handle empty widgets": open after 1 review round'
        in digest
    )

    (grade,) = [
        g
        for m in {seeded["opened"].finished_at.strftime("%Y%m")}
        for g in await read_grades(memory, m)
    ]
    assert grade.state is GradeState.OPEN
    assert grade.run_id == "b-opened"
    assert grade.review_run_ids == ["r-fixed"]
    rollups = await read_rollups(
        memory, seeded["opened"].finished_at.date(), seeded["opened"].finished_at.date()
    )
    assert total_tally(rollups).runs == HISTORY_RECORDS


async def test_a_pass_with_nothing_new_calls_no_model_and_writes_nothing(
    history: dict[str, Any], memory_snapshot: Any, install: Any, tick: Any, runtimes: Any
) -> None:
    install(lesson_script())
    first = await tick()
    assert first.kind is TickKind.DISTILLED
    # The next tick sees only the first tick's own record: no news for a model.
    before = memory_snapshot()
    idle_model = install(ScriptedModel([], name="must not be called"))

    second = await tick()

    assert second.kind is TickKind.IDLE
    assert second.record is None
    assert idle_model.calls == []
    idle_model.assert_finished()
    rt = runtimes[-1]
    assert rt.usage.total_tokens == 0
    assert memory_snapshot() == before  # context, ledger, rollups, grades, runs untouched
    assert rt.memory.meter.uploads == 1  # the idle counter, nothing else
    assert rt.github.stats.total == rt.github.stats.not_modified == 1  # one free 304


async def test_a_pass_on_an_empty_memory_is_idle_after_one_bookkeeping_pass(
    install: Any, tick: Any, runtimes: Any
) -> None:
    install(ScriptedModel([], name="must not be called"))
    first = await tick()
    # The first tick ever scans the whole retention window: it sets the watermark once.
    assert first.kind is TickKind.BOOKKEEPING
    assert first.record is None
    second = await tick()
    assert second.kind is TickKind.IDLE
    assert runtimes[-1].memory.meter.uploads == 1
