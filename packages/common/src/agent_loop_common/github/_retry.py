"""Our retry policy, applied once per HTTP attempt below githubkit.

githubkit's own retry is switched off: it sleeps 60 s on `Retry-After: 0`, never retries
a bare 429, a timeout or a refused connection, and has no bound on total time. Doing it
at the transport means every page of a paginated listing and the App installation-token
request are retried individually, and githubkit parses only the final answer.

What is retried, and when:

- **rate limits** (429; 403 with `Retry-After`, `x-ratelimit-remaining: 0` or a
  "secondary rate limit" message): GitHub did not act, so any method is retried. The
  wait honours `Retry-After` / `x-ratelimit-reset`; when GitHub asks for longer than
  `max_delay` (or than what is left of `max_total`) we stop at once with `RateLimited`
  rather than sleep less than asked and be refused again.
- **refused connections / pool timeouts**: nothing was sent; any method is retried.
- **5xx, read/write timeouts, dropped connections**: GitHub may have acted. Retried (after
  `Retry-After` when a 503 sends one) for idempotent requests only (see `Router.is_idempotent`). A create (issue, comment, PR,
  reply, ref) fails fast with `GitHubUnavailable` saying it may have been applied: the
  scheduled pipeline re-reads state on its next run, which is cheaper than a duplicate
  public comment or a claim ref we created but then read as "someone else's".
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

import httpx

from agent_loop_common.github._errors import (
    GitHubError,
    GitHubUnavailable,
    RateLimited,
    describe,
    error_for_status,
    github_message,
)
from agent_loop_common.github._routes import Router

_ATTEMPT_TIMEOUT: ContextVar[float | None] = ContextVar("attempt_timeout", default=None)


@contextmanager
def attempt_timeout(seconds: float) -> Generator[None]:
    """Within this block, one attempt may take `seconds` instead of the client's timeout.

    For a response known to be large (a repository archive): it still has a deadline,
    just one that fits its size.
    """
    token = _ATTEMPT_TIMEOUT.set(seconds)
    try:
        yield
    finally:
        _ATTEMPT_TIMEOUT.reset(token)


@dataclass(frozen=True)
class GitHubRetryPolicy:
    """Capped exponential backoff with jitter, bounded in attempts and in total time."""

    max_attempts: int = 5
    """Attempts per request, the first included (1 disables retries)."""
    base_delay: float = 1.0
    """Backoff before the second attempt; doubles after each failure."""
    max_delay: float = 30.0
    """Longest single sleep; a longer server-requested wait gives up instead."""
    max_total: float = 120.0
    """Budget in seconds for one request, attempts and sleeps together."""
    jitter: float = 0.5
    """Fraction of each backoff drawn at random (0 = fixed, 1 = full jitter)."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)
    """How to wait; tests pass a recorder so they run instantly."""
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)
    """Monotonic seconds, for the `max_total` budget."""
    wall: Callable[[], float] = field(default=time.time, compare=False)
    """Epoch seconds, to turn `x-ratelimit-reset` into a wait."""
    random: Callable[[], float] = field(default=random.random, compare=False)
    """Uniform [0, 1) source for jitter."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if not 0.0 <= self.jitter <= 1.0:
            raise ValueError("jitter must be within [0, 1]")

    def backoff(self, attempt: int) -> float:
        """Sleep after failed attempt number `attempt` (1-based) when GitHub gave no hint."""
        ceiling = min(self.max_delay, self.base_delay * 2 ** (attempt - 1))
        return ceiling * (1.0 - self.jitter * self.random())


Kind = Literal["rate_limit", "server", "network"]


@dataclass(frozen=True)
class Failure:
    """A retryable failure of one attempt."""

    kind: Kind
    ambiguous: bool
    """GitHub may have acted on the request (5xx, a timeout after sending)."""
    wait: float | None = None
    """Seconds GitHub asked us to wait, when it said."""
    reset_at: datetime | None = None


def classify_response(
    status: int, headers: httpx.Headers, content: bytes, now: float
) -> Failure | None:
    """Retryable failure carried by a response, or None to hand it to the caller."""
    retry_after = _seconds(headers.get("retry-after"), now)
    if status >= 500 and status != 501:
        return Failure("server", ambiguous=True, wait=retry_after)  # 503 may say when
    if status not in (403, 429):
        return None
    reset_at: datetime | None = None
    wait = retry_after
    if headers.get("x-ratelimit-remaining") == "0":
        reset = _int(headers.get("x-ratelimit-reset"))
        if reset is not None:
            reset_at = datetime.fromtimestamp(reset, UTC)
            if wait is None:
                wait = max(0.0, reset - now) + 1.0  # a second for clock skew
    elif (
        status == 403
        and retry_after is None
        and "secondary rate limit" not in github_message(content).lower()
    ):
        return None  # a real permission problem: not ours to retry
    return Failure("rate_limit", ambiguous=False, wait=wait, reset_at=reset_at)


def classify_exception(exc: Exception) -> Failure | None:
    """Retryable transport failure, or None to let it propagate."""
    if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
        return Failure("network", ambiguous=False)
    if isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError):
        return Failure("network", ambiguous=True)
    return None


def _int(value: str | None) -> int | None:
    try:
        return None if value is None else int(value.strip())
    except ValueError:
        return None


def _seconds(value: str | None, now: float) -> float | None:
    """`Retry-After` as seconds: delta-seconds or an HTTP date."""
    if value is None:
        return None
    number = _int(value)
    if number is not None:
        return float(max(0, number))
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


class RetryTransport(httpx.AsyncBaseTransport):
    """Retries attempts per `GitHubRetryPolicy`; raises typed errors when it gives up."""

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        policy: GitHubRetryPolicy,
        router: Router,
        attempt_timeout: float | None,
    ) -> None:
        self._inner = inner
        self._policy = policy
        self._router = router
        self._attempt_timeout = attempt_timeout

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        policy = self._policy
        idempotent = self._router.is_idempotent(request.method, self._router.route(request))
        start = policy.clock()
        attempt = 0
        while True:
            attempt += 1
            failure, response, exc = await self._attempt(request)
            if failure is None:
                assert response is not None
                return response
            give_up, reason, delay = self._decide(failure, attempt, idempotent, start)
            if give_up:
                raise self._error(request, failure, response, exc, attempt, reason)
            if response is not None:
                await response.aclose()
            await policy.sleep(delay)

    async def _attempt(
        self, request: httpx.Request
    ) -> tuple[Failure | None, httpx.Response | None, Exception | None]:
        response: httpx.Response | None = None
        limit = _ATTEMPT_TIMEOUT.get() or self._attempt_timeout
        try:
            # One deadline for the whole attempt, body included: httpx's timeouts are
            # per read, so a body dripped a byte at a time would never time out, and
            # transports that enforce no httpx timeouts (in-process ASGI) get one too.
            async with asyncio.timeout(limit):
                response = await self._inner.handle_async_request(request)
                await response.aread()
        except TimeoutError as exc:
            if response is not None:
                await response.aclose()
            timeout = httpx.ReadTimeout(f"no complete response within {limit}s")
            timeout.__cause__ = exc
            return classify_exception(timeout), None, timeout
        except Exception as exc:
            if response is not None:
                await response.aclose()
            failure = classify_exception(exc)
            if failure is None:
                raise
            return failure, None, exc
        if response.status_code < 403:
            return None, response, None
        failure = classify_response(
            response.status_code, response.headers, response.content, self._policy.wall()
        )
        return failure, response, None

    def _decide(
        self, failure: Failure, attempt: int, idempotent: bool, start: float
    ) -> tuple[bool, str, float]:
        policy = self._policy
        if failure.ambiguous and not idempotent:
            return (
                True,
                "Not retried: GitHub may already have applied it, so check before repeating it.",
                0.0,
            )
        if attempt >= policy.max_attempts:
            return True, "", 0.0
        backoff = policy.backoff(attempt)
        if failure.wait is not None:
            if failure.wait > policy.max_delay:
                return True, f"GitHub asks to wait {failure.wait:.0f}s.", 0.0
            delay = max(failure.wait, backoff)
        else:
            delay = backoff
        spent = policy.clock() - start
        if spent + delay > policy.max_total:
            return True, f"The retry budget of {policy.max_total:.0f}s is spent.", 0.0
        return False, "", delay

    def _error(
        self,
        request: httpx.Request,
        failure: Failure,
        response: httpx.Response | None,
        exc: Exception | None,
        attempts: int,
        reason: str,
    ) -> GitHubError:
        method, url = request.method, str(request.url)
        if response is not None:
            cls = RateLimited if failure.kind == "rate_limit" else GitHubUnavailable
            error = error_for_status(
                response.status_code,
                method=method,
                url=url,
                content=response.content,
                attempts=attempts,
                cls=cls,
                extra=reason,
            )
            if isinstance(error, RateLimited):
                error.retry_after = failure.wait
                error.reset_at = failure.reset_at
            return error
        said = f"{type(exc).__name__}: {exc}" if exc is not None else ""
        message = describe(
            GitHubUnavailable,
            method=method,
            url=url,
            status=None,
            said=said,
            attempts=attempts,
            extra=reason,
        )
        return GitHubUnavailable(
            message, method=method, url=url, github_message=said, attempts=attempts
        )

    async def aclose(self) -> None:
        """No-op: githubkit closes its client after every request; the owner closes us."""
