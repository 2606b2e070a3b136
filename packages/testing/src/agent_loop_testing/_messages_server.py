"""An Anthropic Messages API on loopback, answered by a scripted model, caching prompts.

`serve_chat_model` covers models reached through litellm's OpenAI client. This is the
same for Anthropic models (`AGENT_LOOP_MODEL=anthropic/claude-...` with
`AGENT_LOOP_API_BASE` pointing here): litellm's Anthropic client posts to
`<api_base>/v1/messages`, with the system prompt and the tools apart, tool calls as
`tool_use` blocks and their results as `tool_result` blocks, and prompt-cache
breakpoints as `cache_control` on blocks. The server translates each request into the
`call_llm` shape (`(model, system, messages, tools)`, OpenAI-style messages), asks the
model (a `ScriptedModel`, so the script and its checks are the same as in-process),
and answers in Anthropic's shape. Its usage comes from a `SimulatedPromptCache`, so a
test or a benchmark sees what the provider would bill: `cache_read_input_tokens`,
`cache_creation_input_tokens`, `input_tokens`; output tokens are the reply's, counted
the same way.

```python
with serve_messages_model(ScriptedModel([...])) as server:   # server.api_base
    ...  # AGENT_LOOP_MODEL=anthropic/claude-sonnet-4-5, AGENT_LOOP_API_BASE=server.api_base
server.requests      # every request body as received (breakpoints, prefixes)
server.charges       # what each was charged
```
"""

from __future__ import annotations

import json
import threading
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from flyte.ai.agents import LLMCallable, LLMMessage
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_loop_testing._emulator_server import serve_app
from agent_loop_testing._prompt_cache import CacheCharge, SimulatedPromptCache, approx_tokens

__all__ = [
    "MessagesServer",
    "serve_messages_model",
    "to_call_llm_shape",
    "unpaired_tool_result",
]


@dataclass
class MessagesServer:
    """The ASGI app behind `serve_messages_model` and what it saw."""

    model: LLMCallable
    """Answers each request (a `ScriptedModel`)."""
    cache: SimulatedPromptCache = field(default_factory=SimulatedPromptCache)
    """The provider's cache every request is charged against."""
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """Each request body, as received."""
    charges: list[CacheCharge] = field(default_factory=list[CacheCharge])
    """What each request was charged, in order."""
    api_base: str = ""
    """The URL to give litellm (`AGENT_LOOP_API_BASE`), once served."""
    closing: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.app = Starlette(routes=[Route("/v1/messages", self._messages, methods=["POST"])])

    async def _messages(self, request: Request) -> JSONResponse:
        body = cast("dict[str, Any]", await request.json())
        self.requests.append(body)
        problem = unpaired_tool_result(body)
        if problem:  # Anthropic answers 400 for a tool result without its tool call
            error = {"type": "invalid_request_error", "message": problem}
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        model = str(body.get("model", ""))
        system, messages, tools = to_call_llm_shape(body)
        try:
            reply = await self.model(model, system, messages, tools)
        except Exception as exc:  # a script mismatch: a 400 is never retried
            error = {"type": "invalid_request_error", "message": f"{type(exc).__name__}: {exc}"}
            return JSONResponse({"type": "error", "error": error}, status_code=400)
        charge = self.cache.charge(body)
        self.charges.append(charge)
        return JSONResponse(_message(model, reply, charge, len(self.requests)))


def unpaired_tool_result(body: Mapping[str, Any]) -> str:
    """Why Anthropic would refuse the request's tool results, or "": each `tool_result`
    must answer a `tool_use` of the assistant message right before it."""
    previous: set[str] = set()
    for index, message in enumerate(cast("list[dict[str, Any]]", body.get("messages") or [])):
        content = message.get("content")
        blocks = cast("list[dict[str, Any]]", content) if isinstance(content, list) else []
        if message.get("role") == "user":
            for block in blocks:
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in previous:
                    return (
                        f"messages.{index}: tool_result block(s) with id "
                        f"{block.get('tool_use_id')!r} without a tool_use block in the previous message"
                    )
        previous = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"}
    return ""


def to_call_llm_shape(
    body: Mapping[str, Any],
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]] | None]:
    """`(system, messages, tools)` of a Messages API request, as the Agent's `call_llm`
    gets them: OpenAI-style messages (assistant `tool_calls`, `tool` results)."""
    system_field = body.get("system")
    if isinstance(system_field, list):
        system = "\n".join(
            str(b.get("text", "")) for b in cast("list[dict[str, Any]]", system_field)
        )
    else:
        system = str(system_field or "")
    messages: list[dict[str, Any]] = []
    for message in cast("list[dict[str, Any]]", body.get("messages") or []):
        role = str(message.get("role"))
        content = message.get("content")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        blocks = cast("list[dict[str, Any]]", content or [])
        text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
        if role == "assistant":
            calls = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": json.dumps(b.get("input", {})),
                    },
                }
                for b in blocks
                if b.get("type") == "tool_use"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = calls
            messages.append(entry)
            continue
        messages.extend(
            {
                "role": "tool",
                "tool_call_id": str(block.get("tool_use_id")),
                "content": _result_text(block.get("content")),
            }
            for block in blocks
            if block.get("type") == "tool_result"
        )
        if text:
            messages.append({"role": role, "content": text})
    tools = [
        {
            "type": "function",
            "function": {
                "name": str(t.get("name")),
                "description": str(t.get("description", "")),
                "parameters": t.get("input_schema", {}),
            },
        }
        for t in cast("list[dict[str, Any]]", body.get("tools") or [])
    ]
    return system, messages, tools or None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    blocks = cast("list[dict[str, Any]]", content or [])
    return "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")


def _message(model: str, reply: LLMMessage, charge: CacheCharge, number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for i, call in enumerate(reply.tool_calls or []):
        content.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or f"toolu_{number}_{i}"),
                "name": str(call["name"]),
                "input": call.get("arguments") or {},
            }
        )
    output = sum(approx_tokens(block) for block in content) or 1
    return {
        "id": f"msg_{number:06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": charge.input_tokens,
            "cache_read_input_tokens": charge.cache_read_input_tokens,
            "cache_creation_input_tokens": charge.cache_creation_input_tokens,
            "output_tokens": output,
        },
    }


@contextmanager
def serve_messages_model(
    model: LLMCallable, *, cache: SimulatedPromptCache | None = None
) -> Generator[MessagesServer]:
    """Serve `model` as an Anthropic Messages API on 127.0.0.1; yields the server, whose
    `api_base` is what `AGENT_LOOP_API_BASE` takes."""
    server = MessagesServer(model, cache=cache or SimulatedPromptCache())
    with serve_app(server.app, server.closing) as url:
        server.api_base = url
        yield server
