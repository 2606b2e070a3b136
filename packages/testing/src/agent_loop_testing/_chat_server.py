"""An OpenAI-compatible chat-completions server on loopback, answered by a scripted model.

Most tests install their model in-process (`use_model`), which skips litellm. A few
must prove what happens when the model really goes through litellm over HTTP, as with
`AGENT_LOOP_MODEL=openai/<name>` and `AGENT_LOOP_API_BASE` pointing at a local server:
request building, response parsing, usage capture, and what litellm writes to the
terminal. This server speaks just enough of `POST /v1/chat/completions` for that, and
answers each request by calling a `call_llm` (a `ScriptedModel`), so the script and its
checks are the same as in-process.

```python
with serve_chat_model(ScriptedModel([...])) as api_base:   # http://127.0.0.1:N/v1
    ...  # AGENT_LOOP_MODEL=openai/scripted, AGENT_LOOP_API_BASE=api_base
```
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any, cast

from flyte.ai.agents import LLMCallable, LLMMessage
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from agent_loop_testing._emulator_server import serve_app

__all__ = ["ChatServer", "serve_chat_model"]


class ChatServer:
    """The ASGI app behind `serve_chat_model`; `requests` counts the completions asked,
    `listings` the model listings (`GET /v1/models`, what the tick's probe asks).

    With `key`, every request must carry `Authorization: Bearer <key>` (else 401), as a
    provider that refuses a wrong key does.
    """

    def __init__(self, model: LLMCallable, *, key: str | None = None) -> None:
        self.model = model
        self.key = key
        self.requests = 0
        self.listings = 0
        self.closing = threading.Event()
        self.app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._complete, methods=["POST"]),
                Route("/chat/completions", self._complete, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
                Route("/models", self._models, methods=["GET"]),
            ]
        )

    def _refused(self, request: Request) -> JSONResponse | None:
        if self.key is None or request.headers.get("authorization") == f"Bearer {self.key}":
            return None
        error = {"message": "Incorrect API key provided.", "type": "invalid_request_error"}
        return JSONResponse({"error": error}, status_code=401)

    async def _models(self, request: Request) -> JSONResponse:
        self.listings += 1
        refused = self._refused(request)
        if refused is not None:
            return refused
        listed = {"id": "scripted", "object": "model", "created": 0, "owned_by": "agent-loop"}
        return JSONResponse({"object": "list", "data": [listed]})

    async def _complete(self, request: Request) -> JSONResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        self.requests += 1
        body = cast("dict[str, Any]", await request.json())
        messages = cast("list[dict[str, Any]]", body.get("messages", []))
        system = "\n".join(
            str(m.get("content") or "") for m in messages if m.get("role") == "system"
        )
        rest = [m for m in messages if m.get("role") != "system"]
        tools = cast("list[dict[str, Any]] | None", body.get("tools"))
        model = str(body.get("model", ""))
        try:
            reply = await self.model(model, system, rest, tools)
        except Exception as exc:  # a script mismatch: a 400 is never retried
            error = {"message": f"{type(exc).__name__}: {exc}", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=400)
        return JSONResponse(_completion(model, reply, self.requests))


def _completion(model: str, reply: LLMMessage, number: int) -> dict[str, Any]:
    calls = [
        {
            "id": str(c.get("id") or f"call_{number}_{i}"),
            "type": "function",
            "function": {"name": str(c["name"]), "arguments": json.dumps(c.get("arguments", {}))},
        }
        for i, c in enumerate(reply.tool_calls or [])
    ]
    raw_reply: object = reply.raw
    raw = cast("dict[str, Any]", raw_reply) if isinstance(raw_reply, dict) else {}
    usage = cast("dict[str, Any]", raw.get("usage") or {})
    prompt, completion = usage.get("prompt_tokens", 10), usage.get("completion_tokens", 5)
    details = cast("dict[str, int]", usage.get("prompt_tokens_details") or {})
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            # what OpenAI reports of a prompt whose prefix it served from its cache
            "prompt_tokens_details": {"cached_tokens": details.get("cached_tokens", 0)},
        },
    }


@contextmanager
def serve_chat_model(model: LLMCallable, *, key: str | None = None) -> Generator[str]:
    """Serve `model` as an OpenAI-compatible API on 127.0.0.1; yields its base URL
    (ending in `/v1`, what `AGENT_LOOP_API_BASE` takes). With `key`, a request without
    that bearer key is refused (401)."""
    server = ChatServer(model, key=key)
    with serve_app(server.app, server.closing) as url:
        yield f"{url}/v1"
