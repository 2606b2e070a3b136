"""Grades follow what humans did on GitHub, show up in metrics, and cost nothing when idle;
two ticks at once write the context once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

from agent_loop_common.memory import month_of, read_context, read_grades
from agent_loop_common.metrics import compute_metrics
from agent_loop_common.records import GradeState, Outcome
from agent_loop_distiller import TickKind, render_metrics
from agent_loop_testing import ScriptedModel, call, turn


def finish_only(expect: str = "") -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[call("finish", summary="Nothing to change.")],
                expect_in_messages=[expect] if expect else [],
            ),
            turn("Done."),
        ]
    )


def one_lesson(run_id: str) -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text="Keep pull requests small.",
                        evidence_run_ids=[run_id],
                        roles=[],
                    ).expecting("Added")
                ]
            ),
            turn(tool_calls=[call("finish", summary="One lesson.")]),
            turn("Done."),
        ]
    )


async def grades_now(memory: Any) -> dict[int, Any]:
    month = month_of(datetime.now(UTC).date())
    return {g.target.number: g for g in await read_grades(memory, month)}


async def test_merged_and_closed_prs_are_graded_and_show_in_metrics(
    make_record: Any,
    write_record: Any,
    agent_pr: Any,
    pr_url: Any,
    install: Any,
    tick: Any,
    memory: Any,
    emulator: Any,
    runtimes: Any,
) -> None:
    merged_pr = agent_pr(1, "Add widget sizes")
    closed_pr = agent_pr(2, "Rename the widget module")
    await write_record(
        make_record("b-1", number=1, title="Add widget sizes", pr_url=pr_url(merged_pr))
    )
    await write_record(
        make_record("b-2", number=2, title="Rename the widget module", pr_url=pr_url(closed_pr))
    )
    install(one_lesson("b-1"))
    first = await tick()
    assert first.kind is TickKind.DISTILLED
    grades = await grades_now(memory)
    assert {n: g.state for n, g in grades.items()} == {
        merged_pr: GradeState.OPEN,
        closed_pr: GradeState.OPEN,
    }

    emulator.merge_pull(merged_pr)
    emulator.close_pull(closed_pr)
    # No new builder or reviewer record: the decisions on GitHub are the news.
    model = install(
        finish_only(
            expect=f"PR #{closed_pr} for issue #2 (builder run b-2): closed WITHOUT merging"
        )
    )
    second = await tick()

    model.assert_finished()
    assert second.kind is TickKind.DISTILLED
    grades = await grades_now(memory)
    assert grades[merged_pr].state is GradeState.MERGED
    assert grades[closed_pr].state is GradeState.CLOSED_UNMERGED
    metrics = compute_metrics([], grades.values())
    one_of_two = 1 / 2  # the two graded PRs: one merged, one closed unmerged
    assert metrics.merged_rate == one_of_two
    assert metrics.closed_unmerged_rate == one_of_two
    assert second.report is not None
    html = render_metrics(second.report)
    assert "merged_rate" in html
    assert "50.0%" in html
    digest = (await read_context(memory)).digest
    assert f'PR #{merged_pr} "Add widget sizes": merged' in digest
    assert f'PR #{closed_pr} "Rename the widget module": closed without merge' in digest

    # Nothing changed since: the one listing is a free 304 and nothing else happens.
    idle_model = install(ScriptedModel([], name="must not be called"))
    third = await tick()
    assert third.kind is TickKind.IDLE
    assert idle_model.calls == []
    stats = runtimes[-1].github.stats
    one_free_listing = (1, 1)  # (requests, of which 304 Not Modified)
    assert (stats.total, stats.not_modified) == one_free_listing


async def test_sub_issues_completed_are_graded(
    make_record: Any,
    write_record: Any,
    issue_url: Any,
    install: Any,
    tick: Any,
    memory: Any,
    emulator: Any,
) -> None:
    parent = emulator.add_issue("Big feature")
    subs = [emulator.add_issue(f"Part {i}") for i in (1, 2)]
    await write_record(
        make_record(
            "b-split",
            number=parent,
            title="Big feature",
            outcome=Outcome.OPENED_ISSUES,
            issue_urls=[issue_url(n) for n in subs],
        )
    )
    install(finish_only())
    await tick()
    grade = (await grades_now(memory))[parent]
    assert (grade.state, grade.sub_issues, grade.sub_issues_closed) == (GradeState.OPEN, subs, [])

    for n in subs:
        emulator.close_issue(n)
    install(
        finish_only(
            expect=f"issue #{parent} (builder run b-split): every one of its 2 sub-issues was closed"
        )
    )
    await tick()

    grade = (await grades_now(memory))[parent]
    assert grade.state is GradeState.MERGED
    assert grade.sub_issues_closed == subs
    assert compute_metrics([], [grade]).sub_issue_completion_rate == 1.0
    assert "(2 of 2 closed)" in (await read_context(memory)).digest


async def test_review_rounds_count_each_reviewer_run_once(
    make_record: Any,
    write_record: Any,
    agent_pr: Any,
    pr_url: Any,
    install: Any,
    tick: Any,
    memory: Any,
) -> None:
    from agent_loop_common.records import Role, TargetKind

    pr = agent_pr(5, "Fix totals")
    await write_record(make_record("b-5", number=5, pr_url=pr_url(pr)))
    fix_runs = ["r-1", "r-2"]
    for run in fix_runs:
        await write_record(
            make_record(
                run, role=Role.REVIEWER, kind=TargetKind.PR, number=pr,
                outcome=Outcome.PUSHED_FIX,
            )
        )  # fmt: skip
    await write_record(
        make_record(
            "r-clean", role=Role.REVIEWER, kind=TargetKind.PR, number=pr,
            outcome=Outcome.REVIEWED_CLEAN,
        )
    )  # fmt: skip
    install(finish_only())
    await tick()
    grade = (await grades_now(memory))[pr]
    # A round is a reviewer run that pushed a fix; the clean review is no round.
    assert grade.review_rounds == len(fix_runs)
    assert grade.review_run_ids == fix_runs


async def test_two_concurrent_passes_write_the_context_once(
    make_record: Any, write_record: Any, install: Any, tick: Any, memory: Any, runtimes: Any
) -> None:
    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "No test.")]))
    model = install(one_lesson("b-1"))

    results = await asyncio.gather(tick(), tick())

    model.assert_finished()  # exactly one distillation's turns were used
    kinds = sorted(r.kind.value for r in results)
    assert kinds.count(TickKind.DISTILLED.value) == 1
    assert set(kinds) <= {TickKind.DISTILLED.value, TickKind.BUSY.value, TickKind.IDLE.value}
    (lesson,) = (await read_context(memory)).lessons.lessons
    assert lesson.source_run_ids == ["b-1"]
    assert sum(r.record is not None for r in results) == 1
    winner = next(r.record.run_id for r in results if r.record is not None)
    (loser,) = [rt for rt in runtimes if rt.run_id != winner]
    assert loser.memory.meter.uploads == 1  # its idle counter only


async def test_a_pass_stops_while_another_distiller_holds_the_claim(
    make_record: Any,
    write_record: Any,
    memory_snapshot: Any,
    install: Any,
    tick: Any,
    emulator: Any,
    runtimes: Any,
) -> None:
    from agent_loop_common.claims import Claimer
    from agent_loop_testing import emulator_client

    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "No test.")]))
    other = Claimer(emulator_client(emulator), deployment="default", role="distiller")
    assert await other.claim("repo", "distiller") is not None
    before = memory_snapshot()
    model = install(ScriptedModel([], name="must not be called"))

    result = await tick()

    assert result.kind is TickKind.BUSY
    assert result.record is None
    assert model.calls == []
    assert memory_snapshot() == before
    assert runtimes[-1].memory.meter.uploads == 1


async def test_github_activity_that_changes_no_grade_does_not_claim(
    make_record: Any,
    write_record: Any,
    agent_pr: Any,
    pr_url: Any,
    memory_snapshot: Any,
    install: Any,
    tick: Any,
    emulator: Any,
    runtimes: Any,
) -> None:
    pr = agent_pr(1, "Add sizes")
    await write_record(make_record("b-1", number=1, title="Add sizes", pr_url=pr_url(pr)))
    install(finish_only())
    assert (await tick()).kind is TickKind.DISTILLED
    emulator.add_issue("Someone files a new issue")  # the open list changes; no grade does
    before = memory_snapshot()
    install(ScriptedModel([], name="must not be called"))

    result = await tick()

    assert result.kind is TickKind.IDLE
    routes = runtimes[-1].github.stats.by_route()
    assert routes == {"GET /repos/{owner}/{repo}/issues": {200: 1}}  # no claim, no PR reads
    assert memory_snapshot() == before
