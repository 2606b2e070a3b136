"""`GitHub`: the one async client every agent uses, built on githubkit.

Requests flow through a stack of httpx transports under githubkit:

```
githubkit (auth, parsing, pagination)
  -> ETagTransport    If-None-Match on polled reads; 304 -> cached 200
  -> RetryTransport   our GitHubRetryPolicy; typed errors when it gives up
  -> PaceTransport    spaces content-creating attempts under GitHub's secondary limits
  -> StatsTransport   counts each attempt by route and status; reads the rate budget
  -> httpx.AsyncHTTPTransport, or the transport passed in (emulator)
```

githubkit's own retry and HTTP cache are off, its timeout is set, and it gets a private
token cache, so nothing here depends on process-global state.
"""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any, Self

import httpx
from githubkit import GitHub as GitHubKit
from githubkit.cache import MemCacheStrategy

from agent_loop_common.github import _convert as conv
from agent_loop_common.github._auth import AppAuth, LiveTokenTransport, TokenAuth
from agent_loop_common.github._base import translated
from agent_loop_common.github._edits import EditOps
from agent_loop_common.github._errors import AuthError
from agent_loop_common.github._etag import ETagCache, ETagTransport, ReadLog
from agent_loop_common.github._git import GitOps
from agent_loop_common.github._issues import IssueOps
from agent_loop_common.github._models import Repository, User
from agent_loop_common.github._pace import PaceTransport, WritePacing
from agent_loop_common.github._pulls import PullOps
from agent_loop_common.github._ratelimit import RateBudget, RateGauge
from agent_loop_common.github._retry import GitHubRetryPolicy, RetryTransport
from agent_loop_common.github._routes import Router
from agent_loop_common.github._stats import RequestStats, StatsTransport

DEFAULT_BASE_URL = "https://api.github.com"


def _base_url(url: str) -> httpx.URL:
    """The API root with a trailing slash, as githubkit joins paths onto it."""
    parsed = httpx.URL(url)
    if not parsed.raw_path.endswith(b"/"):
        parsed = parsed.copy_with(raw_path=parsed.raw_path + b"/")
    return parsed


