"""Serve the emulator over real HTTP on loopback (uvicorn in a background thread).

The socket is bound before the server starts (127.0.0.1, port 0), so the URL is known
without polling and no other process can take the port in between. Shutdown asks
uvicorn to exit, releases requests held open by timeout faults, and joins the thread.

Loopback alone does not keep a web page out: a page on `evil.example` whose DNS name
is rebound to 127.0.0.1 reaches the port as "same origin". Such a request still names
`evil.example` in its `Host` header, so with `check_host` every request must name the
address it was bound to (`127.0.0.1:PORT`, `localhost:PORT`, `[::1]:PORT`); any other
answers 421 Misdirected Request before the app sees it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Literal

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["HostGuard", "serve_app", "serve_asgi"]


class HostGuard:
    """ASGI middleware: only requests whose `Host` names the loopback port pass.

    Args:
        app: The app behind the guard.
        port: The bound port; allowed are `127.0.0.1:port`, `localhost:port` and
            `[::1]:port` (case-insensitive), and nothing else, no `Host` included.
    """

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.allowed = frozenset(f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = scope.get("headers", [])
        host = next((v.decode("latin-1") for k, v in headers if k == b"host"), "")
        if host.lower() in self.allowed:
            await self.app(scope, receive, send)
            return
        message = (
            f"Misdirected Request: this server answers to {', '.join(sorted(self.allowed))} "
            f"only, not to Host {host!r} (a DNS-rebinding defence)"
        )
        body = json.dumps({"message": message, "status": "421"}).encode()
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send(
            {
                "type": "http.response.start",
                "status": 421,
                "headers": [
                    (b"content-type", b"application/json; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


@contextmanager
def serve_app(
    app: ASGIApp,
    release: threading.Event,
    *,
    startup_timeout: float = 10.0,
    lifespan: Literal["on", "off"] = "off",
    port: int = 0,
    check_host: bool = False,
) -> Generator[str]:
    """Run `app` on a loopback port (`port`, 0: an ephemeral one); yields the base URL
    (`http://127.0.0.1:N`). A port in use raises `OSError` before anything starts.
    With `check_host`, requests naming another host answer 421 (`HostGuard`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # asyncio only sets TCP_NODELAY on sockets created with proto=IPPROTO_TCP; this one
    # has proto 0, and without it every response waits ~40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        HostGuard(app, port) if check_host else app,
        log_level="warning",
        lifespan=lifespan,
        access_log=False,
        timeout_graceful_shutdown=2,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name=f"github-emulator-{port}", daemon=True
    )
    release.clear()
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"GitHub emulator failed to start on 127.0.0.1:{port}")
        time.sleep(0.005)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        release.set()
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def serve_asgi(app: ASGIApp, *, lifespan: Literal["on", "off"] = "off") -> Generator[str]:
    """Serve any ASGI app (a webhook receiver, the gateway) on loopback in a thread.

    Yields the base URL (`http://127.0.0.1:N`); the server stops when the block ends.
    """
    with serve_app(app, threading.Event(), lifespan=lifespan) as url:
        yield url
