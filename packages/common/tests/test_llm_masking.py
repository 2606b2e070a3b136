"""Masked old observations and cache breakpoints: what a model is shown of a long run (pure)."""

from __future__ import annotations

import copy
import json
from typing import Any

from agent_loop_common.llm import (
    CACHE_CONTROL,
    MASK_AT_CHARS,
    MIN_MASKED_CHARS,
    mask_observations,
    masked_call_llm,
    with_cache_breakpoints,
)
from agent_loop_testing import ScriptedModel, turn

FILE = "\n".join(f"line {n} of the module" for n in range(1, 241))


def _conversation(turns: int, *, result: str = FILE) -> list[dict[str, Any]]:
    """The task, then `turns` turns each reading one file (`src/f<n>.py`)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix issue #3."}]
    for n in range(1, turns + 1):
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "arguments": json.dumps({"path": f"src/f{n}.py"}),
                        },
                    }
                ],
            }
        )
        header = f"src/f{n}.py (main@abc1234), lines 1-240 of 240:\n<file>\n"
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"call_{n}",
                "name": "read_file",
                "content": header + result,
            }
        )
    return messages


def _elided(messages: list[dict[str, Any]]) -> list[int]:
    """The turns whose result was replaced (1-based)."""
    return [
        int(str(m["tool_call_id"]).removeprefix("call_"))
        for m in messages
        if m["role"] == "tool" and str(m["content"]).startswith("[elided:")
    ]


def test_older_results_pile_up_to_the_threshold_then_are_masked_all_at_once() -> None:
    """Each read is 5,464 characters; with 12,000 allowed to pile up beyond the last 3
    turns, the boundary jumps to the last 3 turns whenever three older reads are whole."""
    shown = {
        n: _elided(mask_observations(_conversation(n), keep_turns=3, mask_at_chars=12_000))
        for n in range(1, 13)
    }
    assert shown == {
        1: [],
        2: [],
        3: [],
        4: [],
        5: [],
        # six turns: the three older than the last three add up to 16,392 characters
        6: [1, 2, 3],
        7: [1, 2, 3],
        8: [1, 2, 3],
        9: [1, 2, 3, 4, 5, 6],
        10: [1, 2, 3, 4, 5, 6],
        11: [1, 2, 3, 4, 5, 6],
        12: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    }
    one_by_one = _elided(mask_observations(_conversation(11), keep_turns=3, mask_at_chars=0))
    assert one_by_one == [1, 2, 3, 4, 5, 6, 7, 8]
    # the default lets about 10,000 tokens of older results pile up first
    assert _elided(mask_observations(_conversation(9), keep_turns=2)) == []
    assert _elided(mask_observations(_conversation(10), keep_turns=2)) == list(range(1, 9))
    assert MASK_AT_CHARS == 40_000


def test_the_placeholder_says_what_the_result_was_and_how_to_read_it_again() -> None:
    masked = mask_observations(_conversation(6), keep_turns=3, mask_at_chars=0)
    first = masked[2]
    assert first["tool_call_id"] == "call_1"  # the pairing with its call is kept
    assert first["content"] == (
        "[elided: read_file(path='src/f1.py') returned 242 lines (5,464 characters), "
        'starting "src/f1.py (main@abc1234), lines 1-240 of 240:". '
        "Call read_file again to see it.]"
    )


def test_the_task_the_agents_turns_short_results_and_the_input_stay_as_they_were() -> None:
    conversation = _conversation(9)
    conversation[4]["content"] = "Staged src/f2.py (12 bytes). 1 path(s) staged."
    before = copy.deepcopy(conversation)
    masked = mask_observations(conversation, keep_turns=3, mask_at_chars=10_000)
    assert conversation == before  # the Agent's own list and dicts are never touched
    assert masked[0] == conversation[0]
    assert [m for m in masked if m["role"] == "assistant"] == [
        m for m in conversation if m["role"] == "assistant"
    ]
    assert masked[4]["content"] == "Staged src/f2.py (12 bytes). 1 path(s) staged."
    assert len("Staged src/f2.py (12 bytes). 1 path(s) staged.") < MIN_MASKED_CHARS
    # older reads pile up (the short result counts nothing) until 10,000 characters
    assert _elided(masked) == [1, 3, 4, 5]


def test_masking_is_stable_so_the_prefix_stays_byte_identical_between_moves() -> None:
    """Turns 7 and 8 (keep 3) mask the same turns the same way: turn 8's prompt starts
    with turn 7's, byte for byte, so a provider's cached prefix still matches."""
    seventh = json.dumps(mask_observations(_conversation(7), keep_turns=3, mask_at_chars=12_000))
    eighth = json.dumps(mask_observations(_conversation(8), keep_turns=3, mask_at_chars=12_000))
    assert eighth.startswith(seventh[:-1])


def test_keep_turns_zero_keeps_everything() -> None:
    conversation = _conversation(30)
    assert mask_observations(conversation, keep_turns=0) == conversation


async def test_the_wrapped_model_is_shown_the_masked_conversation() -> None:
    model = ScriptedModel([turn("ok")])
    wrapped = masked_call_llm(model, keep_turns=2, mask_at_chars=0)
    await wrapped("m", "system", _conversation(4), None)
    assert _elided(model.calls[0].messages) == [1, 2]
    assert masked_call_llm(model, keep_turns=0) is model


def test_breakpoints_mark_the_system_the_task_and_the_last_message() -> None:
    messages = [{"role": "system", "content": "sys"}, *_conversation(2)]
    marked = with_cache_breakpoints(messages)
    where = [i for i, m in enumerate(marked) if "cache_control" in json.dumps(m.get("content"))]
    assert where == [0, 1, 5]
    assert marked[0]["content"] == [{"type": "text", "text": "sys", "cache_control": CACHE_CONTROL}]
    # every user and tool text is a content block, marked or not: the same bytes each turn
    assert marked[3]["content"] == [{"type": "text", "text": messages[3]["content"]}]
    assert messages[0]["content"] == "sys"  # copies: the input is untouched
    # a first turn marks the task once; an assistant turn with no text is not marked
    assert len(with_cache_breakpoints(messages[:2])[1]["content"]) == 1
    assert with_cache_breakpoints(messages[:3])[2] == messages[2]
