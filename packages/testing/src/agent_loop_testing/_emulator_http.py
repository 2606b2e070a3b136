"""Request context, replies, body parsing and pagination for the emulator's routes.

Route handlers are plain synchronous functions `(State, Ctx) -> Reply`: the app reads the
request body first and then runs the handler under the state lock, so each request is
one atomic step, the way GitHub's ref updates and PR creation are atomic.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_render import Json, Urls
from agent_loop_testing._emulator_state import AppRec, State, UserRec

__all__ = ["Ctx", "Handler", "Reply", "Route", "paginate"]

T = TypeVar("T")


@dataclass(frozen=True)
class Ctx:
    """One parsed request, as the route handlers see it."""

    method: str
    path: str
    url: str
    params: Mapping[str, str]
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes
    urls: Urls
    page_size_default: int
    user: UserRec | None = None
    installation: bool = False
    app: AppRec | None = None

    def json(self) -> Json:
        """The JSON object body; 400 "Problems parsing JSON" like GitHub otherwise."""
        if not self.body:
            return {}
        try:
            data: object = json.loads(self.body)
        except ValueError:
            raise ApiError(400, "Problems parsing JSON") from None
        if not isinstance(data, dict):
            raise ApiError(400, "Problems parsing JSON")
        return cast("Json", data)

    def int_param(self, name: str) -> int:
        try:
            return int(self.params[name])
        except ValueError:
            raise ApiError(404, "Not Found") from None

    def caller(self) -> UserRec:
        """The authenticated caller; 401 "Requires authentication" for anonymous calls."""
        if self.user is None:
            raise ApiError(401, "Requires authentication")
        return self.user

    def require(self, role: str = "read") -> UserRec:
        """The caller, who must be authenticated and hold at least `role`."""
        if self.user is None:
            raise ApiError(401, "Requires authentication")
        if not self.user.can(role):
            who = "integration" if self.installation else "personal access token"
            raise ApiError(403, f"Resource not accessible by {who}")
        return self.user

    def accepts(self, media: str) -> bool:
        return media in self.headers.get("accept", "")


@dataclass
class Reply:
    """What a handler answers: JSON (`body`) or bytes (`raw`) plus headers."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    content_type: str = "application/json; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict[str, str])


Handler = Callable[[State, Ctx], Reply]


@dataclass(frozen=True)
class Route:
    """A REST route: Starlette path template, handler, and GitHub's docs link for errors."""

    method: str
    path: str
    handler: Handler
    docs: str


def string(body: Json, key: str, *, required: bool = True) -> str | None:
    """A string field of a JSON body with GitHub's 422 wording when it is wrong."""
    value = body.get(key)
    if value is None:
        if required:
            raise ApiError(422, f'Invalid request.\n\n"{key}" wasn\'t supplied.')
        return None
    if not isinstance(value, str):
        raise ApiError(
            422, f"Invalid request.\n\nFor 'properties/{key}', {json.dumps(value)} is not a string."
        )
    return value


def strings(body: Json, key: str) -> list[str] | None:
    """A list-of-strings field (labels); also accepts `[{"name": ...}]` like GitHub."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ApiError(
            422, f"Invalid request.\n\nFor 'properties/{key}', {json.dumps(value)} is not an array."
        )
    out: list[str] = []
    for item in cast("list[object]", value):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(name := cast("Json", item).get("name"), str):
            out.append(name)
        else:
            raise ApiError(
                422, f"Invalid request.\n\nFor 'items', {json.dumps(item)} is not a string."
            )
    return out


def _int_query(ctx: Ctx, key: str, default: int) -> int:
    try:
        return int(ctx.query.get(key, default))
    except ValueError:
        return default


def _page_url(url: str, page: int) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "page"]
    query.append(("page", str(page)))
    return urlunsplit(parts._replace(query=urlencode(query)))


def paginate(ctx: Ctx, items: Sequence[T]) -> tuple[list[T], dict[str, str]]:
    """One page of `items` and GitHub's `Link` header (absolute URLs, rel prev/next/last/first).

    `per_page` defaults to the emulator's page size and is capped at 100; out-of-range
    pages are empty, as on GitHub.
    """
    per_page = max(1, min(100, _int_query(ctx, "per_page", ctx.page_size_default)))
    page = max(1, _int_query(ctx, "page", 1))
    last = max(1, math.ceil(len(items) / per_page))
    chunk = list(items[(page - 1) * per_page : page * per_page])
    links: list[str] = []
    if page > 1:
        links.append(f'<{_page_url(ctx.url, min(page - 1, last))}>; rel="prev"')
    if page < last:
        links.append(f'<{_page_url(ctx.url, page + 1)}>; rel="next"')
        links.append(f'<{_page_url(ctx.url, last)}>; rel="last"')
    if page > 1:
        links.append(f'<{_page_url(ctx.url, 1)}>; rel="first"')
    return chunk, ({"Link": ", ".join(links)} if links else {})


def page_reply(ctx: Ctx, items: Sequence[Json]) -> Reply:
    chunk, headers = paginate(ctx, items)
    return Reply(200, chunk, headers=headers)
