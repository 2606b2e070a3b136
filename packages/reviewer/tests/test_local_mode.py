"""The scheduled task itself in Flyte local mode: `reviewer_tick` against the emulator
served on loopback, writes as durable sub-tasks, memory under AGENT_LOOP_HOME."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

import pytest

from agent_loop_common.records import Outcome
from agent_loop_common.runtime import local_memory, run_tick
from agent_loop_common.settings import load_settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_reviewer import REVIEWER_MARKER, run_once
from agent_loop_reviewer.env import reviewer_tick
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, emulator_client, turn
from agent_loop_testing.pytest_plugin import Install, Stored

pytestmark = pytest.mark.slow


def test_reviewer_tick_pushes_a_verified_fix_in_local_mode(
    emulator: GitHubEmulator,
    open_pr: Any,
    pr_branch: str,
    fixed_calc: str,
    install: Install,
    stored: Stored,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    number = asyncio.run(open_pr())
    old_head = emulator.pull(number).head_sha
    emulator.add_review(number, author="alice", comments=[("src/calc.py", 2, "Should be a + b.")])

    async def inline_id() -> int:
        async with emulator_client(emulator) as gh:
            (comment,) = await gh.list_review_comments(number)
        return comment.id

    comment_id = asyncio.run(inline_id())
    reviewer_turns = [
        turn(
            tool_calls=[call("stage_file", path="src/calc.py", content=fixed_calc)],
            expect_in_messages=[f"[new] inline comment id={comment_id}"],
        ),
        turn(
            tool_calls=[
                call(
                    "submit_fix",
                    summary="add() adds.",
                    replies=[{"comment_id": comment_id, "reply": "Fixed."}],
                )
            ]
        ),
        turn("Done."),
    ]
    verifier_turns = [turn('{"verified": true, "notes": "Correct."}')]
    model = ScriptedModel(routes={REVIEWER_MARKER: reviewer_turns, VERIFIER_MARKER: verifier_turns})
    install(model)
    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.setenv("AGENT_LOOP_HOME", str(tmp_path / "home"))
        settings = load_settings()
        summary = run_tick(settings, reviewer_tick, target=number)
        model.assert_finished()

        idle = ScriptedModel()
        install(idle)
        assert run_once(settings=settings).idle
        idle.assert_finished()
        assert idle.calls == []

    assert summary.outcome == Outcome.PUSHED_FIX.value
    assert summary.target == f"pr#{number}"
    assert summary.pr_url.endswith(f"/pull/{number}")
    assert summary.llm_calls == len(reviewer_turns) + len(verifier_turns)  # one per turn
    assert summary.tries == 1
    new_head = emulator.pull(number).head_sha
    assert emulator.log(new_head)[0].parents == (old_head,)
    assert emulator.file_at(pr_branch, "src/calc.py") == fixed_calc.encode()
    assert any(c.body.startswith("🔧") for c in emulator.comments(number))

    record = stored(summary.run_id, memory=local_memory(settings))
    assert record.outcome is Outcome.PUSHED_FIX
    assert [a.verified for a in record.attempts] == [True]
    assert record.github.requests == summary.github_requests
    assert {"select", "claim", "review", "verify", "push", "reply", "record"} <= set(
        record.stage_seconds
    )
    # The durable sub-tasks' own requests are counted on the run's record too.
    assert record.github.by_route["POST /graphql (mutation)"] == 1
    assert (
        record.github.by_route[
            "POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies"
        ]
        == 1
    )
