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
prompt from that message on, so the provider's cached prefix stops there and the rest is
written to the cache again (at 1.25x the input price on Anthropic). Masking one result
per turn would rewrite the recent turns every turn. So older results pile up whole until
they add up to `MASK_AT_CHARS` (about 10,000 tokens) and are then masked all at once:
the prompt never carries more than that of them, and between two such moves its prefix
is byte-identical turn after turn, so the cache keeps serving it (`bench/tokens.py`
measures both ways; `docs/performance.md` has the figures).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from flyte.ai.agents import LLMCallable, LLMMessage

__all__ = [
    "MASK_AT_CHARS",
    "MIN_MASKED_CHARS",
    "mask_observations",
    "masked_call_llm",
    "placeholder",
]

MIN_MASKED_CHARS = 600
"""Tool results shorter than this stay whole: a placeholder would save next to nothing,
and short results (staging receipts, refusals, submissions) carry the proposal's state."""

MASK_AT_CHARS = 40_000
"""Older results (beyond the last `keep_turns` turns) stay whole until they add up to
this many characters (about 10,000 tokens), then are all masked at once: the prompt
carries at most this much of them, and between two such moves its prefix is unchanged,
so a provider's cache keeps serving it."""

_HEAD_LINES = 3
_HEAD_CHARS = 240
_ARG_CHARS = 80
_ARGS_CHARS = 200


def mask_observations(
    messages: Sequence[Mapping[str, Any]],
    *,
    keep_turns: int,
    mask_at_chars: int = MASK_AT_CHARS,
) -> list[dict[str, Any]]:
    """The conversation as the model is shown it: old, long tool results elided.

    Args:
        messages: The Agent's conversation (user, assistant with `tool_calls`, `tool`
            messages), oldest first. Never modified.
        keep_turns: Turns (an assistant message and its tool results) always kept whole
            at the end; `0` keeps everything.
        mask_at_chars: How much of the older results may pile up whole before they are
            all masked at once; `0` masks each as soon as it is older than `keep_turns`.

    Returns:
        A new list; messages that change are copies, the others are the same dicts.
    """
    out = list(cast("Sequence[dict[str, Any]]", messages))
    if keep_turns <= 0:
        return out
    starts = [i for i, m in enumerate(out) if m.get("role") == "assistant" and m.get("tool_calls")]
    starts.append(len(out))
    boundary = _boundary(out, starts, keep_turns, mask_at_chars)
    if boundary <= 0:
        return out
    calls = _calls_by_id(out[: starts[boundary]])
    for index in range(starts[0], starts[boundary]):
        message = out[index]
        if _maskable(message):
            name, arguments = calls.get(str(message.get("tool_call_id")), (None, ""))
            tool = name or str(message.get("name") or "the tool")
            out[index] = {**message, "content": placeholder(tool, arguments, message["content"])}
    return out


def _maskable(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return (
        message.get("role") == "tool"
        and isinstance(content, str)
        and len(content) >= MIN_MASKED_CHARS
    )


def _boundary(
    messages: Sequence[Mapping[str, Any]], starts: Sequence[int], keep: int, mask_at: int
) -> int:
    """How many turns, from the first, have their results masked.

    Replayed turn by turn over the conversation, which only grows, so the answer for a
    given conversation never changes and only moves forward as turns are added: each
    time the whole results between the boundary and the last `keep` turns add up to
    `mask_at` characters, the boundary jumps to the last `keep` turns.
    """
    boundary, pending = 0, 0
    for turn in range(len(starts) - 1):  # turn `turn` is now complete
        older = turn + 1 - keep  # turns [0, older) are older than the last `keep`
        if older <= boundary:
            continue
        pending += sum(
            len(m["content"]) for m in messages[starts[older - 1] : starts[older]] if _maskable(m)
        )
        if pending >= max(mask_at, 1):
            boundary, pending = older, 0
    return boundary


def placeholder(tool: str, arguments: str, content: str) -> str:
    """The one line that stands for an elided result: what it was, how to get it back."""
    lines = content.count("\n") + 1
    head = _head(content)
    started = f', starting "{head}"' if head else ""
    return (
        f"[elided: {tool}({_render_args(arguments)}) returned {lines:,} lines "
        f"({len(content):,} characters){started}. Call {tool} again to see it.]"
    )


def masked_call_llm(
    call_llm: LLMCallable, *, keep_turns: int, mask_at_chars: int = MASK_AT_CHARS
) -> LLMCallable:
    """`call_llm` shown the conversation through `mask_observations` (as is for 0)."""
    if keep_turns <= 0:
        return call_llm

    async def call(
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
    ) -> LLMMessage:
        shown = mask_observations(messages, keep_turns=keep_turns, mask_at_chars=mask_at_chars)
        return await call_llm(model, system, shown, tools)

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
