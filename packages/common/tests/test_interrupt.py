"""A stop request (SIGINT, SIGTERM) ends a run at its next safe point, released and
recorded `interrupted`; never inside a claim being written, never after the first write
of its result; a cancellation from outside takes the same path and propagates."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncGenerator, Iterator

import pytest

from agent_loop_common.github import GitHub
from agent_loop_common.records import Outcome, Role, RunRecord, Target, TargetKind
from agent_loop_common.runtime import (
    DirectWriter,
    Posted,
    RunScope,
    Runtime,
    local_holder,
    request_stop,
    reset_stop,
    run_scoped,
    stop_on_signals,
    stop_requested,
    summarize,
)
from agent_loop_testing import GitHubEmulator, stored_record
from agent_loop_testing.pytest_plugin import AgentRuntime


@pytest.fixture(autouse=True)
def _no_stop_left() -> Iterator[None]:
    reset_stop()
    yield
    reset_stop()


@pytest.fixture
async def runtime(agent_runtime: AgentRuntime) -> AsyncGenerator[Runtime]:
    async with agent_runtime(Role.BUILDER) as rt:
        yield rt


def _ref(number: int) -> str:
    return f"agent-loop/claims/issue-{number}"


async def _take(scope: RunScope, number: int) -> None:
    claim = await scope.take(TargetKind.ISSUE, number)
    assert claim is not None
    scope.target = Target(kind=TargetKind.ISSUE, number=number, title="t")


async def test_a_stop_while_the_model_works_releases_and_records_interrupted(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Add a widget", "please")
    working = asyncio.Event()

    async def body(scope: RunScope) -> None:
        await _take(scope, number)
        assert local_holder(runtime.settings.home, runtime.run_id) is not None
        working.set()
        await asyncio.Event().wait()  # the model call that never answers

    async def operator() -> None:
        await working.wait()
        assert request_stop(signal.SIGINT)

    async def run() -> tuple[object, int]:
        record = await run_scoped(runtime, body)
        task = asyncio.current_task()
        assert task is not None
        return record, task.cancelling()

    (record, cancelling), _ = await asyncio.gather(run(), operator())
    assert cancelling == 0  # the stop's cancellation was taken back: the task goes on
    assert isinstance(record, RunRecord)
    assert record.outcome is Outcome.INTERRUPTED
    assert record.error == "stopped by the operator (SIGINT) at a safe point"
    assert record.fault == ""
    assert stored_record(runtime.memory, record.run_id) == record
    assert emulator.ref_sha(_ref(number)) is None
    (comment,) = emulator.comments(number)
    assert "op=release" in comment.body
    assert "stopped by the operator (SIGINT)" in comment.body
    assert runtime.claimer.held() == ()
    assert local_holder(runtime.settings.home, runtime.run_id) is None


async def test_a_stop_while_a_write_is_in_flight_lets_the_run_finish(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Add a widget", "please")
    writing, written = asyncio.Event(), asyncio.Event()

    async def post(github: GitHub, n: int) -> Posted:
        writing.set()
        await written.wait()  # the push is on its way when the operator presses Ctrl-C
        comment = await github.create_issue_comment(n, "the pull request")
        return Posted(url=comment.html_url)

    async def body(scope: RunScope) -> None:
        await _take(scope, number)
        write = scope.guarded(DirectWriter(runtime.github))
        await write(post, number)
        await asyncio.sleep(0)  # and later awaits of the run still are not cut
        scope.finish(Outcome.OPENED_PR)

    async def operator() -> None:
        await writing.wait()
        request_stop(signal.SIGTERM)
        await asyncio.sleep(0.01)
        written.set()

    record, _ = await asyncio.gather(run_scoped(runtime, body), operator())
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR  # the push and its record were not split
    assert any("the pull request" in c.body for c in emulator.comments(number))
    assert emulator.ref_sha(_ref(number)) is None


async def test_a_stop_while_the_claim_is_written_waits_for_the_claim(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Add a widget", "please")
    inside = asyncio.Event()
    after_hold: list[str] = []

    async def body(scope: RunScope) -> None:
        with scope.holding():
            inside.set()
            await asyncio.sleep(0.02)  # the stop arrives here: not delivered inside
            await _take(scope, number)
        after_hold.append("went on")  # never: the stop is delivered as the hold ends

    async def operator() -> None:
        await inside.wait()
        request_stop(signal.SIGINT)

    record, _ = await asyncio.gather(run_scoped(runtime, body), operator())
    assert after_hold == []
    assert record is not None
    assert record.outcome is Outcome.INTERRUPTED
    assert emulator.ref_sha(_ref(number)) is None
    assert "op=release" in emulator.comments(number)[0].body


async def test_a_stop_before_any_claim_leaves_no_record_and_no_idle_count(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    request_stop(signal.SIGTERM)  # Ctrl-C while Flyte was still starting

    async def body(scope: RunScope) -> None:
        raise AssertionError("the body never starts once a stop was requested")

    assert await run_scoped(runtime, body) is None
    assert runtime.interrupted is not None
    assert runtime.interrupted.name == "SIGTERM"
    summary = summarize(Role.BUILDER, None, idle="-", interrupted=runtime.interrupted)
    assert summary.outcome == Outcome.INTERRUPTED
    assert "before it claimed anything" in summary.note
    assert emulator.refs("refs/agent-loop/") == {}


async def test_a_cancellation_from_outside_is_recorded_then_propagates(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Add a widget", "please")
    working = asyncio.Event()
    records: list[object] = []

    async def body(scope: RunScope) -> None:
        await _take(scope, number)
        working.set()
        await asyncio.Event().wait()

    async def run() -> None:
        records.append(await run_scoped(runtime, body))

    task = asyncio.create_task(run())
    await working.wait()
    task.cancel()  # a cluster aborting the action
    with pytest.raises(asyncio.CancelledError):
        await task
    assert records == []
    assert emulator.ref_sha(_ref(number)) is None
    assert "op=release" in emulator.comments(number)[0].body
    assert stop_requested() is None


def test_signals_request_a_stop_then_exit_at_once_and_are_restored() -> None:
    said: list[str] = []
    exits: list[int] = []
    before = signal.getsignal(signal.SIGINT)
    with stop_on_signals(said.append, exit_now=exits.append):
        os.kill(os.getpid(), signal.SIGINT)
        interrupt = stop_requested()
        assert interrupt is not None
        assert (interrupt.name, interrupt.exit_code) == ("SIGINT", 130)
        assert exits == []
        os.kill(os.getpid(), signal.SIGTERM)
    assert exits == [143]
    assert "stopping at the next safe point" in said[0]
    assert "exiting at once" in said[1]
    assert "nothing was claimed" in said[1]
    assert signal.getsignal(signal.SIGINT) is before


def test_the_same_signal_twice_at_once_is_one_request_and_a_later_one_exits() -> None:
    """`uv run` forwards a signal its process group already got to its child, 200 ms
    later, when no terminal delivered it (`kill -INT -PGID`, a CI runner's cancel): the
    child sees one stop twice, and must not take the echo for a second Ctrl-C (which
    exits at once, leaving the claim for its whole TTL). A repeat after the window, or
    another signal, still exits at once."""
    said: list[str] = []
    exits: list[int] = []
    with stop_on_signals(said.append, exit_now=exits.append, repeat_window=0.5):
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # the wrapper's echo
        assert exits == []
        assert len(said) == 1
        assert "stopping at the next safe point" in said[0]
        time.sleep(0.6)
        os.kill(os.getpid(), signal.SIGINT)  # the operator's second Ctrl-C
    assert exits == [130]
    assert "exiting at once" in said[1]


def test_a_repeat_of_another_signal_exits_at_once() -> None:
    said: list[str] = []
    exits: list[int] = []
    with stop_on_signals(said.append, exit_now=exits.append, repeat_window=60):
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)
    assert exits == [130]


def test_a_signal_inside_the_stop_bookkeeping_does_not_deadlock() -> None:
    """A signal handler runs in the main thread between two bytecodes, so it can land
    while that thread is inside the stop bookkeeping's lock (opening a gate, listing
    what is held); the handler takes the same lock and must not wait for itself."""
    code = (
        "import os, signal\n"
        "from agent_loop_common.runtime import left_behind, stop_on_signals, stop_requested\n"
        "from agent_loop_common.runtime import _interrupt\n"
        "with stop_on_signals(lambda text: None):\n"
        "    with _interrupt._lock:\n"  # where `left_behind` or `open_gate` would be
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        left_behind()\n"
        "    print(stop_requested().name)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=False
    )
    assert (done.returncode, done.stdout.strip()) == (0, "SIGINT"), done.stderr
