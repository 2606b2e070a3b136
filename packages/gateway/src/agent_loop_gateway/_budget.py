"""The gateway's memory bound: bytes of delivery bodies held at once, in all and per source.

A stranger cannot be told from GitHub before a body's signature is checked, and the
signature covers the whole body, so a body must be received before it can be judged.
What a stranger can make the gateway hold is therefore bounded in bytes, not in
connections: each request reserves its `Content-Length` (capped per event) before a
byte of its body is read, from the whole budget (`AGENT_LOOP_WEBHOOK_BUFFER_BYTES`) and
from its source's share (`AGENT_LOOP_WEBHOOK_BUFFER_BYTES_PER_SOURCE`); a request that
does not fit is answered at once, unread (503 for the whole, 429 for its source), and
the reservation is released when the request ends, whatever its outcome. The bytes a
body holds never exceed its reservation.

A source is a client address: an IPv4 address, or an IPv6 /64 (one host usually holds
a whole /64, so its addresses are one source). Behind a trusted proxy the address comes
from `X-Forwarded-For` (`AGENT_LOOP_WEBHOOK_TRUSTED_PROXIES`).

Pure bookkeeping in the server's event loop (one thread): no lock.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["BodyBudget", "Refusal", "source_of"]

Refusal = Literal["total", "source"]
"""Why a reservation was refused: the whole budget, or the source's share, is taken."""


def source_of(host: str | None) -> str:
    """The source a client address counts against: the IPv4 address, or the IPv6 /64
    (an IPv4-mapped IPv6 address is its IPv4 address); anything else as given."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


@dataclass
class BodyBudget:
    """Reservations of body bytes against a total and a per-source share."""

    total: int
    """Bytes all requests may hold at once."""
    per_source: int
    """Bytes one source's requests may hold at once."""
    held: int = 0
    """Bytes reserved right now."""
    peak: int = 0
    """The most bytes ever reserved at once (what the budget let the gateway hold)."""
    peak_per_source: int = 0
    """The most bytes one source ever held at once."""
    refused: dict[Refusal, int] = field(default_factory=lambda: {"total": 0, "source": 0})
    """Reservations refused so far, by reason."""
    _by_source: dict[str, int] = field(default_factory=dict[str, int])

    def reserve(self, source: str, size: int) -> Refusal | None:
        """Reserve `size` bytes for a request from `source`; `None` when granted (release
        it with `release`), else why not (nothing is reserved)."""
        mine = self._by_source.get(source, 0)
        if mine + size > self.per_source:
            self.refused["source"] += 1
            return "source"
        if self.held + size > self.total:
            self.refused["total"] += 1
            return "total"
        self._by_source[source] = mine + size
        self.held += size
        self.peak = max(self.peak, self.held)
        self.peak_per_source = max(self.peak_per_source, mine + size)
        return None

    def release(self, source: str, size: int) -> None:
        """Give back a granted reservation."""
        left = self._by_source.get(source, 0) - size
        if left > 0:
            self._by_source[source] = left
        else:
            self._by_source.pop(source, None)
        self.held = max(0, self.held - size)

    def of(self, source: str) -> int:
        """Bytes `source` holds right now."""
        return self._by_source.get(source, 0)
