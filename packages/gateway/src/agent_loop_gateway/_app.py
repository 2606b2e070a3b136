"""`POST /webhook` and `GET /healthz`: the only HTTP surface of the gateway.

Each delivery goes through these steps in order, and the first that fails answers:

| step | refusal |
|---|---|
| `Content-Length` present and no `Transfer-Encoding` (GitHub sends neither chunked nor compressed bodies), before reading | 411 |
| size: `Content-Length` against the event's cap, before reading | 413 |
| `X-Hub-Signature-256` missing or not `sha256=` and 64 hex digits, before reading | 401 |
| room: `Content-Length` reserved from the byte budget, before reading | 429 (its source's share is taken), 503 (the whole budget is) |
| the body: read within the deadline, the HMAC computed as it streams | 408 |
| `X-Hub-Signature-256` against that HMAC, constant-time | 401 |
| `X-GitHub-Event` and `X-GitHub-Delivery` present | 400 |
| replay: delivery id or identical body seen lately | 204 |
| JSON object | 400 |
| routing (repository, sender, event, action) | 204 |
| accepted: checks and dispatch continue in the background | 202 |

Nothing before the signature parses the body, no body is read for a request that cannot
be signed or does not fit the budget (`_budget`: what the gateway holds is bounded in
bytes, whatever the number of connections), and a body that does not arrive within
`AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS` is given up (the server gives the request head
the same deadline: `_server`). A reservation is released when its request ends, however
it ends. A client that hangs up mid-body costs one log line. Nothing in the request
talks to GitHub or runs an agent: every answer is computed in memory, well inside
GitHub's ten-second limit. Every delivery is logged once with its outcome.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import structlog
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_loop_gateway._budget import source_of
from agent_loop_gateway._events import route_event
from agent_loop_gateway._gateway import Gateway
from agent_loop_gateway._signature import SignatureCheck

__all__ = ["build_app"]

_log = structlog.get_logger(__name__)


_SIGNATURE_SHAPE = re.compile(r"sha256=[0-9a-fA-F]{64}")
"""What GitHub's `X-Hub-Signature-256` looks like; anything else is refused unread."""


def _declared_length(request: Request) -> int | None:
    """The body's length as the HTTP parser will hold the client to it, or `None`.

    A request that names a transfer encoding has none: the parser frames its body by the
    encoding (`chunked` wins over `Content-Length`, RFC 9112 section 6.3), so a small
    `Content-Length` beside it would reserve a few bytes for a body of any size.
    """
    if "transfer-encoding" in request.headers:
        return None
    declared = (request.headers.get("content-length") or "").strip()
    return int(declared) if declared.isdigit() else None


class _LongerThanDeclared(Exception):
    """More body bytes arrived than the request's reservation."""


async def _receive(request: Request, check: SignatureCheck, size: int) -> bytes:
    """The body, fed to `check` chunk by chunk as it streams in; never more than `size`
    bytes (its reservation: the parser holds the client to its `Content-Length`, and this
    holds the gateway to it whatever the parser does)."""
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > size:
            raise _LongerThanDeclared
        check.update(chunk)
        body += chunk
    return bytes(body)


def _answer(
    status: int,
    outcome: str,
    *,
    delivery: str,
    event: str,
    action: str = "",
    reason: str = "",
    source: str = "",
) -> Response:
    level = "warning" if status in (400, 401, 408, 411, 413) else "info"
    getattr(_log, level)(
        "gateway.delivery",
        delivery=delivery or None,
        gh_event=event or None,
        action=action or None,
        status=status,
        outcome=outcome,
        reason=reason or None,
        source=source or None,
    )
    if status == 204:
        return Response(status_code=204)
    body: dict[str, Any] = {"outcome": outcome}
    if reason:
        body["reason"] = reason
    headers = {"Retry-After": "1"} if status in (429, 503) else None
    return JSONResponse(body, status_code=status, headers=headers)


