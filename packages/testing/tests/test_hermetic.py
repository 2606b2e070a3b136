"""The autouse guard makes network access from tests fail loudly."""

from __future__ import annotations

import socket
import urllib.request

import httpx
import pytest

from agent_loop_testing import NetworkAccessDenied, is_loopback_address


def test_dns_lookup_of_a_public_host_fails_with_a_clear_message() -> None:
    with pytest.raises(NetworkAccessDenied, match="network access denied in tests"):
        socket.getaddrinfo("api.github.com", 443)


def test_connect_to_a_public_ip_fails() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(NetworkAccessDenied, match=r"connect to \('140.82.112.6', 443\)"):
            sock.connect(("140.82.112.6", 443))
    finally:
        sock.close()


def test_http_clients_are_blocked() -> None:
    with pytest.raises(NetworkAccessDenied):
        urllib.request.urlopen("http://example.com", timeout=1)
    with pytest.raises((NetworkAccessDenied, httpx.ConnectError)):
        httpx.get("https://api.github.com/zen", timeout=1)


async def test_async_http_clients_are_blocked() -> None:
    async with httpx.AsyncClient(timeout=1) as client:
        with pytest.raises(
            (NetworkAccessDenied, httpx.ConnectError), match="network access denied"
        ):
            await client.get("https://api.openai.com/v1/models")


def test_loopback_is_allowed() -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname(), timeout=1)
    client.close()
    server.close()


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("10.0.0.1", False),
        ("api.github.com", False),
        (None, False),
    ],
)
def test_is_loopback_address(host: object, expected: bool) -> None:
    assert is_loopback_address(host) is expected
