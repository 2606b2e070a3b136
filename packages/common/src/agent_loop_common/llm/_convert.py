"""Translate between flyte's Agent message shapes and litellm's, both ways.

The Agent already speaks the OpenAI chat format (it is what its default callback sends):
`messages` holds user, assistant (with `tool_calls` whose `arguments` are JSON
strings) and tool messages (with `tool_call_id`), and `tools` holds
`{"type": "function", "function": {name, description, parameters}}` entries. What it
expects back is `LLMMessage(content, tool_calls=[{id, name, arguments: dict}])`.

The translation is small but not empty: the system prompt goes first, an assistant turn
that only called tools gets `content=None` (Anthropic rejects empty text blocks), the
Agent's own dicts are copied rather than shared, and tool-call arguments are parsed
defensively (a truncated or malformed JSON string becomes `{"_raw": text}` so the tool
reports an error the model can see, instead of the loop crashing).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from flyte.ai.agents import LLMMessage

__all__ = [
    "CallTokens",
    "from_litellm_response",
    "parse_tool_arguments",
    "to_litellm_messages",
    "usage_tokens",
]


def to_litellm_messages(system: str, messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The request's message list: the system prompt, then copies of the Agent's messages."""
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in messages:
        copied = dict(message)
        calls = copied.get("tool_calls")
        if copied.get("role") == "assistant" and calls:
            if copied.get("content") == "":
                copied["content"] = None
            copied["tool_calls"] = [
                {**call, "function": dict(cast("Mapping[str, Any]", call.get("function", {})))}
                for call in cast("list[dict[str, Any]]", calls)
            ]
        out.append(copied)
    return out


def parse_tool_arguments(raw: object) -> dict[str, Any]:
    """A tool call's arguments as a dict, whatever shape the provider returned."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(cast("Mapping[str, Any]", raw))
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return {"_raw": raw}
        if isinstance(parsed, dict):
            return cast("dict[str, Any]", parsed)
        return {"_raw": parsed}
    return {"_raw": raw}


def _first_message(response: object) -> object:
    choices = cast("Sequence[object] | None", getattr(response, "choices", None))
    if not choices:
        raise ValueError("the model returned no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise ValueError("the model's first choice has no message")
    return message


def from_litellm_response(response: object) -> LLMMessage:
    """The Agent's `LLMMessage` from a litellm `ModelResponse` (duck-typed).

    Every tool call gets an id (providers that omit one get `call_<hex>`), its name, and
    its arguments as a dict; `raw` keeps the provider response for debugging.
    """
    message = _first_message(response)
    content = getattr(message, "content", None)
    tool_calls: list[dict[str, Any]] = []
    for call in cast("Sequence[object]", getattr(message, "tool_calls", None) or ()):
        function = getattr(call, "function", None)
        name = getattr(function, "name", None)
        if not isinstance(name, str) or not name:
            raise ValueError("the model returned a tool call without a function name")
        call_id = getattr(call, "id", None)
        tool_calls.append(
            {
                "id": call_id
                if isinstance(call_id, str) and call_id
                else f"call_{uuid.uuid4().hex[:12]}",
                "name": name,
                "arguments": parse_tool_arguments(getattr(function, "arguments", None)),
            }
        )
    text = content if isinstance(content, str) else ""
    return LLMMessage(content=text, tool_calls=tool_calls, raw=response)


@dataclass(frozen=True)
class CallTokens:
    """The tokens one response reports: input (cached parts included) and output."""

    prompt: int = 0
    """Input tokens, everything the request sent (litellm adds the cached parts in)."""
    completion: int = 0
    """Output tokens."""
    cache_read: int = 0
    """Of `prompt`, read from the provider's prompt cache."""
    cache_write: int = 0
    """Of `prompt`, written to the provider's prompt cache (Anthropic-style caches)."""


def _count(source: object, name: str) -> int:
    value = getattr(source, name, None) if source is not None else None
    if value is None and isinstance(source, Mapping):
        value = cast("Mapping[str, object]", source).get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_tokens(response: object) -> CallTokens:
    """The tokens reported with a response; zeros for what is absent.

    litellm normalizes every provider's cache report into
    `usage.prompt_tokens_details.cached_tokens` (reads: OpenAI's and DeepSeek's automatic
    caches, Anthropic's `cache_read_input_tokens`) and, for Anthropic-style caches,
    `usage.cache_creation_input_tokens` (writes); both are parts of `prompt_tokens`.
    """
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None) if usage is not None else None
    return CallTokens(
        prompt=_count(usage, "prompt_tokens"),
        completion=_count(usage, "completion_tokens"),
        cache_read=_count(details, "cached_tokens") or _count(usage, "cache_read_input_tokens"),
        cache_write=_count(usage, "cache_creation_input_tokens")
        or _count(details, "cache_creation_tokens"),
    )