def build_app(gateway: Gateway) -> Starlette:
    """The ASGI app over `gateway` (its lifespan resolves the agents' login and closes)."""
    config = gateway.config

    async def webhook(request: Request) -> Response:
        delivery = request.headers.get("x-github-delivery", "")
        event = request.headers.get("x-github-event", "")
        source = source_of(request.client.host if request.client is not None else None)
        seen = {"delivery": delivery, "event": event, "source": source}
        size = _declared_length(request)
        if size is None:
            reason = "Content-Length required, and no Transfer-Encoding"
            return _answer(411, "no_length", reason=reason, **seen)
        cap = config.body_cap(event)
        if size > cap:
            return _answer(413, "too_large", reason=f"over {cap} bytes", **seen)
        signature = request.headers.get("x-hub-signature-256")
        if signature is None or not _SIGNATURE_SHAPE.fullmatch(signature.strip()):
            return _answer(
                401, "bad_signature", reason="missing or malformed X-Hub-Signature-256", **seen
            )
        budget = gateway.bodies
        refused = budget.reserve(source, size)
        if refused == "source":
            reason = f"this address holds {budget.of(source)} bytes of deliveries already"
            return _answer(429, "busy", reason=reason, **seen)
        if refused == "total":
            return _answer(503, "busy", reason=f"{budget.held} bytes of deliveries held", **seen)
        try:
            return await signed(request, signature, size, seen)
        finally:
            budget.release(source, size)

    async def signed(request: Request, signature: str, size: int, seen: dict[str, str]) -> Response:
        """The rest of a delivery whose body fits its `size` bytes: received, checked,
        routed."""
        delivery = seen["delivery"]
        event = seen["event"]
        check = SignatureCheck(config.secret)
        try:
            async with asyncio.timeout(config.read_timeout_seconds):
                body = await _receive(request, check, size)
        except _LongerThanDeclared:
            return _answer(413, "too_large", reason=f"body longer than its {size} bytes", **seen)
        except TimeoutError:
            return _answer(
                408,
                "too_slow",
                reason=f"body not received within {config.read_timeout_seconds:g} s",
                **seen,
            )
        except ClientDisconnect:
            _log.info(
                "gateway.client_disconnected", delivery=delivery or None, source=seen["source"]
            )
            return Response(status_code=400)
        if not check.matches(signature):
            return _answer(
                401, "bad_signature", reason="missing or wrong X-Hub-Signature-256", **seen
            )
        if not delivery or not event:
            return _answer(
                400, "malformed", reason="missing X-GitHub-Event or X-GitHub-Delivery", **seen
            )
        replay = gateway.memory.check_and_remember(delivery, body)
        if replay is not None:
            return _answer(204, "replay", reason=f"same {replay} seen before", **seen)
        try:
            payload: object = json.loads(body)
        except ValueError:
            return _answer(400, "malformed", reason="body is not JSON", **seen)
        if not isinstance(payload, dict):
            return _answer(400, "malformed", reason="body is not a JSON object", **seen)
        data = cast("dict[str, Any]", payload)
        action = data.get("action")
        seen["action"] = action if isinstance(action, str) else ""
        routed = route_event(event, data, await gateway.route_context())
        if not routed.intents:
            return _answer(204, "ignored", reason=routed.reason, **seen)
        gateway.accept(delivery, routed.intents)
        runs = ", ".join(
            f"{i.agent}{'' if i.target is None else f' #{i.target}'}" for i in routed.intents
        )
        return _answer(202, "accepted", reason=runs, **seen)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok", "busy": gateway.dispatcher.busy})

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        await gateway.agent_login()
        _log.info("gateway.ready", repo=config.repo, agent_login=await gateway.agent_login())
        try:
            yield
        finally:
            await gateway.aclose()

    return Starlette(
        routes=[
            Route("/webhook", webhook, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )
