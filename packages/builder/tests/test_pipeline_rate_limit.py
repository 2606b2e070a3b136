"""At the GitHub rate-limit reserve a tick claims nothing; after the reset it works again."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_loop_builder import run_builder_tick
from agent_loop_common.memory import MemoryLocation, read_idle_count
from agent_loop_common.records import Outcome, Role
from agent_loop_common.runtime import PAUSED, summarize
from agent_loop_common.settings import Settings
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import GitHubEmulator, ScriptedModel, call, turn
from agent_loop_testing.pytest_plugin import AgentRuntime, Install

CORE = "def make_widget(name, colour='blue'):\n    return {'name': name, 'colour': colour}\n"


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CORE)]),
            turn(
                tool_calls=[
                    call(
                        "submit_implementation",
                        title="Add a colour to widgets",
                        body="Adds a colour argument.",
                        summary="make_widget takes a colour.",
                    )
                ]
            ),
            turn("Done."),
        ],
        routes={VERIFIER_MARKER: [turn('Checked.\n{"verified": true, "notes": "Fine."}')]},
    )


async def test_the_reserve_pauses_new_work_until_the_limit_resets(
    emulator: GitHubEmulator,
    agent_runtime: AgentRuntime,
    install: Install,
    memory: MemoryLocation,
) -> None:
    number = emulator.add_issue("Add a colour to widgets", "Widgets need a colour.")
    emulator.set_rate_limit_remaining(emulator.bot, 400)  # the default reserve: 10% of 5000
    model = install(_script())

    async with agent_runtime(Role.BUILDER) as rt:
        record = await run_builder_tick(rt, None)
        paused = rt.paused

    assert record is None
    assert paused is not None
    assert paused.until is not None
    assert "of 5000 requests left" in paused.note
    assert "reserve of 500" in paused.note
    assert emulator.comments(number) == []  # no claim comment
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None  # no claim ref
    assert model.calls == []
    summary = summarize(Role.BUILDER, record, idle="no eligible issue", paused=paused)
    assert summary.outcome == PAUSED
    assert summary.paused
    assert not summary.failed
    assert summary.details["resumes_after"] == paused.until.isoformat()
    counted = await read_idle_count(memory, Role.BUILDER, datetime.now(UTC).date())
    assert (counted.paused, counted.count) == (1, 0)
    assert counted.paused_note == paused.note

    emulator.reset_rate_limit(emulator.bot)  # the hour is over
    async with agent_runtime(Role.BUILDER) as rt:
        record = await run_builder_tick(rt, None)
        assert rt.paused is None

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert record.target.number == number
    assert record.backoff_until is None


async def test_a_zero_reserve_never_pauses(
    emulator: GitHubEmulator,
    agent_runtime: AgentRuntime,
    install: Install,
    settings: Settings,
) -> None:
    emulator.add_issue("Add a colour to widgets", "Widgets need a colour.")
    emulator.set_rate_limit_remaining(emulator.bot, 400)
    model = install(_script())
    config = settings.model_copy(update={"rate_limit_reserve": "0"})
    async with agent_runtime(Role.BUILDER, settings=config) as rt:
        record = await run_builder_tick(rt, None)
        assert rt.paused is None
    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
