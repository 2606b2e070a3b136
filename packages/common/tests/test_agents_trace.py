"""run_agent and TraceCollector against the real flyte Agent loop."""

from __future__ import annotations

import pytest
from flyte.ai.agents import Agent, AgentEvent, agent_progress_cb, tool

from agent_loop_common.agents import LLM_STEP, TraceCollector, run_agent, short_args
from agent_loop_common.records import TraceStep
from agent_loop_common.staging import ChangeStage, StagingPolicy, change_tools
from agent_loop_testing import ScriptedModel, call, turn


async def read_file(path: str) -> str:
    """Read a file."""
    return f"content of {path}"


async def explode(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"boom: {reason}")


async def test_trace_records_tools_in_order_with_ok_and_errors() -> None:
    stage = ChangeStage()
    model = ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="README.md")]),
            turn(tool_calls=[call("stage_file", path="src/app.py", content="x" * 500)]),
            turn(tool_calls=[call("stage_file", path=".git/config", content="x")]),
            turn(tool_calls=[call("explode", reason="disk")]),
            turn("Finished."),
        ]
    )
    agent = Agent(
        name="builder",
        instructions="Build.",
        model="m",
        tools=[read_file, explode, *change_tools(stage, StagingPolicy())],
        call_llm=model,
        parallel_tool_calls=False,
    )
    events: list[str] = []

    async def on_event(event: AgentEvent) -> None:
        events.append(event.type)

    run = await run_agent(agent, "Implement #1", on_event=on_event)
    assert run.result.error == ""
    assert run.ok
    model.assert_finished()
    assert run.tools_called == ["read_file", "stage_file", "stage_file", "explode"]
    assert [s.tool for s in run.trace] == [
        LLM_STEP,
        "read_file",
        LLM_STEP,
        "stage_file",
        LLM_STEP,
        "stage_file",
        LLM_STEP,
        "explode",
        LLM_STEP,
    ]
    read, staged, refused, failed = run.tool_steps
    assert read == TraceStep(
        agent="builder", tool="read_file", args='{"path": "README.md"}', ok=True, ms=read.ms
    )
    assert staged.ok
    assert staged.args.startswith('{"path": "src/app.py", "content": "xxxx')
    assert "(+440 chars)" in staged.args
    assert len(staged.args) <= 200
    assert not refused.ok
    assert refused.error.startswith("Refused: path '.git/config' is inside a '.git' directory")
    assert not failed.ok
    assert failed.error == "boom: disk"
    assert all(step.ms >= 0 for step in run.trace)
    assert run.elapsed_ms >= 0
    assert events[0] == "agent_start"
    assert events[-1] == "agent_end"
    assert dict(stage.files) == {"src/app.py": "x" * 500}


async def test_model_failure_is_a_failed_llm_step_and_result_error() -> None:
    model = ScriptedModel(
        [turn(tool_calls=[call("read_file", path="a")]), turn(error=RuntimeError("overloaded"))]
    )
    agent = Agent(name="a", model="m", tools=[read_file], call_llm=model)
    run = await run_agent(agent, "go")
    assert not run.ok
    assert run.result.error == "LLM call failed on turn 2: overloaded"
    last = run.trace[-1]
    assert last.tool == LLM_STEP
    assert last.args == "turn 2"
    assert not last.ok
    assert "overloaded" in last.error


async def test_unknown_tool_and_declined_approval_are_failed_steps() -> None:
    async def deny(_tool: object, _args: object) -> bool:
        return False

    guarded = tool(name="guarded_read", requires_approval=True)(read_file)
    model = ScriptedModel(
        [
            turn(tool_calls=[call("made_up", x=1)]),
            turn(tool_calls=[call("guarded_read", path="secret")]),
            turn("ok"),
        ],
        check_tool_names=False,
    )
    agent = Agent(name="a", model="m", tools=[guarded], call_llm=model, approval_callback=deny)
    run = await run_agent(agent, "go", include_llm_steps=False)
    assert run.result.error == ""
    assert run.trace == [
        TraceStep(agent="a", tool="made_up", args="", ok=False, ms=0, error="unknown tool"),
        TraceStep(
            agent="a",
            tool="guarded_read",
            args='{"path": "secret"}',
            ok=False,
            ms=0,
            error="declined by the approval callback",
        ),
    ]


