"""Who is calling and how much they may still call: tokens, App JWTs, rate limits.

`Authorization: token X` or `Bearer X` names a user; an unknown token is 401 "Bad
credentials". A JWT signed with a registered App key (RS256, `iss` = app id) authenticates
as the App on the App routes and can mint installation tokens that act as the App's bot
user. Rate limits follow GitHub's primary limit: a window per identity (5,000 by default,
60 anonymous), `x-ratelimit-*` on every response, 403 once exhausted, and conditional
requests answered 304 are free.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import cast

import jwt

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_http import Ctx, Reply, Route
from agent_loop_testing._emulator_render import Json, simple_user_json, ts
from agent_loop_testing._emulator_state import AppRec, State, UserRec

__all__ = ["ROUTES", "Caller", "RateLimiter", "authenticate"]

_DOCS = "https://docs.github.com/rest/apps"
_WINDOW_SECONDS = 3600


@dataclass(frozen=True)
class Caller:
    """The identity behind a request."""

    user: UserRec | None = None
    installation: bool = False
    app: AppRec | None = None

    @property
    def key(self) -> str:
        if self.app is not None:
            return f"app:{self.app.app_id}"
        return self.user.login if self.user is not None else "anonymous"


def _verify_jwt(st: State, token: str) -> AppRec:
    try:
        claims = cast("dict[str, object]", jwt.decode(token, options={"verify_signature": False}))
        app = st.apps.get(int(str(claims.get("iss", ""))))
        if app is None:
            raise ApiError(401, "'Issuer' claim ('iss') must be an Integer")
        jwt.decode(
            token,
            app.public_key_pem,
            algorithms=["RS256"],
            options={"require": ["exp", "iat", "iss"]},
        )
    except (jwt.PyJWTError, ValueError):
        raise ApiError(401, "A JSON web token could not be decoded") from None
    return app


def authenticate(st: State, authorization: str | None) -> Caller:
    """Map the Authorization header to a caller; 401 for anything GitHub would reject."""
    if not authorization:
        return Caller()
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() not in ("token", "bearer") or not token:
        raise ApiError(401, "Bad credentials")
    token = token.strip()
    if token.count(".") == 2 and token.startswith("ey"):
        return Caller(app=_verify_jwt(st, token))
    login = st.tokens.get(token)
    if login is None:
        raise ApiError(401, "Bad credentials")
    return Caller(user=st.users[login], installation=token in st.installation_tokens)


@dataclass
class _Window:
    limit: int
    used: int = 0
    reset: int = 0


@dataclass
class RateLimiter:
    """GitHub's primary rate limit, per identity, in real time (clients sleep on it)."""

    limit: int = 5000
    anonymous_limit: int = 60
    windows: dict[str, _Window] = field(default_factory=dict[str, _Window])

    def _window(self, key: str) -> _Window:
        now = int(time.time())
        window = self.windows.get(key)
        if window is None or window.reset <= now:
            limit = self.anonymous_limit if key == "anonymous" else self.limit
            window = _Window(limit, 0, now + _WINDOW_SECONDS)
            self.windows[key] = window
        return window

    def exhausted(self, key: str) -> bool:
        window = self._window(key)
        return window.used >= window.limit

    def count(self, key: str) -> None:
        self._window(key).used += 1

    def set_remaining(self, key: str, remaining: int) -> None:
        """Spend the window down (or back up) so that `remaining` requests are left."""
        window = self._window(key)
        window.used = max(0, window.limit - remaining)

    def reset(self, key: str) -> None:
        """Start a fresh window now, as GitHub does when `x-ratelimit-reset` passes."""
        self.windows.pop(key, None)

    def remaining(self, key: str) -> int:
        window = self._window(key)
        return max(0, window.limit - window.used)

    def headers(self, key: str) -> dict[str, str]:
        window = self._window(key)
        return {
            "x-ratelimit-limit": str(window.limit),
            "x-ratelimit-remaining": str(max(0, window.limit - window.used)),
            "x-ratelimit-reset": str(window.reset),
            "x-ratelimit-used": str(window.used),
            "x-ratelimit-resource": "core",
        }


def _app(ctx: Ctx) -> AppRec:
    if ctx.app is None:
        raise ApiError(401, "A JSON web token could not be decoded")
    return ctx.app


def _permissions() -> Json:
    return {
        "contents": "write",
        "issues": "write",
        "pull_requests": "write",
        "checks": "read",
        "statuses": "read",
        "metadata": "read",
    }


def get_app(st: State, ctx: Ctx) -> Reply:
    app = _app(ctx)
    created = ts(app.created_at)
    return Reply(
        200,
        {
            "id": app.app_id,
            "slug": app.slug,
            "node_id": f"A_{app.app_id}",
            "client_id": f"Iv1.{app.app_id:016x}",
            "owner": simple_user_json(st.user(st.owner), ctx.urls),
            "name": app.slug,
            "description": None,
            "external_url": f"{ctx.urls.web}/apps/{app.slug}",
            "html_url": f"{ctx.urls.web}/apps/{app.slug}",
            "created_at": created,
            "updated_at": created,
            "permissions": _permissions(),
            "events": [],
        },
    )


def get_installation(st: State, ctx: Ctx) -> Reply:
    app = _app(ctx)
    created = ts(app.created_at)
    return Reply(
        200,
        {
            "id": app.installation_id,
            "account": simple_user_json(st.user(st.owner), ctx.urls),
            "repository_selection": "selected",
            "access_tokens_url": f"{ctx.urls.api}/app/installations/{app.installation_id}/access_tokens",
            "repositories_url": f"{ctx.urls.api}/installation/repositories",
            "html_url": f"{ctx.urls.web}/settings/installations/{app.installation_id}",
            "app_id": app.app_id,
            "app_slug": app.slug,
            "target_id": st.user(st.owner).id,
            "target_type": "User",
            "permissions": _permissions(),
            "events": [],
            "created_at": created,
            "updated_at": created,
            "single_file_name": None,
            "suspended_by": None,
            "suspended_at": None,
        },
    )


def create_token(st: State, ctx: Ctx) -> Reply:
    """An installation token acting as the App's bot user.

    `expires_at` is one hour of real time ahead, not emulated time: clients (githubkit)
    compute the token's cache lifetime against their own clock.
    """
    app = _app(ctx)
    if ctx.int_param("installation_id") != app.installation_id:
        raise ApiError(404, "Not Found")
    token = st.new_token("ghs_", f"emulator{st.new_id():06d}{app.installation_id}")
    st.tokens[token] = f"{app.slug}[bot]"
    st.installation_tokens.add(token)
    expires = datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    return Reply(
        201,
        {
            "token": token,
            "expires_at": ts(expires),
            "permissions": _permissions(),
            "repository_selection": "selected",
        },
    )


ROUTES = [
    Route("GET", "/app", get_app, f"{_DOCS}/apps#get-the-authenticated-app"),
    Route(
        "GET",
        "/repos/{owner}/{repo}/installation",
        get_installation,
        f"{_DOCS}/apps#get-a-repository-installation-for-the-authenticated-app",
    ),
    Route(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        create_token,
        f"{_DOCS}/apps#create-an-installation-access-token-for-an-app",
    ),
]
