"""Serve the emulator over real HTTP on loopback (uvicorn in a background thread).

The socket is bound before the server starts (127.0.0.1, port 0), so the URL is known
without polling and no other process can take the port in between. Shutdown asks
uvicorn to exit, releases requests held open by timeout faults, and joins the thread.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from typing import Literal

import uvicorn
from starlette.types import ASGIApp

__all__ = ["serve_app", "serve_asgi"]


@contextmanager
def serve_app(
    app: ASGIApp,
    release: threading.Event,
    *,
    startup_timeout: float = 10.0,
    lifespan: Literal["on", "off"] = "off",
    port: int = 0,
) -> Generator[str]:
    """Run `app` on a loopback port (`port`, 0: an ephemeral one); yields the base URL
    (`http://127.0.0.1:N`). A port in use raises `OSError` before anything starts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # asyncio only sets TCP_NODELAY on sockets created with proto=IPPROTO_TCP; this one
    # has proto 0, and without it every response waits ~40 ms for a delayed ACK.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind(("127.0.0.1", port))
    port = int(sock.getsockname()[1])
    config = uvicorn.Config(
        app,
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
