"""Replay protection: the deliveries seen lately, by delivery id and by body.

GitHub retries and people press "Redeliver" with the same `X-GitHub-Delivery`; an
attacker who captured a signed delivery can resend its body under a new id (the
header is not signed). Both are refused while the delivery is remembered: the last
`size` deliveries, each for at most `ttl` seconds. Legitimate deliveries never share a
body (each carries its own ids and timestamps). A replay older than the memory still
only wakes an agent early: runs reread GitHub and never trust the payload.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Literal

from agent_loop_gateway._clock import Clock

__all__ = ["DeliveryMemory", "Seen"]

Seen = Literal["delivery", "body"]
"""Why a delivery is a replay: its id, or its exact body, was seen before."""


class DeliveryMemory:
    """A bounded, expiring set of recent delivery ids and body digests."""

    def __init__(self, clock: Clock, *, size: int = 10_000, ttl: float = 24 * 3600) -> None:
        if size < 1:
            raise ValueError("size must be at least 1")
        self._clock = clock
        self._size = size
        self._ttl = ttl
        self._ids: OrderedDict[str, float] = OrderedDict()
        self._bodies: OrderedDict[str, float] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def check_and_remember(self, delivery: str, body: bytes) -> Seen | None:
        """Why this delivery is a replay, or None after remembering it as new."""
        now = self._clock.monotonic()
        self._expire(now)
        digest = hashlib.sha256(body).hexdigest()
        if delivery in self._ids:
            return "delivery"
        if digest in self._bodies:
            return "body"
        for table, key in ((self._ids, delivery), (self._bodies, digest)):
            table[key] = now
            while len(table) > self._size:
                table.popitem(last=False)
        return None

    def _expire(self, now: float) -> None:
        for table in (self._ids, self._bodies):
            while table:
                key, at = next(iter(table.items()))
                if now - at < self._ttl:
                    break
                del table[key]