class GitHub(IssueOps, PullOps, GitOps, EditOps):
    """Async GitHub facade for one repository; create one per run.

    Args:
        repo: `owner/name`.
        auth: `TokenAuth` or `AppAuth`.
        base_url: API root; `https://HOST/api/v3` for GitHub Enterprise Server.
        transport: httpx transport to send through (the emulator's, in tests); by
            default a pooled HTTP transport that this client owns and closes.
        timeout: seconds one attempt may take in all, from sending the request to the
            last byte of the response body (a body dripped slowly cannot hold a run);
            also httpx's limit per connect/read/write/pool phase. Retries come on top,
            bounded by the retry policy's `max_total`.
        archive_timeout: the same bound for one attempt of `download_archive`, whose
            body is a whole repository (at least `timeout`).
        retry: retry policy; `GitHubRetryPolicy()` by default.
        pacing: how fast content-creating requests may go out; `WritePacing()` (GitHub's
            secondary limits, unspaced while writes are few) by default.
        etags: ETag cache for polled reads, typically loaded from memory; a fresh
            in-memory one by default, so repeated polls within a run are 304s.
        per_page: page size for listings (100, GitHub's maximum, saves requests).
        user_agent: sent with every request (GitHub asks for an identifying one).
    """

    def __init__(
        self,
        repo: str,
        *,
        auth: TokenAuth | AppAuth,
        base_url: str = DEFAULT_BASE_URL,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = 30,
        archive_timeout: float = 300,
        retry: GitHubRetryPolicy | None = None,
        pacing: WritePacing | None = None,
        etags: ETagCache | None = None,
        per_page: int = 100,
        user_agent: str = "agent-loop",
    ) -> None:
        owner, sep, name = repo.partition("/")
        if not (owner and sep and name) or "/" in name:
            raise ValueError(f"repo must be 'owner/name', got {repo!r}")
        if not 1 <= per_page <= 100:
            raise ValueError("per_page must be within 1..100")
        self._owner, self._name = owner, name
        self._per_page = per_page
        self._auth = auth
        self._archive_timeout = max(archive_timeout, timeout)
        self.full_name = f"{owner}/{name}"
        """`owner/name` of the repository this client works on."""
        self.stats = RequestStats()
        """Requests sent so far, by route and status (for the RunRecord)."""
        self.etags = etags if etags is not None else ETagCache()
        """The conditional-request cache (save `dump()` when `changed`)."""
        self.retry = retry if retry is not None else GitHubRetryPolicy()
        self.pacing = pacing if pacing is not None else WritePacing()
        """How content-creating requests are spaced."""
        self._gauge = RateGauge()
        url = _base_url(base_url)
        router = Router(url)
        self._owned: httpx.AsyncBaseTransport | None = None
        if transport is None:
            transport = self._owned = httpx.AsyncHTTPTransport(retries=0)
        stack: httpx.AsyncBaseTransport = LiveTokenTransport(transport)
        stack = StatsTransport(stack, self.stats, router, self._gauge)
        stack = PaceTransport(stack, self.pacing, router)
        stack = RetryTransport(stack, self.retry, router, attempt_timeout=timeout)
        self.reads = ReadLog()
        """Every request of this client, as a later conditional re-check sees it."""
        stack = ETagTransport(stack, self.etags, router, self.reads)
        strategy = auth.strategy() if isinstance(auth, TokenAuth) else auth.app_strategy()
        self._kit: GitHubKit[Any] = GitHubKit(
            strategy,
            base_url=url,
            timeout=httpx.Timeout(timeout),
            async_transport=stack,
            # Our transports retry and cache; githubkit's own versions would stack on
            # top (retry) or bypass the ETag cache's persistence (hishel).
            auto_retry=False,
            http_cache=False,
            # Env proxies would mount transports that bypass our stack.
            trust_env=False,
            cache_strategy=MemCacheStrategy(),
            user_agent=user_agent,
        )
        self._installed: GitHubKit[Any] | None = None
        self._lock = asyncio.Lock()

    @property
    def rate_budget(self) -> RateBudget | None:
        """The primary rate limit as GitHub last reported it to this client (`None`
        before the first answer): what a run checks before it starts new work."""
        return self._gauge.latest

    async def viewer(self) -> User:
        """The identity requests act as; for an App, its bot user (`slug[bot]`)."""
        if isinstance(self._auth, AppAuth):
            with translated():
                app = await self._kit.rest.apps.async_get_authenticated()
            integration = app.parsed_data
            if integration is None:
                raise AuthError(
                    f"GET /app returned no App for app id {self._auth.app_id}. {AuthError.hint}",
                    method="GET",
                    url="/app",
                )
            # Every App has a slug; the schema only marks it optional.
            slug = integration.slug or integration.name
            gh = await self._gh()
            with translated():
                bot = await gh.rest.users.async_get_by_username(f"{slug}[bot]")
            return conv.user(bot.parsed_data)
        gh = await self._gh()
        with translated():
            resp = await gh.rest.users.async_get_authenticated()
        return conv.user(resp.parsed_data)

    async def repository(self) -> Repository:
        """Repository metadata, notably its default branch."""
        gh = await self._gh()
        with translated():
            resp = await gh.rest.repos.async_get(self._owner, self._name)
        return conv.repository(resp.parsed_data)

    async def owner_repositories(self, owner: str) -> list[str]:
        """`owner/name` of every repository of `owner` this identity can work on, sorted.

        For an App: the installation's repositories (`GET /installation/repositories`).
        For a token: the repositories the user can push to (`GET /user/repos`, which
        covers owned, collaborator and organization repositories). Both filtered to
        `owner` (case-insensitively); archived repositories are left out (read-only).
        """
        gh = await self._gh()
        found: list[tuple[str, bool, bool]] = []
        if isinstance(self._auth, AppAuth):
            paginator = gh.rest.paginate(
                gh.rest.apps.async_list_repos_accessible_to_installation,
                map_func=lambda r: r.parsed_data.repositories,
                per_page=self._per_page,
            )
            found = [(r.full_name, r.archived, True) for r in await self._all(paginator)]
        else:
            paginator = gh.rest.paginate(
                gh.rest.repos.async_list_for_authenticated_user, per_page=self._per_page
            )
            for r in await self._all(paginator):
                permissions = conv.present(r.permissions)
                found.append((r.full_name, r.archived, permissions is None or permissions.push))
        wanted = owner.casefold()
        return sorted(
            {
                name
                for name, archived, push in found
                if name.partition("/")[0].casefold() == wanted and push and not archived
            },
            key=str.casefold,
        )

    async def aclose(self) -> None:
        """Close the HTTP transport this client created (a passed-in one stays open)."""
        if self._owned is not None:
            await self._owned.aclose()
            self._owned = None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"GitHub({self.full_name!r}, {self.stats!r})"