async def test_a_sub_agent_run_inside_a_tool_stays_out_of_the_outer_trace() -> None:
    inner_model = ScriptedModel(
        [turn(tool_calls=[call("read_file", path="inner")]), turn("inner done")]
    )
    inner = Agent(name="inner", model="m", tools=[read_file], call_llm=inner_model)
    inner_traces: list[list[TraceStep]] = []

    async def ask_inner(question: str) -> str:
        """Ask the inner agent."""
        inner_run = await run_agent(inner, question)
        inner_traces.append(inner_run.trace)
        return inner_run.result.summary

    outer_model = ScriptedModel(
        [turn(tool_calls=[call("ask_inner", question="q")]), turn("outer done")]
    )
    outer = Agent(name="outer", model="m", tools=[ask_inner], call_llm=outer_model)
    run = await run_agent(outer, "go")
    assert run.result.error == ""
    assert run.tools_called == ["ask_inner"]
    assert [s.tool for s in inner_traces[0] if s.tool != LLM_STEP] == ["read_file"]
    assert agent_progress_cb.get() is None  # the callback is removed after the run


async def test_an_outer_progress_callback_still_sees_events() -> None:
    seen: list[str] = []

    async def outer(event: AgentEvent) -> None:
        seen.append(event.type)

    token = agent_progress_cb.set(outer)
    try:
        model = ScriptedModel([turn("hi")])
        run = await run_agent(Agent(name="a", model="m", call_llm=model), "go")
    finally:
        agent_progress_cb.reset(token)
    assert run.result.error == ""
    assert "agent_start" in seen
    assert "agent_end" in seen


async def test_collector_follows_only_the_named_agent_run() -> None:
    collector = TraceCollector(agent_name="mine")
    await collector(AgentEvent("agent_start", {}, agent="other", run_id="r0"))
    await collector(AgentEvent("tool_start", {"tool": "x", "args": {}}, agent="other", run_id="r0"))
    await collector(AgentEvent("agent_start", {}, agent="mine", run_id="r1"))
    await collector(
        AgentEvent("tool_start", {"tool": "t", "args": {"a": 1}}, agent="mine", run_id="r1")
    )
    await collector(AgentEvent("tool_start", {"tool": "x", "args": {}}, agent="other", run_id="r0"))
    assert collector.run_id == "r1"
    # a start without an end is reported as unfinished
    assert collector.steps == [
        TraceStep(
            tool="t", args='{"a": 1}', ok=False, ms=collector.steps[0].ms, error="did not finish"
        )
    ]
    await collector(
        AgentEvent("tool_end", {"tool": "t", "result": "fine"}, agent="mine", run_id="r1")
    )
    assert collector.steps[0].ok


@pytest.mark.parametrize(
    ("args", "limit", "expected"),
    [
        ({"path": "a.py"}, 200, '{"path": "a.py"}'),
        ({"n": 3, "flag": True, "items": ["a"]}, 200, '{"n": 3, "flag": true, "items": ["a"]}'),
        (
            {"path": "a.py", "content": "y" * 100},
            200,
            '{"path": "a.py", "content": "' + "y" * 60 + '…(+40 chars)"}',
        ),
        ({"a": "b" * 50}, 20, '{"a": "bbbbbbbbbbbb…'),
        ("print(1)", 200, '"print(1)"'),
    ],
)
def test_short_args(args: object, limit: int, expected: str) -> None:
    assert short_args(args, limit) == expected
    assert len(short_args(args, limit)) <= limit
