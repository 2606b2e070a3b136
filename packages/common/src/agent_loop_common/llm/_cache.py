"""Prompt-cache breakpoints: where a request tells the provider to cache its prefix.

Providers with explicit markers (Anthropic, and Claude on Bedrock, Vertex AI and Azure
AI, as litellm maps them) cache a request's prefix up to each content block carrying
`cache_control: {"type": "ephemeral"}` for five minutes; a later request starting with
the same bytes reads it back at a tenth of the input price (writing costs 1.25x). The
prefix is ordered tools, system, messages, so every request of a conversation marks:

1. the system message: the tools and the agent's instructions, the same for every try of
   a run and for every run of the role, so a retry's new conversation (and concurrent
   runs of the same role) still read them from the cache;
2. the first user message: the task (maintainers' instructions, lessons, the issue),
   the end of the conversation's stable prefix;
3. the last message: the conversation so far, which the next turn reads back whole and
   extends by one assistant turn and its tool results.

Three of the four markers a request may carry. Providers that cache on their own
(OpenAI, DeepSeek, Gemini 2.5+) need no marker, only a byte-identical prefix, which the
prompts keep (nothing that varies between turns or runs comes before what does not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["CACHE_CONTROL", "with_cache_breakpoints"]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
"""The marker on a content block: cache the prefix up to here (five minutes)."""


def with_cache_breakpoints(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of `messages` (litellm's shape: the system prompt first) with breakpoints
    on the system message, the first user message and the last message.

    A marked message's text becomes one content block carrying `CACHE_CONTROL` (a list
    of blocks gets it on its last block). A message with no text to mark (an assistant
    turn that only called tools, an empty text) is left as it is: providers reject a
    marker on an empty block.

    Every other user and tool message's text becomes one content block too, unmarked: a
    message is sent in the same shape whether or not it carries this turn's marker, so
    the bytes of the conversation so far do not change when the marker moves on.
    """
    out = [dict(message) for message in messages]
    for message in out:
        content = message.get("content")
        if message.get("role") in ("user", "tool") and isinstance(content, str) and content:
            message["content"] = [{"type": "text", "text": content}]
    targets: list[int] = []
    system = next((i for i, m in enumerate(out) if m.get("role") == "system"), None)
    first_user = next((i for i, m in enumerate(out) if m.get("role") == "user"), None)
    for index in (system, first_user, len(out) - 1 if out else None):
        if index is not None and index not in targets:
            targets.append(index)
    for index in targets:
        marked = _marked(out[index].get("content"))
        if marked is not None:
            out[index]["content"] = marked
    return out


def _marked(content: object) -> list[dict[str, Any]] | None:
    """`content` as content blocks whose last one carries the marker; `None`: no text."""
    if isinstance(content, str):
        if not content:
            return None
        return [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}]
    if isinstance(content, list) and content:  # a list of content blocks
        blocks = cast("list[object]", content)
        if not all(isinstance(block, Mapping) for block in blocks):
            return None
        copies = [dict(cast("Mapping[str, Any]", block)) for block in blocks]
        last = copies[-1]
        if last.get("type") == "text" and not last.get("text"):
            return None
        last["cache_control"] = dict(CACHE_CONTROL)
        return copies
    return None
