"""Make network access from tests impossible by default.

Tests must never reach GitHub, a model provider or any other host: they talk to the
GitHub emulator on loopback and to a scripted model. Instead of relying on discipline,
this module patches the socket layer so that any connection (or DNS lookup) to a
non-loopback address raises `NetworkAccessDenied` with a message that names
the address and says how to fix the test.

A test that really needs the network (never in CI) opts in with the `network` marker.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import Any, cast

__all__ = ["NetworkAccessDenied", "block_network", "is_loopback_address"]

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost", ""})


class NetworkAccessDenied(RuntimeError):
    """Raised when a test tries to open a connection to a non-loopback address."""


def is_loopback_address(host: object) -> bool:
    """True for loopback IPs and names (127.0.0.0/8, ::1, localhost)."""
    if not isinstance(host, str):
        return False
    name = host.strip("[]").lower()
    if name in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _deny(what: str) -> NetworkAccessDenied:
    return NetworkAccessDenied(
        f"network access denied in tests: {what}. Tests are hermetic: use the GitHub emulator "
        "(agent_loop_testing) on loopback and a ScriptedModel instead of a real host "
        "or model; mark the test with @pytest.mark.network only for a manual, opt-in run."
    )


def _check_address(address: Any, family: int) -> None:
    if family == getattr(socket, "AF_UNIX", None):
        return
    parts = cast("tuple[object, ...]", address) if isinstance(address, tuple) else (address,)
    host = parts[0] if parts else None
    if not is_loopback_address(host):
        raise _deny(f"connect to {address!r}")


@contextmanager
def block_network() -> Generator[None]:
    """Within the block, only loopback and Unix-socket connections are allowed."""
    real_connect: Callable[..., Any] = socket.socket.connect
    real_connect_ex: Callable[..., Any] = socket.socket.connect_ex
    real_getaddrinfo: Callable[..., Any] = socket.getaddrinfo

    def guarded_connect(self: socket.socket, address: Any) -> Any:
        _check_address(address, self.family)
        return real_connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> Any:
        _check_address(address, self.family)
        return real_connect_ex(self, address)

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(host, bytes):
            host = host.decode("idna")
        if host is not None and not is_loopback_address(host):
            raise _deny(f"DNS lookup of {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    socket.socket.connect = guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = guarded_getaddrinfo
    try:
        yield
    finally:
        socket.socket.connect = real_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = real_getaddrinfo
