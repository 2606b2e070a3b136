"""Pacing of content-creating requests under GitHub's secondary rate limits.

GitHub refuses (403/429, then a cool-down) an identity that creates content too fast:
no more than 80 content-generating requests a minute and 500 an hour, and it advises a
second between writes. A tick writes a handful (a claim comment and ref, a commit, a
PR), so waiting a second before each would only make ticks slower; instead writes go
out at once while the last minute saw few, and only a burst is spaced a second apart
and held under the per-minute and per-hour caps.

`WritePacing.delay` is the pure rule; `PaceTransport` applies it per attempt (a retry is
a write too) with the policy's injectable clock and sleep, so tests never sleep. The
history is one facade's, i.e. one run's; runs in other processes are not counted.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import httpx

from agent_loop_common.github._routes import Router

__all__ = ["PaceTransport", "WritePacing"]

_MINUTE = 60.0
_HOUR = 3600.0


@dataclass(frozen=True)
class WritePacing:
    """How fast content-creating requests may go out."""

    per_minute: int = 80
    """Most content writes in any 60 s (GitHub's secondary limit)."""
    per_hour: int = 500
    """Most content writes in any hour (GitHub's secondary limit)."""
    burst: int = 20
    """Writes within the last minute that go out unspaced; later ones wait `spacing`."""
    spacing: float = 1.0
    """Seconds between writes once past `burst` (GitHub's advice)."""
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, compare=False)
    """How to wait; tests pass a fake clock's sleep."""
    clock: Callable[[], float] = field(default=time.monotonic, compare=False)
    """Monotonic seconds."""

    def __post_init__(self) -> None:
        if not 1 <= self.burst <= self.per_minute <= self.per_hour:
            raise ValueError("expected 1 <= burst <= per_minute <= per_hour")
        if self.spacing < 0:
            raise ValueError("spacing must not be negative")

    def delay(self, sent: Sequence[float], now: float) -> float:
        """Seconds to wait before the next write, given when earlier writes went out.

        Args:
            sent: Monotonic send times of earlier writes, oldest first.
            now: The current monotonic time.
        """
        minute = [t for t in sent if now - t < _MINUTE]
        hour = [t for t in sent if now - t < _HOUR]
        waits = [0.0]
        if len(hour) >= self.per_hour:
            waits.append(hour[len(hour) - self.per_hour] + _HOUR - now)
        if len(minute) >= self.per_minute:
            waits.append(minute[len(minute) - self.per_minute] + _MINUTE - now)
        if len(minute) >= self.burst:
            waits.append(minute[-1] + self.spacing - now)
        return max(waits)


class PaceTransport(httpx.AsyncBaseTransport):
    """Holds each content-creating attempt until `WritePacing` lets it go."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, pacing: WritePacing, router: Router
    ) -> None:
        self._inner = inner
        self._pacing = pacing
        self._router = router
        self._sent: deque[float] = deque()
        self._lock = asyncio.Lock()

    @property
    def sent(self) -> int:
        """Content writes sent within the last hour."""
        return len(self._sent)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._router.is_content_write(request.method, self._router.route(request)):
            await self._admit()
        return await self._inner.handle_async_request(request)

    async def _admit(self) -> None:
        pacing = self._pacing
        async with self._lock:  # concurrent writes queue, each spaced after the last
            now = pacing.clock()
            while self._sent and now - self._sent[0] >= _HOUR:
                self._sent.popleft()
            wait = pacing.delay(self._sent, now)
            if wait > 0:
                await pacing.sleep(wait)
            # The write goes out now: at least `wait` later, even if the clock did not
            # move (a test's sleep that returns at once keeps the accounting honest).
            self._sent.append(max(pacing.clock(), now + wait))

    async def aclose(self) -> None:
        """No-op: the facade closes the transport it created, once."""
