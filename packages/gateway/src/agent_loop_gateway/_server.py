"""How the gateway is served: uvicorn with a connection cap and deadlines.

The gateway listens on the open internet (GitHub must reach it), so a stranger can open
connections and then send nothing, or send a few bytes a minute. Uvicorn alone waits
for a request's headers forever and has no cap on connections, so such connections
pile up. Served through `server_config`:

- every connection must deliver a complete request head within
  `AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS` (the app then gives the body the same
  deadline), or it is closed with one log line (`gateway.connection_dropped`);
- an idle keep-alive connection is closed after `KEEP_ALIVE_SECONDS`;
- past `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS` open connections a new request is answered
  503 at once (GitHub records the failed delivery; the agents' cron picks the work up).

GitHub sends each delivery whole and at once, and gives up itself after ten seconds,
so none of this delays a real delivery.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import h11
import structlog
import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol, RequestResponseCycle

from agent_loop_common.settings import Settings

__all__ = ["KEEP_ALIVE_SECONDS", "server_config"]

_log = structlog.get_logger(__name__)

KEEP_ALIVE_SECONDS = 5.0
"""How long an idle keep-alive connection stays open after its last response."""


class _DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request head.

    The timer starts when the connection opens and again after each response; a request
    head parsed in time stops it. When it fires with no request in progress, the
    connection is closed.
    """

    head_seconds: float = 10.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._arm()

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
        if unread and self.transport.can_write_eof():
            # Answered before the body was read (refused unsigned, too large, too slow):
            # say we are done at once; the rest of the body is not wanted.
            self.transport.write_eof()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_seconds, self._too_slow)

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
        settings: Reads `AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS` and
            `AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS`.
        host: Address to bind.
        port: Port to bind.
        extra: Further `uvicorn.Config` arguments (e.g. `log_level`).
    """
    protocol = type(
        "GatewayH11Protocol",
        (_DeadlineProtocol,),
        {"head_seconds": settings.webhook_read_timeout_seconds},
    )
    options: dict[str, Any] = {
        "lifespan": "on",
        "log_level": "warning",
        "access_log": False,
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
