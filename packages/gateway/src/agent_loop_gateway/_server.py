"""How the gateway is served: uvicorn with deadlines and connection caps, in all and per
source.

The gateway listens on the open internet (GitHub must reach it), so a stranger can open
connections and then send nothing, or send a few bytes a minute, from one address or
many. Uvicorn alone waits for a request's headers forever and has no cap on connections,
so such connections pile up. Served through `server_config`:

- every connection must deliver a complete request head within
  `AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS` (the app then gives the body the same
  deadline), or it is closed with one log line (`gateway.connection_dropped`);
- a request answered before its body was read (refused: unsigned, too large, no room in
  the byte budget) is half-closed at once and closed `LINGER_SECONDS` later, so a
  refused client never keeps its connection;
- an idle keep-alive connection is closed after `KEEP_ALIVE_SECONDS`;
- one client address (an IPv6 /64) holds at most
  `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS_PER_SOURCE` open connections; more are closed as
  they open (`gateway.connections_refused`, at most one line per address and 10 s),
  except from `AGENT_LOOP_WEBHOOK_TRUSTED_PROXIES`, whose clients are told apart by
  `X-Forwarded-For` (uvicorn's proxy headers, trusted from those addresses only);
- past `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS` open connections a new request is answered
  503 at once (GitHub records the failed delivery; the agents' cron picks the work up).

The bytes of bodies held are bounded by the app (`_budget`). GitHub sends each delivery
whole and at once, and gives up itself after ten seconds, so none of this delays a real
delivery.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from typing import Any, ClassVar, cast

import h11
import structlog
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from agent_loop_common.settings import Settings
from agent_loop_gateway._budget import source_of

__all__ = ["KEEP_ALIVE_SECONDS", "LINGER_SECONDS", "server_config"]

_log = structlog.get_logger(__name__)

KEEP_ALIVE_SECONDS = 5.0
"""How long an idle keep-alive connection stays open after its last response."""

LINGER_SECONDS = 1.0
"""How long a connection answered before its body was read stays open (half-closed) for
its client to read the answer."""

_LOG_EVERY = 10.0
"""Seconds between two `gateway.connections_refused` lines for one address."""

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class _Sources:
    """Open connections per client address, shared by one server's connections."""

    def __init__(self, cap: int, proxies: tuple[str, ...]) -> None:
        self.cap = cap
        self.any_proxy = "*" in proxies
        self.proxies: tuple[Network, ...] = tuple(
            ipaddress.ip_network(p, strict=False) for p in proxies if p != "*"
        )
        self.open: dict[str, int] = {}
        self.refused: dict[str, int] = {}
        self._logged: dict[str, float] = {}

    def is_proxy(self, host: str) -> bool:
        if self.any_proxy:
            return True
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(address in network for network in self.proxies)

    def admit(self, source: str) -> bool:
        if self.open.get(source, 0) >= self.cap:
            self.refused[source] = self.refused.get(source, 0) + 1
            now = time.monotonic()
            if now - self._logged.get(source, -_LOG_EVERY) >= _LOG_EVERY:
                self._logged[source] = now
                _log.info(
                    "gateway.connections_refused",
                    source=source,
                    refused=self.refused[source],
                    reason=f"{self.cap} connections from this address are open already",
                )
            return False
        self.open[source] = self.open.get(source, 0) + 1
        return True

    def leave(self, source: str) -> None:
        left = self.open.get(source, 0) - 1
        if left > 0:
            self.open[source] = left
        else:
            self.open.pop(source, None)


class _DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request head.

    The timer starts when the connection opens and again after each response; a request
    head parsed in time stops it. When it fires with no request in progress, the
    connection is closed.
    """

    head_seconds: float = 10.0
    sources: ClassVar[_Sources | None] = None
    """This server's per-address connection counts (`None`: not counted)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._source: str | None = None
        sources = type(self).sources
        peer = self.client[0] if self.client else None
        if sources is not None and peer is not None and not sources.is_proxy(peer):
            source = source_of(peer)
            if not sources.admit(source):
                transport.abort()
                return
            self._source = source
        self._arm(self.head_seconds)

    def _in_request(self) -> bool:
        """Whether a request head was parsed and its answer is not complete yet."""
        # uvicorn declares `cycle` non-optional but leaves it None until the first request.
        cycle = cast("RequestResponseCycle | None", self.cycle)
        return cycle is not None and not cycle.response_complete

    def handle_events(self) -> None:
        super().handle_events()
        if self._in_request():
            self._disarm()

    def on_response_complete(self) -> None:
        unread = self.conn.their_state is h11.SEND_BODY
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if unread:
            # Answered before the body was read (refused: unsigned, too large, no room,
            # too slow): say we are done at once, and close once the client had time to
            # read the answer; the rest of the body is not wanted.
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._arm(min(LINGER_SECONDS, self.head_seconds))
            return
        self._arm(self.head_seconds)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        sources = type(self).sources
        if sources is not None and self._source is not None:
            sources.leave(self._source)
            self._source = None
        super().connection_lost(exc)

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(seconds, self._too_slow)

    def _disarm(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _too_slow(self) -> None:
        self._head_timer = None
        if self._in_request():
            return
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else None
            if self.conn.their_state is h11.SEND_BODY:
                reason = "still sending a body after it was answered"
                if self.conn.our_state in (h11.DONE, h11.MUST_CLOSE):
                    # The refusal's linger: expected, and frequent under attack (no line).
                    self.transport.close()
                    return
            else:
                reason = f"no complete request head within {self.head_seconds:g} s"
            _log.info("gateway.connection_dropped", client=client, reason=reason)
            self.transport.close()


def server_config(
    app: ASGIApp, settings: Settings, *, host: str, port: int, **extra: Any
) -> uvicorn.Config:
    """The uvicorn configuration the gateway is served with (deployed and `agent-loop serve`).

    Args:
        app: The gateway app (`create_app`).
        settings: Reads `AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS`,
            `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS`,
            `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS_PER_SOURCE` and
            `AGENT_LOOP_WEBHOOK_TRUSTED_PROXIES`.
        host: Address to bind.
        port: Port to bind.
        extra: Further `uvicorn.Config` arguments (e.g. `log_level`).
    """
    proxies = tuple(
        p if p == "*" else str(ipaddress.ip_network(p, strict=False))
        for p in settings.webhook_trusted_proxies
    )
    protocol = type(
        "GatewayH11Protocol",
        (_DeadlineProtocol,),
        {
            "head_seconds": settings.webhook_read_timeout_seconds,
            "sources": _Sources(settings.webhook_max_connections_per_source, proxies),
        },
    )
    options: dict[str, Any] = {
        "lifespan": "on",
        "log_level": "warning",
        "access_log": False,
        # X-Forwarded-For is believed from the configured proxies only (never by default).
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": ",".join(proxies) if proxies else None,
        **extra,
    }
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=protocol,
        limit_concurrency=settings.webhook_max_connections,
        timeout_keep_alive=int(min(KEEP_ALIVE_SECONDS, settings.webhook_read_timeout_seconds)) or 1,
        **options,
    )
