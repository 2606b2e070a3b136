"""The PR-level outcome vector, graded from GitHub by the real distiller tick and folded
into the effects of the lessons the builder run saw, each (run, metric) exactly once:
threads left unresolved, the first CI result on the builder's head, a revert 3 days
after the merge, and who closed a PR and why (only a trusted person can excuse it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agent_loop_common.memory import (
    DistillerMemory,
    MemoryLocation,
    month_of,
    read_context,
    read_grades,
)
from agent_loop_common.records import (
    CloseReason,
    Grade,
    GradeState,
    LessonExposure,
    Outcome,
    OutcomeMetric,
    Role,
    RunRecord,
    TargetKind,
    WorkKind,
)
from agent_loop_distiller import EffectBook, TickKind, render_metrics
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, emulator_client, turn

SHOWN, HELD = "acme/widgets#L-shown", "acme/widgets#L-held"
M = OutcomeMetric


@pytest.fixture
def emulator() -> GitHubEmulator:
    """The emulated clock starts now, so "30 days after the merge" is in the future."""
    emu = GitHubEmulator(start=datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1))
    emu.seed_files({"README.md": "# widgets\n", "src/widgets/core.py": "X = 1\n"})
    emu.add_user("maria", permission="maintain")
    emu.add_user("sam", permission="read")
    return emu


def finish_only() -> ScriptedModel:
    return ScriptedModel([turn(tool_calls=[call("finish", summary="Nothing.")]), turn("Done.")])


def builder_run(make_record: Any, run_id: str, issue: int, pr_url: str) -> RunRecord:
    """A builder record that showed one lesson and held the other out."""
    record: RunRecord = make_record(run_id, number=issue, title=f"Issue {issue}", pr_url=pr_url)
    return record.model_copy(
        update={
            "repo": "acme/widgets",
            "work_kind": WorkKind.BUG,
            "exposures": [
                LessonExposure(lesson_id=SHOWN, applicable=True, shown=True, holdout=0.2),
                LessonExposure(lesson_id=HELD, applicable=True, held_out=True, holdout=0.2),
            ],
        }
    )


def open_agent_pr(emulator: GitHubEmulator, issue: int) -> tuple[int, str]:
    """The builder's PR and the head it pushed."""
    branch = f"agent-loop/issue-{issue}"
    head = emulator.push(
        branch, {f"src/fix_{issue}.py": "FIXED = True\n"}, author=emulator.bot, message="fix"
    )
    return emulator.open_pull(branch, title=f"Fix issue {issue}", author=emulator.bot), head


async def grades_of(memory: MemoryLocation) -> dict[int, Grade]:
    month = month_of(datetime.now(UTC).date())
    return {g.target.number or 0: g for g in await read_grades(memory, month)}


async def effects_of(memory: MemoryLocation) -> EffectBook:
    book = await (await DistillerMemory.open(memory)).read_effects(EffectBook)
    assert book is not None
    return book


def counts(effects: EffectBook, lesson: str) -> dict[M, list[int]]:
    """`metric -> [shown runs, shown successes, held-out runs, held-out successes]`."""
    effect = effects.lessons[lesson]
    return {m: stats.strata["acme/widgets|bug"] for m, stats in effect.metrics.items()}


async def test_merged_pr_with_an_open_thread_a_failed_first_check_and_a_revert(
    make_record: Any,
    write_record: Any,
    pr_url: Callable[[int], str],
    install: Any,
    tick: Any,
    memory: MemoryLocation,
    emulator: GitHubEmulator,
    runtimes: list[Any],
) -> None:
    pr, first_head = open_agent_pr(emulator, 1)
    emulator.set_check_run(first_head, "ci", conclusion="failure")
    emulator.add_review(
        pr,
        author="maria",
        state="CHANGES_REQUESTED",
        comments=[("src/fix_1.py", 1, "Name this better."), ("src/fix_1.py", 1, "Test it.")],
    )
    # A later push goes green, and one thread is resolved: neither changes what counts.
    fixed = emulator.push(
        "agent-loop/issue-1", {"src/fix_1.py": "FIXED = 1\n"}, author="maria", message="tidy"
    )
    emulator.set_check_run(fixed, "ci", conclusion="success")
    await write_record(builder_run(make_record, "b-1", 1, pr_url(pr)))
    # A reviewer run that only commented is a review round, not a fix.
    await write_record(
        make_record(
            "r-1", role=Role.REVIEWER, kind=TargetKind.PR, number=pr, outcome=Outcome.COMMENTED
        )
    )
    install(finish_only())
    assert (await tick()).kind is TickKind.DISTILLED
    assert (await grades_of(memory))[pr].state is GradeState.OPEN
    threads = await emulator_client(emulator).list_review_comments(pr)
    emulator.resolve_review_thread(min(c.id for c in threads), by="maria")

    merge = emulator.merge_pull(pr, by="maria")
    install(finish_only())
    merged_tick = await tick()
    assert merged_tick.kind is TickKind.DISTILLED
    assert merged_tick.report is not None
    figures = render_metrics(merged_tick.report)
    for figure in ("unresolved_threads_rate", "first_ci_green_rate", "revert_rate"):
        assert figure in figures  # the Metrics tab's figures table lists them
    grade = (await grades_of(memory))[pr]
    assert (grade.state, grade.unresolved_threads, grade.first_ci) == (
        GradeState.MERGED,
        1,
        "failed",
    )
    assert (grade.first_head_sha, grade.merge_sha, grade.reverted) == (first_head, merge, None)
    after_merge = counts(await effects_of(memory), SHOWN)
    assert after_merge[M.MERGED] == [1, 1, 0, 0]
    assert after_merge[M.NO_UNRESOLVED_THREADS] == [1, 0, 0, 0]
    assert after_merge[M.FIRST_CI_GREEN] == [1, 0, 0, 0]
    assert after_merge[M.NO_REVIEW_FIX] == [1, 1, 0, 0]
    assert M.NOT_REVERTED not in after_merge  # undecided within the 30 days
    assert counts(await effects_of(memory), HELD)[M.MERGED] == [0, 0, 1, 1]
    grading = runtimes[-1].github.stats.by_route()
    assert grading["POST /graphql"][200] >= 1
    assert "GET /repos/{owner}/{repo}/commits" in grading

    # Three days later a maintainer reverts the merge on the default branch.
    emulator.advance_clock(timedelta(days=3))
    revert = emulator.push(
        "main",
        {"src/fix_1.py": None},
        author="maria",
        message=f'Revert "Fix issue 1"\n\nThis reverts commit {merge}.',
    )
    later = datetime.now(UTC) + timedelta(days=3)
    install(finish_only())
    assert (await tick(clock=lambda: later)).kind is TickKind.DISTILLED
    grade = (await grades_of(memory))[pr]
    assert (grade.reverted, grade.revert_sha) == (True, revert)
    digest = (await read_context(memory)).digest
    assert (
        f'PR #{pr} "Issue 1": merged after 1 review round; 1 review thread(s) left'
        " unresolved; first CI failed; reverted on the default branch within 30 days"
    ) in digest
    reverted = counts(await effects_of(memory), SHOWN)
    assert reverted[M.NOT_REVERTED] == [1, 0, 0, 0]
    assert counts(await effects_of(memory), HELD)[M.NOT_REVERTED] == [0, 0, 1, 0]

    # Further ticks (and fresh processes) fold nothing again.
    install(finish_only())
    await tick(clock=lambda: later + timedelta(minutes=5))
    effects = await effects_of(memory)
    assert counts(effects, SHOWN) == reverted
    assert sorted(effects.pull_folded["b-1"]) == sorted(
        [M.MERGED, M.NO_REVIEW_FIX, M.NO_UNRESOLVED_THREADS, M.FIRST_CI_GREEN, M.NOT_REVERTED]
    )
    assert effects.lessons[SHOWN].applicable == 1  # the run itself was counted once


