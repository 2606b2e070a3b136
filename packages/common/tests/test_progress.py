"""Progress events: tagged with their run, handed to every watcher, read as one line each.

`run_agent` is driven through the real flyte Agent loop with a scripted model, so the
tool calls and the refused one are the Agent's own events.
"""

from __future__ import annotations

import asyncio
import json

from flyte.ai.agents import Agent

from agent_loop_common.agents import run_agent
from agent_loop_common.progress import (
    MAX_KEPT_EVENTS,
    ProgressEvent,
    RunProgress,
    emit,
    event_line,
    run_progress,
    use_progress,
)
from agent_loop_common.staging import (
    ChangePlan,
    ChangeStage,
    StagingPolicy,
    change_diff,
    change_tools,
)
from agent_loop_testing import ScriptedModel, call, turn


def test_events_carry_their_run_and_reach_every_watcher_while_installed() -> None:
    seen: list[ProgressEvent] = []
    run = RunProgress(role="builder", run_id="r1")
    with use_progress(seen.append), run_progress(run):
        run.target = "issue #5"
        emit("try.started", number=1, tries=3)
    emit("try.started", number=2, tries=3)  # after the block: nobody watches, no run
    assert [(e.role, e.run_id, e.target, e.data["number"]) for e in seen] == [
        ("builder", "r1", "issue #5", 1)
    ]
    assert run.events == seen
    flat = seen[0].as_dict()
    assert flat["event"] == "try.started"
    assert flat["timestamp"].endswith("+00:00")
    assert flat["target"] == "issue#5"  # spelt as the tick's summary spells it
    json.dumps(flat)  # one JSON object, as `run --json` prints it


def test_a_failing_watcher_never_fails_the_run_and_a_run_keeps_a_bounded_log() -> None:
    def broken(event: ProgressEvent) -> None:
        raise BrokenPipeError("the terminal went away")

    run = RunProgress(role="reviewer", run_id="r2")
    with use_progress(broken), run_progress(run):
        for number in range(MAX_KEPT_EVENTS + 5):
            emit("try.started", number=number, tries=1)
    assert len(run.events) == MAX_KEPT_EVENTS
    assert run.dropped == 5


async def test_concurrent_runs_tag_their_own_events() -> None:
    seen: list[ProgressEvent] = []

    async def one(run_id: str) -> None:
        with run_progress(RunProgress(role="builder", run_id=run_id)):
            for number in range(3):
                emit("try.started", number=number, tries=3)
                await asyncio.sleep(0)

    with use_progress(seen.append):
        await asyncio.gather(one("a"), one("b"))
    assert sorted(e.run_id for e in seen) == ["a"] * 3 + ["b"] * 3
    assert [e.data["number"] for e in seen if e.run_id == "a"] == [0, 1, 2]


def _line(kind: str, **data: object) -> str | None:
    return event_line(ProgressEvent(kind, "builder", "r", "issue #5", data=data))  # type: ignore[arg-type]


def test_each_event_reads_as_one_line_the_demo_and_run_print() -> None:
    assert _line("run.claimed", title="Add\nsubtract()") == "claimed   issue #5 Add subtract()"
    assert _line("try.started", number=2, tries=3) == "try       2 of 3"
    assert (
        _line("agent.tool", agent="verifier", tool="read_file", subject="src/a.py")
        == "verifier  read_file  src/a.py"
    )
    assert _line("agent.step", agent="builder", tool="read_file", ok=True) is None
    assert (
        _line("agent.step", agent="builder", tool="stage_file", ok=False, error="Refused: .git")
        == "builder   stage_file failed: Refused: .git"
    )
    assert _line("agent.step", agent="builder", tool="llm", ok=False, error="429") == (
        "builder   model call failed: 429"
    )
    assert (
        _line("change.proposed", files=["a.py (+2 -1)", "b.py (+1 -0)"])
        == "staged    2 file(s): a.py (+2 -1), b.py (+1 -0)"
    )
    assert _line("change.proposed", issues=["One", "Two"]) == "staged    2 sub-issue(s): One; Two"
    assert (
        _line(
            "tests.ran",
            by="check",
            status="failed",
            summary="1 failed, 4 passed (base: 2 passed)",
            rejects=True,
            failing=["t::a"],
        )
        == "tests     REJECTED: 1 failed, 4 passed (base: 2 passed) (t::a)"
    )
    assert (
        _line("tests.ran", by="check", status="passed", summary="5 passed (base: 2 passed)")
        == "tests     passed: 5 passed (base: 2 passed)"
    )
    assert _line("tests.ran", by="run_tests", summary="exit 0: 3 passed (0.1 s)") == (
        "tests     run_tests: exit 0: 3 passed (0.1 s)"
    )
    assert _line("verifier.verdict", verified=False, notes="No test.") == (
        "verifier  REJECTED: No test."
    )
    assert _line("try.ended", number=1, result="rejected", notes="x") is None
    assert _line("try.ended", number=1, result="not_submitted", notes="Out of turns.") == (
        "try       1 ended without a submission: Out of turns."
    )
    assert _line(
        "run.ended", outcome="opened_pr", tokens=1234, cost_usd=0.0123, llm_calls=4, seconds=23.4
    ) == ("done      opened_pr · 4 model call(s) · 1,234 tokens · $0.01 · 23.4s")


async def test_run_agent_says_each_tool_call_as_it_starts_and_each_refusal() -> None:
    stage = ChangeStage()
    model = ScriptedModel(
        [
            turn(tool_calls=[call("stage_file", path="src/app.py", content="x = 1\n")]),
            turn(tool_calls=[call("stage_file", path=".git/config", content="x")]),
            turn("Finished."),
        ]
    )
    agent = Agent(
        name="issue-builder",
        instructions="Build.",
        model="m",
        tools=change_tools(stage, StagingPolicy()),
        call_llm=model,
    )
    seen: list[ProgressEvent] = []
    with use_progress(seen.append), run_progress(RunProgress(role="builder", run_id="r3")):
        run = await run_agent(agent, "Implement #1")
    assert run.result.error == ""
    lines = [line for line in map(event_line, seen) if line is not None]
    assert lines[0] == "builder   stage_file  src/app.py"
    assert lines[1] == "builder   stage_file  .git/config"
    assert lines[2].startswith("builder   stage_file failed: Refused")
    steps = [e for e in seen if e.kind == "agent.step"]
    assert [s.data["tool"] for s in steps] == ["llm", "stage_file", "llm", "stage_file", "llm"]
    assert all(step.agent == "builder" for step in run.trace)  # the record says whose


def test_a_change_reads_as_a_unified_diff_against_its_base() -> None:
    plan = ChangePlan(files={"a.py": "x = 2\n", "new.py": "y = 1\n", "gone.py": None, "b.bin": "z"})
    diff = change_diff(plan, {"a.py": "x = 1\n", "new.py": None, "gone.py": "old\n"})
    assert [(f.path, f.status, f.added, f.removed) for f in diff.files] == [
        ("a.py", "modified", 1, 1),
        ("b.bin", "binary", 0, 0),
        ("gone.py", "deleted", 0, 1),
        ("new.py", "added", 1, 0),
    ]
    assert "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n" in diff.text
    assert "--- /dev/null\n+++ b/new.py" in diff.text
    assert "--- a/gone.py\n+++ /dev/null" in diff.text
    capped = diff.capped(40)
    assert len(capped.split("\n… diff cut here")[0]) <= 40
    assert "more characters" in capped
