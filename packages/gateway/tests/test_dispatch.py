"""The dispatcher: one run per burst and target, one at a time per target, never lost."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

from agent_loop_gateway import AgentName, Dispatcher, SystemClock

from .conftest import FakeRunner


async def test_a_burst_on_one_target_is_one_run() -> None:
    runner = FakeRunner()
    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0.05)
    outcomes = [dispatcher.submit("builder", 7, f"d{n}") for n in range(50)]
    assert outcomes == ["queued"] + ["coalesced"] * 49
    await dispatcher.idle()
    assert runner.calls == [("builder", 7)]
    [run] = dispatcher.history
    assert run.deliveries == tuple(f"d{n}" for n in range(50))
    assert run.started - run.first_seen >= 0.05
    assert (dispatcher.stats.submitted, dispatcher.stats.coalesced) == (50, 49)


async def test_targets_run_side_by_side() -> None:
    both = asyncio.Event()
    started: list[tuple[AgentName, int | None]] = []

    async def runner(agent: AgentName, target: int | None) -> None:
        started.append((agent, target))
        if len(started) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 5)  # each waits for the other: parallel or stuck

    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0)
    dispatcher.submit("builder", 1, "a")
    dispatcher.submit("reviewer", 2, "b")
    await asyncio.wait_for(dispatcher.idle(), 5)
    assert sorted(started, key=str) == [("builder", 1), ("reviewer", 2)]


async def test_news_during_a_run_gets_exactly_one_follow_up() -> None:
    release = asyncio.Event()
    running = asyncio.Event()
    calls: list[int | None] = []

    async def runner(agent: AgentName, target: int | None) -> None:
        calls.append(target)
        running.set()
        if len(calls) == 1:
            await release.wait()

    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0.01)
    dispatcher.submit("reviewer", 4, "d1")
    await running.wait()
    for n in range(2, 6):  # while the first run holds the target
        dispatcher.submit("reviewer", 4, f"d{n}")
    await asyncio.sleep(0.05)
    assert calls == [4]  # never two at once on one target
    release.set()
    await dispatcher.idle()
    assert calls == [4, 4]
    assert [r.deliveries for r in dispatcher.history] == [("d1",), ("d2", "d3", "d4", "d5")]


async def test_a_failing_run_is_logged_and_the_next_one_still_runs(
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    runner = FakeRunner(fail=True)
    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0)
    dispatcher.submit("distiller", None, "d1")
    await dispatcher.idle()
    runner.fail = False
    dispatcher.submit("distiller", None, "d2")
    await dispatcher.idle()
    assert runner.calls == [("distiller", None), ("distiller", None)]
    assert (dispatcher.stats.started, dispatcher.stats.failed) == (2, 1)
    failed = [e for e in captured_logs if e["event"] == "gateway.run_failed"]
    assert failed[0]["error"] == "RuntimeError: the run failed"


async def test_the_gate_can_refuse_a_run() -> None:
    runner = FakeRunner()

    async def gate(agent: AgentName, target: int | None) -> str | None:
        return "stopped" if target == 1 else None

    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0, gate=gate)
    dispatcher.submit("builder", 1, "a")
    dispatcher.submit("builder", 2, "b")
    await dispatcher.idle()
    assert runner.calls == [("builder", 2)]
    assert {(r.key.target, r.refused) for r in dispatcher.history} == {(1, "stopped"), (2, None)}


async def test_a_gate_that_cannot_check_refuses() -> None:
    runner = FakeRunner()

    async def gate(agent: AgentName, target: int | None) -> str | None:
        raise ConnectionError("GitHub is down")

    dispatcher = Dispatcher(runner, clock=SystemClock(), window=0, gate=gate)
    dispatcher.submit("builder", 1, "a")
    await dispatcher.idle()
    assert runner.calls == []
    assert (
        dispatcher.history[0].refused
        == "could not check the thread: ConnectionError: GitHub is down"
    )


async def test_close_cancels_waiting_runs() -> None:
    runner = FakeRunner()
    dispatcher = Dispatcher(runner, clock=SystemClock(), window=60)
    dispatcher.submit("builder", 1, "a")
    await dispatcher.aclose()
    await asyncio.wait_for(dispatcher.idle(), 1)
    assert runner.calls == []
