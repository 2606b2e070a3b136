"""A failed distillation commits nothing: the ledger stays, the next tick retries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from agent_loop_common.memory import read_context
from agent_loop_common.records import Outcome
from agent_loop_distiller import TickKind
from agent_loop_testing import ScriptedModel, call, turn


def good_script() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(
                tool_calls=[
                    call(
                        "add_lesson",
                        text="Check the README before changing public names.",
                        evidence_run_ids=["b-1"],
                        roles=[],
                    ).expecting("Added")
                ]
            ),
            turn(tool_calls=[call("finish", summary="One lesson.")]),
            turn("Done."),
        ]
    )


async def test_a_model_failure_leaves_the_ledger_and_the_next_pass_succeeds(
    make_record: Any, write_record: Any, key_files: Any, install: Any, tick: Any, memory: Any
) -> None:
    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "Renamed X.")]))
    ledger_key = memory.keys.ledger
    failing = install(ScriptedModel([turn(error=RuntimeError("provider down"))]))

    failed = await tick()

    failing.assert_finished()
    assert failed.kind is TickKind.FAILED
    assert failed.record is not None
    assert failed.record.outcome is Outcome.ERROR
    assert "provider down" in failed.record.error
    assert failed.record.attempts[0].verified is False
    assert key_files(ledger_key) == {}  # never written
    assert (await read_context(memory)).lessons.lessons == []

    # One failure: the next tick retries the same records at once, and succeeds.
    model = install(good_script())
    retried = await tick()

    model.assert_finished()
    assert retried.kind is TickKind.DISTILLED
    new_records = ["b-1", failed.record.run_id]  # b-1 and the failed distiller run's own
    assert retried.ingested == len(new_records)
    (lesson,) = (await read_context(memory)).lessons.lessons
    assert lesson.source_run_ids == ["b-1"]


async def test_edits_without_finish_are_rejected_and_not_committed(
    make_record: Any, write_record: Any, key_files: Any, install: Any, tick: Any, memory: Any
) -> None:
    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "No test.")]))
    install(good_script())
    assert (await tick()).kind is TickKind.DISTILLED
    await write_record(make_record("b-2", outcome=Outcome.REJECTED, notes=[(False, "No test.")]))
    ledger_before = key_files(memory.keys.ledger)
    model = install(
        ScriptedModel(
            [
                turn(
                    tool_calls=[
                        call(
                            "add_lesson",
                            text="Always add tests.",
                            evidence_run_ids=["b-2"],
                            roles=["builder"],
                        )
                    ]
                ),
                turn("I am done."),  # never called finish
            ]
        )
    )

    result = await tick()

    model.assert_finished()
    assert result.record is not None
    assert result.record.outcome is Outcome.REJECTED
    assert "without calling finish" in result.record.error
    assert key_files(memory.keys.ledger) == ledger_before
    assert all(
        lesson.text != "Always add tests."
        for lesson in (await read_context(memory)).lessons.lessons
    )


async def test_repeated_failures_back_off_instead_of_burning_tokens(
    make_record: Any, write_record: Any, install: Any, tick: Any
) -> None:
    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "x")]))
    install(ScriptedModel([turn(error=RuntimeError("down")), turn(error=RuntimeError("down"))]))
    assert (await tick()).kind is TickKind.FAILED
    assert (await tick()).kind is TickKind.FAILED  # the immediate retry
    idle = install(ScriptedModel([], name="must wait"))

    waiting = await tick()

    assert waiting.kind is TickKind.BACKED_OFF
    assert waiting.record is None
    assert idle.calls == []
    # After the back-off (15 minutes for the second failure) it tries again.
    later = datetime.now(UTC) + timedelta(minutes=16)
    model = install(good_script())
    retried = await tick(clock=lambda: later)
    model.assert_finished()
    assert retried.kind is TickKind.DISTILLED


async def test_a_budget_stop_is_recorded_as_such_and_commits_nothing(
    make_record: Any, write_record: Any, key_files: Any, install: Any, tick: Any, memory: Any
) -> None:
    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "x")]))
    model = install(
        ScriptedModel(
            [
                turn(tool_calls=[call("read_record", run_id="b-1")], prompt_tokens=900),
                turn("never reached: the budget refuses the second call"),
            ]
        )
    )

    result = await tick(max_tokens_per_run=500)

    assert model.errors == []
    assert model.remaining() == {"": 1}
    assert result.record is not None
    assert result.record.outcome is Outcome.BUDGET_EXCEEDED
    assert key_files(memory.keys.ledger) == {}
    assert (await read_context(memory)).lessons.lessons == []


async def test_a_stop_while_the_model_distills_releases_and_commits_nothing(
    make_record: Any,
    write_record: Any,
    key_files: Any,
    install: Any,
    tick: Any,
    memory: Any,
    emulator: Any,
) -> None:
    import asyncio
    import signal

    from agent_loop_common.runtime import request_stop, reset_stop
    from agent_loop_testing import HeldCall

    await write_record(make_record("b-1", outcome=Outcome.REJECTED, notes=[(False, "Renamed X.")]))
    held = HeldCall(good_script(), at=1)
    install(held)

    async def operator() -> None:
        await asyncio.to_thread(held.reached.wait)
        request_stop(signal.SIGTERM)

    reset_stop()
    try:
        with held:
            stopped, _ = await asyncio.gather(tick(), operator())
    finally:
        reset_stop()
    assert stopped.kind is TickKind.INTERRUPTED
    assert stopped.record is not None
    assert stopped.record.outcome is Outcome.INTERRUPTED
    assert key_files(memory.keys.ledger) == {}  # nothing committed: the next pass redoes it
    assert (await read_context(memory)).lessons.lessons == []
    assert emulator.refs("refs/agent-loop/") == {}  # the distiller's claim released