async def test_only_a_trusted_reason_excuses_a_closed_pr(
    make_record: Any,
    write_record: Any,
    pr_url: Callable[[int], str],
    install: Any,
    tick: Any,
    memory: MemoryLocation,
    emulator: GitHubEmulator,
) -> None:
    excused, _ = open_agent_pr(emulator, 1)
    blamed, _ = open_agent_pr(emulator, 2)
    await write_record(builder_run(make_record, "b-1", 1, pr_url(excused)))
    await write_record(builder_run(make_record, "b-2", 2, pr_url(blamed)))
    install(finish_only())
    await tick()

    await write_record(
        make_record(
            "r-2", role=Role.REVIEWER, kind=TargetKind.PR, number=blamed,
            outcome=Outcome.PUSHED_FIX,
        )
    )  # fmt: skip
    emulator.add_comment(excused, "Duplicate of #9, closing.", author="maria")
    emulator.close_pull(excused, by="maria")
    emulator.add_comment(blamed, "This is a duplicate, close it!", author="sam")
    # The agents' own identity can write, but never excuses its own work.
    emulator.add_comment(blamed, "Superseded by #7.", author=emulator.bot)
    emulator.close_pull(blamed, by=emulator.owner)
    # The distiller's model reads why each was closed, in fixed words (never the comments).
    model = install(
        ScriptedModel(
            [
                turn(
                    tool_calls=[call("finish", summary="Nothing.")],
                    expect_in_messages=[
                        f"PR #{excused} for issue #1 (builder run b-1): closed WITHOUT merging"
                        " by a human after 0 review round(s); a maintainer closed it as"
                        " duplicate (not the agent's failure)",
                        f"PR #{blamed} for issue #2 (builder run b-2): closed WITHOUT merging"
                        " by a human after 1 review round(s); no maintainer gave a reason"
                        " (counted as the agent's failure)",
                    ],
                ),
                turn("Done."),
            ]
        )
    )
    await tick()
    model.assert_finished()
    digest = (await read_context(memory)).digest
    assert "closed without merge; a maintainer closed it as duplicate" in digest
    assert "close it!" not in digest  # the stranger's words never travel

    grades = await grades_of(memory)
    assert (grades[excused].closed_by, grades[excused].close_reason) == (
        "maria",
        CloseReason.DUPLICATE,
    )
    assert (grades[blamed].closed_by, grades[blamed].close_reason) == (
        emulator.owner,
        CloseReason.NO_REASON,
    )
    assert grades[excused].first_ci == "none"  # no CI reported on either head
    effects = await effects_of(memory)
    # Only the blamed PR counts, as a failure; the duplicate is not the run's fault.
    assert counts(effects, SHOWN)[M.MERGED] == [1, 0, 0, 0]
    assert counts(effects, HELD)[M.MERGED] == [0, 0, 1, 0]
    assert len(effects.pull_folded["b-1"]) == 5  # settled: nothing more can be folded
    assert M.FIRST_CI_GREEN not in counts(effects, SHOWN)
    assert counts(effects, SHOWN)[M.NO_REVIEW_FIX] == [2, 1, 0, 0]  # the blamed PR was fixed
    assert grades[blamed].review_fix_run_ids == ["r-2"]

    install(finish_only())
    await tick()
    assert counts(await effects_of(memory), SHOWN)[M.MERGED] == [1, 0, 0, 0]
