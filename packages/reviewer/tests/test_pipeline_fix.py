"""End to end against the emulator (in process) with the real Agent loop: feedback and
failing checks become verified fixes pushed by compare-and-swap, with replies."""

from __future__ import annotations

from typing import Any

import pytest

from agent_loop_common.memory import read_reviewed
from agent_loop_common.records import Outcome, Role
from agent_loop_common.settings import Settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_reviewer import REVIEWER_MARKER, run_reviewer_tick
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, emulator_client, turn
from agent_loop_testing.pytest_plugin import AgentRuntime, Install, Stored


def clean() -> ScriptedModel:
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("no_changes", reason="Looks right to me.")]),
                turn("Done."),
            ]
        }
    )


# The calls `fixing` scripts: read, stage, submit and a closing answer for the reviewer,
# then a diff and a verdict for the verifier.
FIXING_CALLS = 4 + 2


def fixing(fixed: str, replies: list[dict[str, object]], *, expect: list[str]) -> ScriptedModel:
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("read_file", path="src/calc.py").expecting("return a - b")]),
                turn(
                    tool_calls=[call("stage_file", path="src/calc.py", content=fixed)],
                    expect_in_messages=expect,
                ),
                turn(
                    tool_calls=[
                        call("submit_fix", summary="add() now adds.", replies=replies).expecting(
                            "Submitted"
                        )
                    ]
                ),
                turn("Done."),
            ],
            VERIFIER_MARKER: [
                turn(tool_calls=[call("get_diff")], expect_in_messages=["+    return a + b"]),
                turn('{"verified": true, "notes": "add() adds; the feedback is answered."}'),
            ],
        }
    )


@pytest.fixture
async def reviewed_pr(
    emulator: GitHubEmulator, open_pr: Any, install: Install, tick: Any
) -> tuple[int, str]:
    """An agent PR the reviewer has passed clean once: its number and the reviewed head."""
    number = await open_pr()
    install(clean())
    record = await tick()
    assert record is not None
    assert record.outcome is Outcome.REVIEWED_CLEAN
    return number, emulator.pull(number).head_sha


async def test_review_comments_become_a_verified_fix_with_replies(
    reviewed_pr: tuple[int, str],
    emulator: GitHubEmulator,
    pr_branch: str,
    pr_files: dict[str, str],
    fixed_calc: str,
    install: Install,
    tick: Any,
    stored: Stored,
    agent_runtime: AgentRuntime,
) -> None:
    number, old_head = reviewed_pr
    review_id = emulator.add_review(
        number,
        author="alice",
        state="CHANGES_REQUESTED",
        body="add() subtracts.",
        comments=[("src/calc.py", 2, "This should be a + b.")],
    )
    conversation_id = emulator.add_comment(number, "Also keep the test, please.", author="alice")
    async with emulator_client(emulator) as gh:
        (inline,) = await gh.list_review_comments(number)
    model = fixing(
        fixed_calc,
        [
            {"comment_id": inline.id, "reply": "Fixed: it returns a + b now."},
            {"comment_id": conversation_id, "reply": "The test stays as it is."},
            {"comment_id": review_id, "reply": "Done, see the new commit."},
        ],
        expect=[
            f"[new] inline comment id={inline.id} by @alice on src/calc.py:2",
            f"[new] conversation comment id={conversation_id}",
            f"[new] review id={review_id} by @alice, CHANGES_REQUESTED",
        ],
    )
    install(model)

    async with agent_runtime(Role.REVIEWER) as rt:
        record = await run_reviewer_tick(rt)
        mark = await read_reviewed(rt.memory, number)
    model.assert_finished()

    assert record is not None
    assert record.outcome is Outcome.PUSHED_FIX
    assert record.error == ""
    (attempt,) = record.attempts
    assert attempt.verified
    assert attempt.staged_paths == ["src/calc.py"]
    assert attempt.notes == "add() adds; the feedback is answered."
    assert attempt.tokens > 0
    assert record.usage.llm_calls == FIXING_CALLS
    assert {"claim", "review", "verify", "push", "reply", "record"} <= set(record.stage_seconds)
    assert stored(record) == record

    new_head = emulator.pull(number).head_sha
    assert new_head != old_head
    (commit, *_) = emulator.log(pr_branch)
    assert commit.sha == new_head
    assert commit.parents == (old_head,)
    assert f"Agent-Loop-Run: {record.run_id}" in commit.message
    assert emulator.file_at(pr_branch, "src/calc.py") == fixed_calc.encode()
    assert (
        emulator.file_at(pr_branch, "tests/test_calc.py") == pr_files["tests/test_calc.py"].encode()
    )

    async with emulator_client(emulator) as gh:
        replies = [c for c in await gh.list_review_comments(number) if c.in_reply_to_id]
    assert [(r.user.login, r.in_reply_to_id, r.body) for r in replies] == [
        (emulator.bot, inline.id, "Fixed: it returns a + b now.")
    ]
    mine = [c.body for c in emulator.comments(number) if c.author == emulator.bot]
    assert any(
        "> Also keep the test, please." in b and "The test stays as it is." in b for b in mine
    )
    assert any("> add() subtracts." in b and "Done, see the new commit." in b for b in mine)
    (summary,) = [b for b in mine if "pushed `" in b]
    assert f"pushed `{new_head[:7]}` on top of `{old_head[:7]}`" in summary
    assert "Replied to 3 comment(s)" in summary
    assert f"head={old_head}" in summary
    assert "checks=0" in summary
    assert mine.index(summary) > max(i for i, b in enumerate(mine) if "> " in b)

    assert mark is not None
    assert mark.head_sha == new_head  # its own push is not reviewed again
    assert mark.outcome is Outcome.PUSHED_FIX
    idle = ScriptedModel()
    install(idle)
    assert await tick() is None
    idle.assert_finished()
    assert idle.calls == []


