"""`/agent-loop` commands honoured by the builder's scheduled poll (no gateway needed)."""

from __future__ import annotations

from collections.abc import Callable

from agent_loop_common.records import Outcome
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import Install


def _implements() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/widgets/x.py", content="X = 1\n")]),
            turn(tool_calls=[call("submit_implementation", title="X", body="b", summary="s")]),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn('{"verified": true, "notes": "fine"}')]},
    )


async def test_stop_keeps_cron_away_until_resume_and_each_command_is_acknowledged(
    emulator: GitHubEmulator, tick: Callable[..., object], install: Install
) -> None:
    emulator.add_user("alice", permission="write")
    emulator.add_user("mallory", permission="read")
    number = emulator.add_issue("Add x", "Add an x.")
    stop = emulator.add_comment(number, "/agent-loop stop", author="alice")
    forged = emulator.add_comment(number, "/agent-loop resume", author="mallory")
    idle = install(ScriptedModel([], name="must not be called"))

    assert await tick() is None  # stopped: no claim, no model

    assert idle.calls == []
    assert emulator.reactions(stop) == [(emulator.bot, "+1")]
    assert emulator.reactions(forged) == []  # an untrusted command gets nothing

    resume = emulator.add_comment(number, "/agent-loop resume", author="alice")
    model = install(_implements())
    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert emulator.reactions(resume) == [(emulator.bot, "+1")]
    assert emulator.reactions(stop) == [(emulator.bot, "+1")]  # acknowledged once


async def test_build_lifts_a_back_off_recorded_before_it(
    emulator: GitHubEmulator, tick: Callable[..., object], install: Install
) -> None:
    number = emulator.add_issue("Add x", "Add an x.")
    install(ScriptedModel([turn(tool_calls=[call("skip_issue", reason="Unclear.")]), turn("ok")]))
    skipped = await tick()
    assert skipped is not None
    assert skipped.outcome is Outcome.SKIPPED
    assert skipped.backoff_until is not None
    install(ScriptedModel([], name="must not be called"))
    assert await tick() is None  # resting

    emulator.add_comment(number, "/agent-loop build", author=emulator.owner)
    model = install(_implements())
    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
