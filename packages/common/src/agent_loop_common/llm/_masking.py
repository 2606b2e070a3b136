"""Masked old observations: what an agent's prompt keeps of tool results it has acted on.

The Agent resends the whole conversation every turn, so a file read on turn 3 is paid
for again on every later turn, and the sum grows with the square of the turns. Most of
it is no longer needed: the agent read the file, decided, and moved on. "The Complexity
Trap" (Lindenbauer et al., 2025; SWE-agent on SWE-bench Verified, five models) found
that replacing old tool observations with placeholders halves the cost at an equal or
better solve rate than summarizing them with a model. So the prompt keeps the results
of the most recent turns whole and replaces each older, long result by one line that
says what it was and how to get it back:

    [elided: read_file(path='src/x.py') returned 240 lines (9,812 characters), starting
    "src/x.py (base), lines 1-240 of 240:". Call read_file again to see it.]

What is never masked: the first message (the task), the agent's own turns (its
reasoning and tool calls), short results (a staging receipt, a refusal, a submission's
answer: under `MIN_MASKED_CHARS` they cost little and carry the state of the
proposal), and anything in the last `keep_turns` turns. Only a tool message's content
changes, so every tool call keeps its result and the pairing providers check holds.

Masking and prompt caching pull against each other: rewriting a message changes the
prompt from that message on, so the provider's cached prefix stops there. The boundary
therefore moves in blocks of `keep_turns`: the turns older than the last `keep_turns`
are masked only when a whole block of them has piled up, and between two moves the
prompt's prefix stays byte-identical turn after turn, so the cache keeps paying
(`bench/tokens.py` measures both ways; `docs/performance.md` has the figures).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from flyte.ai.agents import LLMCallable, LLMMessage

__all__ = ["MIN_MASKED_CHARS", "mask_observations", "masked_call_llm"]

MIN_MASKED_CHARS = 600
"""Tool results shorter than this stay whole: a placeholder would save next to nothing,
and short results (staging receipts, refusals, submissions) carry the proposal's state."""

_HEAD_LINES = 3
_HEAD_CHARS = 240
_ARG_CHARS = 80
_ARGS_CHARS = 200


def mask_observations(
    messages: Sequence[Mapping[str, Any]], *, keep_turns: int, block: int | None = None
) -> list[dict[str, Any]]:
    """The conversation as the model is shown it: old, long tool results elided.

    Args:
        messages: The Agent's conversation (user, assistant with `tool_calls`, `tool`
            messages), oldest first. Never modified.
        keep_turns: Turns (an assistant message and its tool results) kept whole at the
            end; `0` keeps everything.
        block: Turns masked at a time (default `keep_turns`): the boundary moves only
            when this many more turns are older than the last `keep_turns`.

    Returns:
        A new list; messages that change are copies, the others are the same dicts.
    """
    out = list(cast("Sequence[dict[str, Any]]", messages))
    if keep_turns <= 0:
        return out
    step = max(1, block if block is not None else keep_turns)
    starts = [i for i, m in enumerate(out) if m.get("role") == "assistant" and m.get("tool_calls")]
    older = len(starts) - keep_turns
    masked_turns = (older // step) * step if older > 0 else 0
    if masked_turns <= 0:
        return out
    end = starts[masked_turns] if masked_turns < len(starts) else len(out)
    calls = _calls_by_id(out[:end])
    for index in range(starts[0], end):
        message = out[index]
        if message.get("role") != "tool":
            continue
        content = message.get("content")
        if not isinstance(content, str) or len(content) < MIN_MASKED_CHARS:
            continue
        name, arguments = calls.get(str(message.get("tool_call_id")), (None, ""))
        tool = name or str(message.get("name") or "the tool")
        out[index] = {**message, "content": placeholder(tool, arguments, content)}
    return out


def placeholder(tool: str, arguments: str, content: str) -> str:
    """The one line that stands for an elided result: what it was, how to get it back."""
    lines = content.count("\n") + 1
    head = _head(content)
    started = f', starting "{head}"' if head else ""
    return (
        f"[elided: {tool}({_render_args(arguments)}) returned {lines:,} lines "
        f"({len(content):,} characters){started}. Call {tool} again to see it.]"
    )


def masked_call_llm(call_llm: LLMCallable, *, keep_turns: int) -> LLMCallable:
    """`call_llm` shown the conversation through `mask_observations` (as is for 0)."""
    if keep_turns <= 0:
        return call_llm

    async def call(
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        return await call_llm(
            model, system, mask_observations(messages, keep_turns=keep_turns), tools
        )

    return call


def _calls_by_id(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Tool call id -> (tool name, JSON arguments), from the assistant turns."""
    found: dict[str, tuple[str, str]] = {}
    for message in messages:
        for raw in cast("list[object]", message.get("tool_calls") or []):
            if not isinstance(raw, Mapping):
                continue
            entry = cast("Mapping[str, Any]", raw)
            function = cast("Mapping[str, Any]", entry.get("function") or {})
            arguments = function.get("arguments", "")
            found[str(entry.get("id"))] = (
                str(function.get("name") or ""),
                arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
    return found


def _render_args(arguments: str) -> str:
    """`path='src/x.py', start_line=1`: the call's arguments, each cut short."""
    try:
        parsed: object = json.loads(arguments) if arguments else {}
    except json.JSONDecodeError:
        parsed = {"_raw": arguments}
    if not isinstance(parsed, dict):
        parsed = {"_raw": parsed}
    parts: list[str] = []
    for key, value in cast("dict[str, object]", parsed).items():
        text = repr(value) if isinstance(value, str | int | float | bool) else json.dumps(value)
        if len(text) > _ARG_CHARS:
            text = text[: _ARG_CHARS - 3] + "..."
        parts.append(f"{key}={text}")
    rendered = ", ".join(parts)
    return rendered if len(rendered) <= _ARGS_CHARS else rendered[: _ARGS_CHARS - 3] + "..."


def _head(content: str) -> str:
    """The result's own summary: its first lines before any data block, cut short."""
    kept: list[str] = []
    for line in content.splitlines()[:_HEAD_LINES]:
        if line.lstrip().startswith("<"):
            break
        kept.append(line.strip())
    head = " ".join(part for part in kept if part)
    head = head.replace('"', "'")
    return head if len(head) <= _HEAD_CHARS else head[: _HEAD_CHARS - 3] + "..."