async def test_a_failing_check_is_fixed_then_the_attempts_run_out(
    emulator: GitHubEmulator, open_pr: Any, fixed_calc: str, install: Install, tick: Any
) -> None:
    one_fix = {"reviewer_max_check_fixes": 1}
    number = await open_pr()
    head = emulator.pull(number).head_sha
    emulator.set_check_run(
        head,
        "tests",
        conclusion="failure",
        title="1 failed",
        text="test_add: assert add(1, 2) == 3\nAssertionError: -1 != 3",
    )
    emulator.set_check_run(head, "lint", conclusion="success")
    model = fixing(
        fixed_calc,
        [],
        expect=["Failing checks on the head commit", "AssertionError: -1 != 3", "attempt 1 of 1"],
    )
    install(model)
    record = await tick(**one_fix)
    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.PUSHED_FIX
    fixed_head = emulator.pull(number).head_sha
    assert emulator.log(fixed_head)[0].parents == (head,)
    (summary,) = [c.body for c in emulator.comments(number) if "pushed `" in c.body]
    assert "checks=1" in summary

    # CI fails on the pushed head too: the one attempt is used, so the reviewer says it
    # stops, without a model call, and then leaves later failures alone.
    emulator.set_check_run(fixed_head, "tests", conclusion="failure", text="still red")
    no_model = ScriptedModel()
    install(no_model)
    stop = await tick(**one_fix)
    assert stop is not None
    assert stop.outcome is Outcome.COMMENTED
    assert stop.usage.llm_calls == 0
    (note,) = [c.body for c in emulator.comments(number) if "stopped fixing" in c.body]
    assert "after 1 attempt(s)" in note
    assert "stop=1" in note

    emulator.set_check_run(fixed_head, "tests", conclusion="failure", text="red again")
    assert await tick(**one_fix) is None
    no_model.assert_finished()
    assert no_model.calls == []
    assert emulator.pull(number).head_sha == fixed_head


