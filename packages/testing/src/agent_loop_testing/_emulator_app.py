"""The Starlette app: routing, auth, rate limits, ETags, faults and the request log.

Every route is served twice, under `/` (api.github.com style) and under `/api/v3`
(GitHub Enterprise Server style). The read-only web pages the `html_url`s point at
(`_emulator_web`) are served beside them, outside the API's bookkeeping. Each request: injected fault (if one matches) ->
authenticate -> rate limit -> handler under the state lock -> ETag / 304 -> headers ->
log. A 304 does not use up the rate limit, as on GitHub.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.routing import Route as StarletteRoute

from agent_loop_testing import (
    _emulator_auth,
    _emulator_graphql,
    _emulator_routes_checks,
    _emulator_routes_git,
    _emulator_routes_issues,
    _emulator_routes_pulls,
    _emulator_routes_reactions,
    _emulator_routes_repo,
)
from agent_loop_testing._emulator_auth import Caller, RateLimiter, authenticate
from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_faults import (
    GHES_PREFIX,
    Fault,
    FaultBook,
    LoggedRequest,
    api_path,
)
from agent_loop_testing._emulator_http import Ctx, Reply, Route
from agent_loop_testing._emulator_render import Urls
from agent_loop_testing._emulator_state import State
from agent_loop_testing._emulator_web import web_routes

__all__ = ["EmulatorApp"]

API_ROUTES: list[Route] = [
    *_emulator_routes_git.ROUTES,
    *_emulator_routes_issues.ROUTES,
    *_emulator_routes_pulls.ROUTES,
    *_emulator_routes_reactions.ROUTES,
    *_emulator_routes_checks.ROUTES,
    *_emulator_routes_repo.ROUTES,
    *_emulator_auth.ROUTES,
    *_emulator_graphql.ROUTES,
]
_ALL_METHODS = ["GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"]
_DEFAULT_MESSAGES = {
    403: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    429: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    500: "Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "We couldn't respond to your request in time. Sorry about that. Please try resubmitting your request and contact us if the problem persists.",
}

Endpoint = Callable[[Request], Awaitable[Response]]


def _etag(body: bytes) -> str:
    return 'W/"' + hashlib.sha256(body).hexdigest() + '"'


def _etag_matches(header: str, etag: str) -> bool:
    def norm(tag: str) -> str:
        return tag.strip().removeprefix("W/")

    return any(norm(tag) in (norm(etag), "*") for tag in header.split(","))


class EmulatorApp:
    """Builds the ASGI app over one `State` and owns its per-request bookkeeping."""

    def __init__(self, st: State, faults: FaultBook, limiter: RateLimiter) -> None:
        self.st = st
        self.faults = faults
        self.limiter = limiter
        self.log: list[LoggedRequest] = []
        self.closing = threading.Event()
        self.hang_seconds = 30.0
        self._request_no = 0
        self.app = self._build()

    def _build(self) -> Starlette:
        routes: list[BaseRoute] = [
            StarletteRoute(r.path, self._endpoint(r), methods=[r.method]) for r in API_ROUTES
        ]
        routes.append(StarletteRoute("/{rest:path}", self._endpoint(None), methods=_ALL_METHODS))
        codeload = [
            StarletteRoute(r.path, self._endpoint(r, counted=False), methods=[r.method])
            for r in _emulator_routes_repo.CODELOAD_ROUTES
        ]
        # GHES serves GraphQL at /api/graphql, beside (not under) its /api/v3 REST root.
        ghes_graphql = [
            StarletteRoute(
                _emulator_graphql.GHES_GRAPHQL_PATH, self._endpoint(r), methods=[r.method]
            )
            for r in _emulator_graphql.ROUTES
        ]
        # The web pages (`html_url`s) sit under the API routes (`/user/repos` is an API
        # route, not a repository page) and before the catch-all 404.
        api, catch_all = routes[:-1], routes[-1]
        return Starlette(
            routes=[
                *codeload,
                *ghes_graphql,
                Mount(GHES_PREFIX, routes=routes),
                *api,
                *web_routes(self.st),
                catch_all,
            ]
        )

    # ------------------------------------------------------------------ helpers
    def _urls(self, request: Request) -> Urls:
        web = f"{request.url.scheme}://{request.url.netloc}"
        ghes = request.url.path.startswith(GHES_PREFIX + "/")
        return Urls(web + (GHES_PREFIX if ghes else ""), web, self.st.owner, self.st.name)

    def _error(self, err: ApiError, docs: str) -> Reply:
        body: dict[str, Any] = {"message": err.message}
        if err.errors is not None:
            body["errors"] = err.errors
        body["documentation_url"] = docs
        body["status"] = str(err.status)
        return Reply(err.status, body, headers=dict(err.headers))

    def _fault_reply(self, fault: Fault) -> Reply:
        assert fault.status is not None
        body = fault.body
        if body is None:
            message = _DEFAULT_MESSAGES.get(fault.status, "Injected fault")
            body = {
                "message": message,
                "documentation_url": "https://docs.github.com/rest",
                "status": str(fault.status),
            }
        if isinstance(body, bytes):
            return Reply(fault.status, raw=body, headers=dict(fault.headers))
        return Reply(fault.status, body, headers=dict(fault.headers))

    async def _hang(self, request: Request) -> None:
        deadline = time.monotonic() + self.hang_seconds
        while time.monotonic() < deadline and not self.closing.is_set():
            if await request.is_disconnected():
                return
            await asyncio.sleep(0.02)

    def _to_response(
        self, reply: Reply, method: str, request: Request, key: str, count: bool
    ) -> Response:
        """Serialise, add ETag (304 on a match), rate-limit and GitHub headers."""
        headers = dict(reply.headers)
        if reply.raw is not None:
            payload = reply.raw
        elif reply.body is None and reply.status in (204, 304):
            payload = b""
        else:
            payload = json.dumps(reply.body, separators=(",", ":"), ensure_ascii=False).encode()
        status = reply.status
        if method == "GET" and status == 200:
            etag = _etag(payload)
            headers["ETag"] = etag
            headers["Cache-Control"] = "private, max-age=60, s-maxage=60"
            headers["Vary"] = "Accept, Authorization, Cookie, X-GitHub-OTP"
            inm = request.headers.get("if-none-match")
            if inm is not None and _etag_matches(inm, etag):
                status, payload = 304, b""
        if count and status != 304:
            self.limiter.count(key)
        self._request_no += 1
        base = self.limiter.headers(key)
        base.update(
            {
                "x-github-request-id": f"EMU0:{self._request_no:08X}",
                "x-github-api-version-selected": request.headers.get(
                    "x-github-api-version", "2022-11-28"
                ),
                "x-github-media-type": "github.v3; format=json",
            }
        )
        base.update(headers)
        media = None if status in (204, 304) else reply.content_type
        return Response(payload, status_code=status, headers=base, media_type=media)

    # ------------------------------------------------------------------ endpoint
    def _endpoint(self, route: Route | None, *, counted: bool = True) -> Endpoint:
        docs = route.docs if route else "https://docs.github.com/rest"

        async def endpoint(request: Request) -> Response:
            method = request.method
            path = api_path(request.url.path)
            body = await request.body()
            fault = self.faults.take(method, path, body=body)
            if fault is not None and fault.delay:
                await asyncio.sleep(fault.delay)
            if fault is not None and fault.timeout:
                with self.st.lock:
                    self.log.append(LoggedRequest(method, path, 0))
                await self._hang(request)
                return Response(b"", status_code=504)
            with self.st.lock:
                if fault is not None and fault.before is not None:
                    fault.before()
                caller = Caller()
                count = counted
                try:
                    caller = authenticate(self.st, request.headers.get("authorization"))
                    if fault is not None and fault.status is not None and fault.after:
                        self._handle(route, request, path, body, caller)
                        reply, count = self._fault_reply(fault), False
                    elif fault is not None and fault.status is not None:
                        reply, count = self._fault_reply(fault), False
                    else:
                        reply = self._handle(route, request, path, body, caller)
                except ApiError as err:
                    reply = self._error(err, docs)
                response = self._to_response(reply, method, request, caller.key, count)
                self.log.append(LoggedRequest(method, path, response.status_code))
                return response

        return endpoint

    def _handle(
        self, route: Route | None, request: Request, path: str, body: bytes, caller: Caller
    ) -> Reply:
        if route is None:
            raise ApiError(404, "Not Found")
        if self.limiter.exhausted(caller.key):
            who = caller.user.id if caller.user else "anonymous"
            raise ApiError(403, f"API rate limit exceeded for user ID {who}.")
        params = {k: str(v) for k, v in request.path_params.items()}
        owner, repo = params.get("owner"), params.get("repo")
        if owner is not None and (owner.lower(), (repo or "").lower()) != (
            self.st.owner.lower(),
            self.st.name.lower(),
        ):
            raise ApiError(404, "Not Found")
        ctx = Ctx(
            method=request.method,
            path=path,
            url=str(request.url),
            params=params,
            query=dict(request.query_params.items()),
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            urls=self._urls(request),
            page_size_default=self.st.page_size_default,
            user=caller.user,
            installation=caller.installation,
            app=caller.app,
        )
        return route.handler(self.st, ctx)
