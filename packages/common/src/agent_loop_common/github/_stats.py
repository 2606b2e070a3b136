"""Count every request sent to GitHub, by route template and status.

Rate limits are per hour per identity, so each RunRecord carries what its run spent.
Counting happens at the innermost transport: every retry attempt, every page and the
App token request are counted once each, exactly as GitHub counts them. 304 answers are
kept apart because they do not count against the primary rate limit. The same layer
hands each answer's `x-ratelimit-*` headers to the facade's `RateGauge`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import httpx

from agent_loop_common.github._ratelimit import RateGauge
from agent_loop_common.github._routes import Router

NO_RESPONSE = 0
"""Status recorded when no response arrived (timeout, refused or dropped connection)."""


class RequestStats:
    """Request counts keyed by `"METHOD /route/{template}"` and HTTP status."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, int]] = Counter()

    def record(self, method: str, template: str, status: int) -> None:
        """Count one attempt (`status` is `NO_RESPONSE` when none came back)."""
        self._counts[(f"{method.upper()} {template}", status)] += 1

    def merge(self, by_route: Mapping[str, Mapping[int, int]]) -> None:
        """Add counts made by another facade, given in the shape of `by_route()`.

        A durable sub-task (a Flyte action) builds its own facade; merging its counts
        into the run's keeps one run's record honest about every request it caused.
        """
        for route, statuses in by_route.items():
            for status, n in statuses.items():
                self._counts[(route, int(status))] += n

    @property
    def total(self) -> int:
        """Every request sent, 304s and failed attempts included."""
        return sum(self._counts.values())

    @property
    def not_modified(self) -> int:
        """Conditional requests answered 304 (free against the primary rate limit)."""
        return sum(n for (_, status), n in self._counts.items() if status == 304)

    @property
    def billable(self) -> int:
        """Requests that count against the primary rate limit (all but 304s)."""
        return self.total - self.not_modified

    def by_route(self) -> dict[str, dict[int, int]]:
        """`{"GET /repos/{owner}/{repo}/issues": {200: 3, 304: 2}, ...}`, sorted."""
        out: dict[str, dict[int, int]] = {}
        for (route, status), n in sorted(self._counts.items()):
            out.setdefault(route, {})[status] = n
        return out

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary for a RunRecord (status codes as string keys)."""
        return {
            "total": self.total,
            "not_modified": self.not_modified,
            "routes": {
                route: {str(status): n for status, n in statuses.items()}
                for route, statuses in self.by_route().items()
            },
        }

    def __repr__(self) -> str:
        return f"RequestStats(total={self.total}, not_modified={self.not_modified})"


class StatsTransport(httpx.AsyncBaseTransport):
    """Records each attempt that reaches the wrapped transport, and its rate budget."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        stats: RequestStats,
        router: Router,
        gauge: RateGauge | None = None,
    ) -> None:
        self._inner = inner
        self._stats = stats
        self._router = router
        self._gauge = gauge

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        template = self._router.route(request)
        try:
            response = await self._inner.handle_async_request(request)
        except BaseException:
            self._stats.record(request.method, template, NO_RESPONSE)
            raise
        self._stats.record(request.method, template, response.status_code)
        if self._gauge is not None:
            self._gauge.observe(response.headers)
        return response

    async def aclose(self) -> None:
        """No-op: the facade closes the transport it created, once."""