async def test_a_human_push_during_the_run_is_never_overwritten(
    reviewed_pr: tuple[int, str],
    emulator: GitHubEmulator,
    pr_branch: str,
    fixed_calc: str,
    install: Install,
    hooked: Any,
    agent_runtime: AgentRuntime,
) -> None:
    number, old_head = reviewed_pr
    emulator.add_comment(number, "add() subtracts; please fix.", author="alice")
    model = fixing(fixed_calc, [], expect=["[new] conversation comment"])
    human_version = "def add(a, b):\n    return sum((a, b))\n"

    def human_pushes() -> None:
        emulator.push(pr_branch, {"src/calc.py": human_version}, author="alice", message="my fix")

    install(model, via=hooked(model, VERIFIER_MARKER, human_pushes))
    async with agent_runtime(Role.REVIEWER) as rt:
        record = await run_reviewer_tick(rt)
        mark = await read_reviewed(rt.memory, number)
    model.assert_finished()

    assert record is not None
    assert record.outcome is Outcome.CONFLICT
    assert "nothing was overwritten" in record.error
    assert [a.verified for a in record.attempts] == [True]
    assert "push" in record.stage_seconds
    assert "reply" not in record.stage_seconds
    (head_commit, *_) = emulator.log(pr_branch)
    assert head_commit.message.startswith("my fix")
    assert head_commit.parents == (old_head,)
    assert emulator.file_at(pr_branch, "src/calc.py") == human_version.encode()
    assert not [c for c in emulator.comments(number) if "pushed `" in c.body]
    assert mark is not None
    assert mark.head_sha == old_head  # the human's head is still due for its own review
    assert emulator.ref_sha(f"agent-loop/claims/pr-{number}") is None


async def test_a_fix_that_never_verifies_is_not_pushed(
    reviewed_pr: tuple[int, str],
    emulator: GitHubEmulator,
    settings: Settings,
    fixed_calc: str,
    install: Install,
    tick: Any,
) -> None:
    number, old_head = reviewed_pr
    emulator.add_comment(number, "add() subtracts.", author="alice")
    reject = '{"verified": false, "notes": "tests/test_calc.py still expects the old name."}'
    model = ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("stage_file", path="src/calc.py", content=fixed_calc)]),
                turn(tool_calls=[call("submit_fix", summary="Fix add.", replies=[])]),
                turn("Done."),
                turn(
                    tool_calls=[call("submit_fix", summary="Fix add again.", replies=[])],
                    expect_in_messages=[
                        "Your previous try was rejected",
                        "still expects the old name",
                        "- src/calc.py (",
                    ],
                ),
                turn("Done."),
            ],
            VERIFIER_MARKER: [turn(reject), turn(reject)],
        }
    )
    install(model)
    record = await tick()
    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.REJECTED
    assert [(a.number, a.verified) for a in record.attempts] == [(1, False), (2, False)]
    assert emulator.pull(number).head_sha == old_head
    (note,) = [c.body for c in emulator.comments(number) if "no fix passed" in c.body]
    assert "still expects the old name" in note
    assert f"in {settings.max_tries} tries" in note  # max_tries=2 (conftest)


async def test_a_failed_model_call_rests_the_pr(
    emulator: GitHubEmulator, open_pr: Any, install: Install, tick: Any
) -> None:
    number = await open_pr()
    broken = ScriptedModel(routes={REVIEWER_MARKER: [turn(error=RuntimeError("provider down"))]})
    install(broken)
    record = await tick()
    broken.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.ERROR
    assert "provider down" in record.error
    assert any("agent-loop:backoff" in c.body for c in emulator.comments(number))
    assert emulator.ref_sha(f"agent-loop/claims/pr-{number}") is None

    idle = ScriptedModel()
    install(idle)
    assert await tick() is None  # resting, though its head is unreviewed
    idle.assert_finished()
    assert idle.calls == []


async def test_the_token_budget_stops_the_pass_as_budget_exceeded(
    emulator: GitHubEmulator,
    open_pr: Any,
    pr_branch: str,
    fixed_calc: str,
    install: Install,
    tick: Any,
) -> None:
    number = await open_pr()
    budget = {"max_tokens_per_run": 150}
    model = ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("stage_file", path="src/calc.py", content=fixed_calc)]),
                turn(tool_calls=[call("submit_fix", summary="Fix add.", replies=[])]),
            ],
        }
    )
    install(model)
    record = await tick(**budget)
    model.assert_finished()  # the third call was refused before it used a turn
    assert record is not None
    assert record.outcome is Outcome.BUDGET_EXCEEDED
    # A scripted call uses 120 tokens: the first stays under 150, the second goes over,
    # so the third is refused before it is made.
    calls_until_over_budget = 2
    assert record.usage.llm_calls == calls_until_over_budget
    assert record.attempts == []
    assert emulator.ref_sha(f"heads/{pr_branch}") == emulator.pull(number).head_sha
    assert any("agent-loop:backoff" in c.body for c in emulator.comments(number))
