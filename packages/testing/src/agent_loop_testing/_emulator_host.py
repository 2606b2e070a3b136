"""`GitHubHost`: several emulated repositories behind one API root, as on github.com.

One `GitHubEmulator` models one repository; a deployment with `AGENT_LOOP_REPOS` talks
to many through one base URL and one identity. The host routes each request by the
repository in its path (`/repos/{owner}/{repo}/...`; GraphQL by the `owner` and `name`
variables of its query, or the `branch.repositoryNameWithOwner` of a mutation's input,
which also carries a `createRef` sent in the same document; a lone `createRef` names its
repository only by node id and goes to the first; a web page by the `/{owner}/{repo}`
its path starts with) to that repository's emulator, and everything else (`/user`,
`/app`, `/user/repos`, `/installation/repositories`, a repository it does not hold) to
the first one, whose answer for an unknown repository is GitHub's 404. Every
repository has the same people and tokens (same logins, same tokens) and they share
one rate limiter, because GitHub counts a token's requests across all its repositories.

```python
host = GitHubHost(["acme/api", "acme/web"])
host["acme/api"].add_issue("Fix it")
with host.serve() as url: ...           # GITHUB_API_URL=url, GITHUB_TOKEN=host.bot_token
```
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

import httpx
from starlette.types import Message, Receive, Scope, Send

from agent_loop_testing._emulator import GitHubEmulator
from agent_loop_testing._emulator_auth import RateLimiter
from agent_loop_testing._emulator_server import serve_app

__all__ = ["GitHubHost"]

_REPO_PATH = re.compile(r"^(?:(?:/api/v3)?/repos|/_codeload)/([^/]+)/([^/]+)(?:/|$)")
"""A route naming its repository: the API's `/repos/{o}/{r}`, and the archive downloads
its tarball redirects go to (`/_codeload/{o}/{r}`, codeload.github.com on GitHub)."""
_WEB_PATH = re.compile(r"^/([^/]+)/([^/]+)(?:/(?:issues|pulls?|commit)(?:/|$)|/?$)")
"""A web page of a repository (`html_url`s: `/{o}/{r}`, `/{o}/{r}/pull/N`, ...)."""
_GRAPHQL_PATHS = ("/graphql", "/api/graphql")


class GitHubHost:
    """Emulated repositories `owner/name` served together (the first one answers the
    account-wide routes). Index it by full name for each repository's `GitHubEmulator`.

    Args:
        repos: `owner/name` of each repository, in order (at least one).
        rate_limit: The identity's primary rate limit, shared by every repository.
        **emulator: Passed to each `GitHubEmulator` (`start`, `page_size_default`, ...).
    """

    def __init__(self, repos: Sequence[str], *, rate_limit: int = 5000, **emulator: Any) -> None:
        if not repos:
            raise ValueError("a host needs at least one repository")
        self.limiter = RateLimiter(limit=rate_limit)
        """The shared primary rate limit (per identity, across repositories)."""
        self._emulators: dict[str, GitHubEmulator] = {}
        for full in repos:
            owner, _, name = full.partition("/")
            em = GitHubEmulator(owner, name, rate_limiter=self.limiter, **emulator)
            self._emulators[full.lower()] = em
        first = self.primary
        for em in self:
            # Same counters in every repository give the same tokens; make sure of it.
            if em.bot_token != first.bot_token:
                raise AssertionError("emulated repositories disagree on the bot token")
        states = [em._st for em in self]  # pyright: ignore[reportPrivateUsage]
        for state in states:
            state.host = states
        self._closing = threading.Event()

    @property
    def primary(self) -> GitHubEmulator:
        """The first repository: it answers every route that names no repository."""
        return next(iter(self._emulators.values()))

    @property
    def bot_token(self) -> str:
        """The agents' token, valid in every repository."""
        return self.primary.bot_token

    @property
    def bot_login(self) -> str:
        return self.primary.bot_login

    @property
    def repos(self) -> list[str]:
        """`owner/name` of every repository, in order."""
        return [em.full_name for em in self]

    def __getitem__(self, full_name: str) -> GitHubEmulator:
        return self._emulators[full_name.lower()]

    def __iter__(self) -> Iterator[GitHubEmulator]:
        return iter(self._emulators.values())

    def remove(self, full_name: str) -> None:
        """The repository is gone for the agents (deleted, or the access was revoked):
        every request naming it answers 404, as GitHub does for a repository you
        cannot see."""
        em = self._emulators.pop(full_name.lower())
        states = [e._st for e in self]  # pyright: ignore[reportPrivateUsage]
        for state in states:
            state.host = states
        em._st.host = []  # pyright: ignore[reportPrivateUsage]

    def requests_used(self) -> int:
        """Requests counted against the bot's primary rate limit so far."""
        return self.limiter.limit - self.limiter.remaining(self.bot_login)

    # ------------------------------------------------------------------ serving
    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI app: route to the repository a request names."""
        if scope["type"] != "http":
            await self.primary._app.app(scope, receive, send)  # pyright: ignore[reportPrivateUsage]
            return
        path: str = scope["path"]
        match = _REPO_PATH.match(path)
        if match is not None:
            target = self._emulators.get(f"{match.group(1)}/{match.group(2)}".lower(), self.primary)
            await target._app.app(scope, receive, send)  # pyright: ignore[reportPrivateUsage]
            return
        web = _WEB_PATH.match(path)
        if web is not None and f"{web.group(1)}/{web.group(2)}".lower() in self._emulators:
            target = self._emulators[f"{web.group(1)}/{web.group(2)}".lower()]
            await target._app.app(scope, receive, send)  # pyright: ignore[reportPrivateUsage]
            return
        if path in _GRAPHQL_PATHS and scope["method"] == "POST":
            body = await _read_body(receive)
            target = self._graphql_target(body)
            await target._app.app(scope, _replay(body), send)  # pyright: ignore[reportPrivateUsage]
            return
        await self.primary._app.app(scope, receive, send)  # pyright: ignore[reportPrivateUsage]

    def _graphql_target(self, body: bytes) -> GitHubEmulator:
        try:
            variables: Any = json.loads(body or b"{}").get("variables") or {}
            key = f"{variables.get('owner', '')}/{variables.get('name', '')}".lower()
            named = _mutation_repository(variables)
            if named is not None:
                key = named.lower()
        except (ValueError, AttributeError):
            return self.primary
        return self._emulators.get(key, self.primary)

    def transport(self) -> httpx.AsyncBaseTransport:
        """An in-process transport (ASGI, no sockets) for githubkit `async_transport`."""
        return httpx.ASGITransport(app=self)

    @contextmanager
    def serve(self) -> Generator[str]:
        """Serve every repository over HTTP on 127.0.0.1; yields the base URL."""
        with serve_app(self, self._closing, check_host=True) as url:
            yield url


def _mutation_repository(variables: object) -> str | None:
    """`owner/name` a `createCommitOnBranch` input names (`branch`), in whichever
    variable it comes (`input`, or `commit` beside a `createRef` input), if any."""
    if not isinstance(variables, dict):
        return None
    for given in cast("dict[str, object]", variables).values():
        branch = cast("dict[str, object]", given).get("branch") if isinstance(given, dict) else None
        named = (
            cast("dict[str, object]", branch).get("repositoryNameWithOwner")
            if isinstance(branch, dict)
            else None
        )
        if isinstance(named, str):
            return named
    return None


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return receive
