"""Prompt caching through real litellm: breakpoints on the wire, usage and cost as billed.

The model is reached over HTTP on loopback: an Anthropic Messages API
(`serve_messages_model`, whose simulated cache follows Anthropic's rules) or an
OpenAI-compatible one (`serve_chat_model`), each answered by a `ScriptedModel`. These
tests opt in with `AGENT_LOOP_ALLOW_MODEL_REQUESTS=1`; the network guard still keeps
every connection on loopback. This module imports litellm (seconds, once per session).
"""

from __future__ import annotations

import json
from typing import Any

import litellm  # noqa: TID251 - the price map the cost must match
import pytest

from agent_loop_common.llm import UsageMeter, make_call_llm
from agent_loop_testing import (
    ScriptedModel,
    SimulatedPromptCache,
    call,
    serve_chat_model,
    serve_messages_model,
    turn,
)

MODEL = "anthropic/claude-sonnet-4-5"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
SYSTEM = "You are careful. " * 400  # over the 1,024 tokens a cached prefix needs
TASK = "Issue #7: fix the parser."


@pytest.fixture(autouse=True)
def _allow_loopback_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_LOOP_ALLOW_MODEL_REQUESTS", "1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            turn(tool_calls=[call("read_file", path="a.py")]),
            turn(tool_calls=[call("read_file", path="b.py")]),
            turn("Done."),
        ]
    )


async def _converse(call_llm: Any) -> list[dict[str, Any]]:
    """Three turns as the Agent drives them: each resends the conversation so far."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": TASK}]
    for _ in range(3):
        reply = await call_llm(MODEL, SYSTEM, list(messages), TOOLS)
        if not reply.tool_calls:
            break
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for c in reply.tool_calls
                ],
            }
        )
        for c in reply.tool_calls:
            body = f"contents of {c['arguments']['path']}\n" * 50
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": body})
    return messages


def _marked(body: dict[str, Any]) -> list[str]:
    where = ["system" for b in body.get("system") or [] if "cache_control" in b]
    where += [
        f"message {i}"
        for i, m in enumerate(body["messages"])
        if "cache_control" in json.dumps(m["content"])
    ]
    return where


async def test_an_anthropic_conversation_is_marked_read_from_the_cache_and_priced_as_billed() -> (
    None
):
    model = _script()
    usage = UsageMeter()
    with serve_messages_model(model, cache=SimulatedPromptCache()) as server:
        call_llm = make_call_llm(model=MODEL, usage=usage, api_base=server.api_base)
        await _converse(call_llm)
    model.assert_finished()

    assert [_marked(body) for body in server.requests] == [
        ["system", "message 0"],
        ["system", "message 0", "message 2"],
        ["system", "message 0", "message 4"],
    ]
    charges = server.charges
    assert charges[0].cache_read_input_tokens == 0
    assert charges[1].cache_read_input_tokens == charges[0].prompt_tokens
    assert charges[2].cache_read_input_tokens == charges[1].prompt_tokens
    assert usage.cache_read_tokens == sum(c.cache_read_input_tokens for c in charges)
    assert usage.cache_write_tokens == sum(c.cache_creation_input_tokens for c in charges)
    assert usage.prompt_tokens == sum(c.prompt_tokens for c in charges)
    # The cost is the bill: cache reads and writes at the model's own prices.
    info: dict[str, Any] = dict(litellm.get_model_info(MODEL))
    price_in, price_out = float(info["input_cost_per_token"]), float(info["output_cost_per_token"])
    billed = (
        sum(c.input_tokens for c in charges) * price_in
        + usage.cache_read_tokens * float(info["cache_read_input_token_cost"])
        + usage.cache_write_tokens * float(info["cache_creation_input_token_cost"])
        + usage.completion_tokens * price_out
    )
    assert usage.cost_usd == pytest.approx(billed)
    uncached = usage.prompt_tokens * price_in + usage.completion_tokens * price_out
    assert usage.cost_usd < uncached


async def test_prompt_cache_off_sends_no_marker_and_nothing_is_cached() -> None:
    model = _script()
    usage = UsageMeter()
    with serve_messages_model(model) as server:
        call_llm = make_call_llm(
            model=MODEL, usage=usage, api_base=server.api_base, prompt_cache=False
        )
        await _converse(call_llm)
    model.assert_finished()
    assert all(_marked(body) == [] for body in server.requests)
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (0, 0)


async def test_a_provider_that_caches_on_its_own_gets_the_prompt_unchanged() -> None:
    model = _script()
    with serve_chat_model(model) as api_base:
        call_llm = make_call_llm(model="openai/scripted", usage=UsageMeter(), api_base=api_base)
        await _converse(call_llm)
    model.assert_finished()
    for recorded in model.calls:
        assert recorded.messages[0] == {"role": "user", "content": TASK}
        assert "cache_control" not in json.dumps(recorded.messages)
