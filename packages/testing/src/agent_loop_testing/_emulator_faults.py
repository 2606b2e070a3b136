"""Fault injection and the request log.

A fault matches by method (or `*`) and a regex searched in the API path (without any
`/api/v3` prefix or query string), fires a given number of times, and then the route
behaves normally again. Kinds:

- an error status (5xx, 429, 403...) with optional headers (`Retry-After`,
  `x-ratelimit-remaining: 0`) and body;
- a slow response (`delay` seconds; with `status=None` the real answer follows);
- a timeout: over `transport()` the client sees `httpx.ReadTimeout` raised by the
  wrapper transport; over `serve()` the server holds the request open until the client
  gives up (or the server stops), so the client's own timeout fires;
- an ambiguous failure (`after=True`): the request takes effect, then the error status
  is answered instead of the result, as when GitHub's front end fails after the work;
- a race (`before=`, usually with `status=None`): something happens on GitHub just
  before the request is handled, as when a person deletes a comment between a client's
  listing and its next read.

A fault with a `body_regex` matches only requests whose body holds it: one GraphQL query
among the others (a GitHub-like server without some field answers that query only with
an error).
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import httpx

__all__ = ["Fault", "FaultBook", "LoggedRequest", "TimeoutTransport", "api_path"]

GHES_PREFIX = "/api/v3"


def api_path(path: str) -> str:
    """The REST path as GitHub.com would see it (GHES `/api/v3` prefix removed)."""
    if path == GHES_PREFIX or path.startswith(GHES_PREFIX + "/"):
        return path[len(GHES_PREFIX) :] or "/"
    return path


class LoggedRequest(NamedTuple):
    """One request the emulator answered; `status` 0 means the client saw a timeout."""

    method: str
    path: str
    status: int


@dataclass
class Fault:
    """An injected failure; `remaining` counts down as it fires."""

    method: str
    pattern: re.Pattern[str]
    status: int | None
    remaining: int
    headers: dict[str, str] = field(default_factory=dict[str, str])
    delay: float = 0.0
    timeout: bool = False
    body: object = None
    after: bool = False
    """Answer the error only after the request took effect."""
    before: Callable[[], None] | None = None
    """Run (under the state lock) just before the request is handled."""
    fired: int = 0
    body_pattern: re.Pattern[str] | None = None
    """Match only requests whose body this regex is found in (one GraphQL query among
    others, all posted to `/graphql`)."""

    def matches(self, method: str, path: str, body: bytes = b"") -> bool:
        return (
            self.remaining > 0
            and self.method in ("*", method.upper())
            and self.pattern.search(path) is not None
            and (
                self.body_pattern is None
                or self.body_pattern.search(body.decode("utf-8", "replace")) is not None
            )
        )


class FaultBook:
    """The armed faults, consumed first-armed-first by matching requests."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(
        self, method: str, path: str, *, timeouts_only: bool = False, body: bytes = b""
    ) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.matches(method, path, body) and (fault.timeout or not timeouts_only):
                    fault.remaining -= 1
                    fault.fired += 1
                    return fault
        return None

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()


class TimeoutTransport(httpx.AsyncBaseTransport):
    """The in-process transport: ASGI to the app, with client-side timeouts injected.

    An ASGI app cannot make the client time out, so timeout faults are taken here,
    before the request reaches the app, and raised as the `httpx.ReadTimeout` a real
    connection would produce.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        faults: FaultBook,
        log: list[LoggedRequest],
        lock: threading.RLock,
    ) -> None:
        self._inner = inner
        self._faults = faults
        self._log = log
        self._lock = lock

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        path = api_path(request.url.path)
        fault = self._faults.take(request.method, path, timeouts_only=True)
        if fault is not None:
            if fault.delay:
                await asyncio.sleep(fault.delay)
            with self._lock:
                self._log.append(LoggedRequest(request.method, path, 0))
            raise httpx.ReadTimeout(f"emulated timeout on {request.method} {path}", request=request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
