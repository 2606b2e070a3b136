"""`/agent-loop` commands honoured by the reviewer's scheduled poll (no gateway needed)."""

from __future__ import annotations

from typing import Any

from agent_loop_common.records import Outcome
from agent_loop_reviewer import REVIEWER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import Install


def _clean() -> ScriptedModel:
    return ScriptedModel(
        routes={
            REVIEWER_MARKER: [
                turn(tool_calls=[call("no_changes", reason="Looks right.")]),
                turn("Done."),
            ]
        }
    )


async def test_stop_and_review_steer_the_reviewer(
    emulator: GitHubEmulator, open_pr: Any, install: Install, tick: Any
) -> None:
    number = await open_pr()
    stop = emulator.add_comment(number, "/agent-loop stop", author="alice")
    idle = install(ScriptedModel([], name="must not be called"))

    assert await tick() is None  # stopped: no pass, no model
    assert idle.calls == []
    assert emulator.reactions(stop) == [(emulator.bot, "+1")]

    emulator.add_comment(number, "/agent-loop resume", author="alice")
    model = install(_clean())
    first = await tick()
    model.assert_finished()
    assert first is not None
    assert first.outcome in (Outcome.REVIEWED_CLEAN, Outcome.COMMENTED)

    install(ScriptedModel([], name="must not be called"))
    assert await tick() is None  # nothing new since the pass

    again = emulator.add_comment(number, "/agent-loop review", author="alice")
    model = install(_clean())
    second = await tick()
    model.assert_finished()
    assert second is not None
    assert emulator.reactions(again) == [(emulator.bot, "rocket")]
