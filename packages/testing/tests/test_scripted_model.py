"""ScriptedModel: plays its script, records calls, and fails loudly on anything unplanned."""

from __future__ import annotations

import pytest
from flyte.ai.agents import Agent

from agent_loop_common.llm import Budget, BudgetExceeded, UsageMeter
from agent_loop_testing import ScriptedModel, ScriptMismatch, call, turn

TOOLS = [{"type": "function", "function": {"name": "echo", "parameters": {}}}]


async def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


def agent_with(
    model: ScriptedModel, name: str = "tester", instructions: str = "Test agent."
) -> Agent:
    return Agent(
        name=name,
        instructions=instructions,
        model="scripted-model",
        tools=[echo],
        call_llm=model,
        max_turns=5,
    )


async def test_plays_turns_and_records_calls() -> None:
    model = ScriptedModel(
        [turn(tool_calls=[call("echo", text="hi").expecting("echo: hi")]), turn("All done.")]
    )
    result = await agent_with(model).run.aio("Say hi")
    assert result.error == ""
    assert result.summary == "All done."
    model.assert_finished()
    first, second = model.calls
    assert first.index == 1
    assert first.model == "scripted-model"
    assert "Test agent." in first.system
    assert first.tool_names == ["echo"]
    assert first.messages == [{"role": "user", "content": "Say hi"}]
    assert second.tool_results[0]["content"] == "echo: hi"
    assert second.tool_results[0]["tool_call_id"] == "call_1"


async def test_exhausted_script_fails_loudly_and_names_the_call() -> None:
    model = ScriptedModel([turn(tool_calls=[call("echo", text="hi")])], name="builder")
    result = await agent_with(model).run.aio("go")
    # the Agent swallows call_llm exceptions into result.error ...
    assert "unexpected call #2" in result.error
    assert "the script has no turn left (it had 1)" in result.error
    # ... so the model keeps them and assert_finished raises the first one
    with pytest.raises(ScriptMismatch, match=r"ScriptedModel 'builder': unexpected call #2"):
        model.assert_finished()


async def test_direct_extra_call_raises() -> None:
    model = ScriptedModel([turn("only one")])
    assert (await model("m", "sys", [{"role": "user", "content": "x"}], None)).content == "only one"
    with pytest.raises(ScriptMismatch, match="role='user' content='again'"):
        await model("m", "sys", [{"role": "user", "content": "again"}], None)


async def test_unused_turns_fail_assert_finished() -> None:
    model = ScriptedModel([turn("a"), turn("b")])
    await model("m", "sys", [], None)
    assert model.remaining() == {"": 1}
    with pytest.raises(ScriptMismatch, match="never used"):
        model.assert_finished()


async def test_unexpected_tool_result_fails() -> None:
    model = ScriptedModel(
        [turn(tool_calls=[call("echo", text="hi").expecting("something else")]), turn("done")]
    )
    result = await agent_with(model).run.aio("go")
    assert "should contain 'something else' but was 'echo: hi'" in result.error
    with pytest.raises(ScriptMismatch):
        model.assert_finished()


async def test_turn_level_expectations() -> None:
    model = ScriptedModel(
        [
            turn(
                tool_calls=[call("echo", text="x")],
                expect_in_messages="Issue #7",
                expect_in_system="Test agent",
            ),
            turn("done", expect_tool_result_contains="echo: x"),
        ]
    )
    assert (await agent_with(model).run.aio("Issue #7")).error == ""
    model.assert_finished()

    strict = ScriptedModel([turn("done", expect_in_system="verifier")])
    assert (
        "expects the system prompt to contain 'verifier'"
        in (await agent_with(strict).run.aio("go")).error
    )


async def test_calling_a_tool_the_agent_does_not_offer_is_a_script_error() -> None:
    model = ScriptedModel([turn(tool_calls=[call("stage_file", path="a", content="b")])])
    result = await agent_with(model).run.aio("go")
    assert (
        "calls tool 'stage_file', which the agent does not offer (offered: ['echo'])"
        in result.error
    )


async def test_routes_by_system_prompt_marker() -> None:
    model = ScriptedModel(
        [turn("builder answer")],
        routes={"VERIFY-MARKER": [turn("verifier answer")]},
    )
    verifier = agent_with(model, name="v", instructions="VERIFY-MARKER: check things")
    assert (await verifier.run.aio("check")).summary == "verifier answer"
    assert (await agent_with(model).run.aio("build")).summary == "builder answer"
    assert [c.route for c in model.calls] == ["VERIFY-MARKER", ""]
    assert len(model.calls_for("VERIFY-MARKER")) == 1
    model.assert_finished()

    routed_only = ScriptedModel(routes={"VERIFY-MARKER": [turn("x")]})
    with pytest.raises(ScriptMismatch, match="none of the route markers"):
        await routed_only("m", "no marker here", [], TOOLS)


async def test_scripted_error_simulates_a_provider_failure() -> None:
    model = ScriptedModel([turn(error=RuntimeError("provider down"))])
    result = await agent_with(model).run.aio("go")
    assert result.error == "LLM call failed on turn 1: provider down"
    model.assert_finished()  # a planned failure is not a script mismatch


async def test_usage_and_budget() -> None:
    usage = UsageMeter()
    model = ScriptedModel(
        [
            turn(
                tool_calls=[call("echo", text="1")],
                prompt_tokens=600,
                completion_tokens=100,
                cost_usd=0.01,
            ),
            turn(tool_calls=[call("echo", text="2")], prompt_tokens=700, completion_tokens=50),
            turn("never reached"),
        ],
        usage=usage,
        budget=Budget(max_tokens=1000),
    )
    result = await agent_with(model).run.aio("go")
    assert usage.prompt_tokens == 1300
    assert usage.completion_tokens == 150
    assert usage.llm_calls == 2
    assert usage.unpriced_calls == 1
    assert usage.exceeded is not None
    assert "1450 tokens used, limit 1000" in usage.exceeded
    assert "run budget exceeded" in result.error
    assert model.remaining() == {"": 1}
    assert model.errors == []
    with pytest.raises(BudgetExceeded):
        await model("m", "s", [], None)


async def test_hallucinated_tool_names_can_be_scripted_when_asked() -> None:
    model = ScriptedModel([turn(tool_calls=[call("nope")]), turn("ok")], check_tool_names=False)
    result = await agent_with(model).run.aio("go")
    assert result.error == ""
    assert model.calls[1].tool_results[0]["content"] == "Unknown tool `nope`."
