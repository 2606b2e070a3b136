"""The simulated prompt cache follows Anthropic's documented rules, and the Messages API
stub translates both ways."""

from __future__ import annotations

from typing import Any

from agent_loop_testing import (
    SimulatedPromptCache,
    approx_tokens,
    to_call_llm_shape,
    unpaired_tool_result,
)

MARK = {"type": "ephemeral"}
BIG = "x" * 8_000  # 2,000 tokens of canonical JSON and then some


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _request(*texts: str, marks: tuple[int, ...] = ()) -> dict[str, Any]:
    """A system prompt and one user message per text; `marks`: indexes of marked ones
    (0 is the system)."""
    system = [{"type": "text", "text": BIG, **({"cache_control": MARK} if 0 in marks else {})}]
    messages = [
        {
            "role": "user" if n % 2 else "assistant",
            "content": [
                {"type": "text", "text": text, **({"cache_control": MARK} if n in marks else {})}
            ],
        }
        for n, text in enumerate(texts, start=1)
    ]
    return {"system": system, "messages": messages}


def test_a_prefix_is_written_at_a_breakpoint_and_read_back_by_the_next_request() -> None:
    cache = SimulatedPromptCache(clock=Clock())
    first = cache.charge(_request("task", marks=(0, 1)))
    assert (first.cache_read_input_tokens, first.input_tokens) == (0, 0)
    assert first.cache_creation_input_tokens == first.prompt_tokens
    second = cache.charge(_request("task", "answer", "result", marks=(0, 1, 3)))
    assert second.cache_read_input_tokens == first.prompt_tokens
    assert second.cache_creation_input_tokens == second.prompt_tokens - first.prompt_tokens
    assert second.input_tokens == 0


def test_text_after_the_last_breakpoint_is_plain_input() -> None:
    cache = SimulatedPromptCache(clock=Clock())
    charge = cache.charge(_request("task", "tail", marks=(0,)))
    tail = approx_tokens({"user": {"type": "text", "text": "task"}}) + approx_tokens(
        {"assistant": {"type": "text", "text": "tail"}}
    )
    assert charge.input_tokens == tail
    assert charge.cache_creation_input_tokens == charge.prompt_tokens - tail


def test_a_changed_message_reads_only_the_prefix_before_it() -> None:
    cache = SimulatedPromptCache(clock=Clock())
    cache.charge(_request("task", marks=(0, 1)))
    changed = cache.charge(_request("another task", marks=(0, 1)))
    system_only = approx_tokens({"system": {"type": "text", "text": BIG}})
    assert changed.cache_read_input_tokens == system_only


def test_entries_expire_after_five_minutes_unless_read() -> None:
    clock = Clock()
    cache = SimulatedPromptCache(clock=clock)
    cache.charge(_request("task", marks=(0, 1)))
    clock.now = 299.0
    assert cache.charge(_request("task", marks=(0, 1))).cache_read_input_tokens > 0
    clock.now = 598.0  # 299 s after the read refreshed it
    assert cache.charge(_request("task", marks=(0, 1))).cache_read_input_tokens > 0
    clock.now = 900.0
    assert cache.charge(_request("task", marks=(0, 1))).cache_read_input_tokens == 0


def test_a_prefix_under_the_minimum_is_never_cached() -> None:
    cache = SimulatedPromptCache(clock=Clock())
    small = {"system": [{"type": "text", "text": "short", "cache_control": MARK}], "messages": []}
    assert cache.charge(small).cache_creation_input_tokens == 0
    again = cache.charge(small)
    assert (again.cache_read_input_tokens, again.input_tokens) == (0, again.prompt_tokens)


def test_a_messages_request_reaches_the_model_in_the_call_llm_shape() -> None:
    body = {
        "system": [{"type": "text", "text": "You are a builder.", "cache_control": MARK}],
        "tools": [
            {"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix #3."}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Reading."},
                    {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "A", "cache_control": MARK}],
                    }
                ],
            },
        ],
    }
    system, messages, tools = to_call_llm_shape(body)
    assert system == "You are a builder."
    assert messages == [
        {"role": "user", "content": "Fix #3."},
        {
            "role": "assistant",
            "content": "Reading.",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "A"},
    ]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read.",
                "parameters": {"type": "object"},
            },
        }
    ]


def test_a_tool_result_without_its_tool_call_is_refused_as_anthropic_does() -> None:
    use = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "A"}
    paired = {
        "messages": [
            {"role": "user", "content": "Fix #3."},
            {"role": "assistant", "content": [use]},
            {"role": "user", "content": [result]},
        ]
    }
    assert unpaired_tool_result(paired) == ""
    orphan = {"messages": [paired["messages"][0], {"role": "user", "content": [result]}]}
    assert "without a tool_use block" in unpaired_tool_result(orphan)
