"""A request's timeout bounds the whole response, body included (issue 16).

httpx's timeouts are per read, so a server (or anything in between) that sends the
headers at once and then drips the body one byte at a time, each byte well within the
read timeout, could hold a run forever. These tests serve exactly that on loopback.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from agent_loop_common.github import GitHub, GitHubUnavailable, TokenAuth
from agent_loop_testing import instant_retry

TIMEOUT = 0.5
DRIP_SECONDS = 0.05
BODY = b'{"message": "' + b"x" * 120 + b'"}'  # about 7 s at one byte per 50 ms


class DripServer:
    """Answers every request with prompt headers and a body sent one byte at a time."""

    def __init__(self, body: bytes = BODY) -> None:
        self.body = body
        self.requests = 0
        self._server: asyncio.Server | None = None
        self._stopping = False
        self._handlers: set[asyncio.Task[None]] = set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.requests += 1
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + f"Content-Length: {len(self.body)}\r\n\r\n".encode()
            )
            await writer.drain()
            for i in range(len(self.body)):
                if self._stopping or writer.is_closing():
                    return
                writer.write(self.body[i : i + 1])
                await writer.drain()
                await asyncio.sleep(DRIP_SECONDS)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        self._stopping = True
        if self._server is not None:
            self._server.close()
        await asyncio.gather(*self._handlers)


@pytest.fixture
async def drip() -> AsyncIterator[tuple[DripServer, str]]:
    server = DripServer()
    url = await server.start()
    yield server, url
    await server.stop()


async def test_a_dripped_body_fails_within_the_timeout(drip: tuple[DripServer, str]) -> None:
    server, url = drip
    async with GitHub(
        "acme/widgets",
        auth=TokenAuth("t"),
        base_url=url,
        timeout=TIMEOUT,
        retry=instant_retry(max_attempts=1),
    ) as gh:
        start = time.monotonic()
        with pytest.raises(GitHubUnavailable, match=r"no complete response within 0\.5s"):
            await gh.repository()
        took = time.monotonic() - start
    assert took < TIMEOUT + 1.0, took
    assert server.requests == 1


async def test_the_deadline_applies_per_attempt_under_the_retry_policy(
    drip: tuple[DripServer, str],
) -> None:
    server, url = drip
    async with GitHub(
        "acme/widgets",
        auth=TokenAuth("t"),
        base_url=url,
        timeout=TIMEOUT,
        retry=instant_retry(max_attempts=2),
    ) as gh:
        start = time.monotonic()
        with pytest.raises(GitHubUnavailable, match="after 2 attempts") as info:
            await gh.get_issue(1)  # a read: retried
        assert time.monotonic() - start < 2 * TIMEOUT + 1.0
        assert info.value.attempts == 2
        with pytest.raises(GitHubUnavailable, match="may already have applied") as info:
            await gh.create_issue_comment(1, "hi")  # a create: never repeated blindly
        assert info.value.attempts == 1
    assert server.requests == 3


async def test_an_archive_download_has_its_own_longer_bound() -> None:
    server = DripServer(b"x" * 16)  # about 0.8 s: longer than the timeout, within the bound
    url = await server.start()
    try:
        async with GitHub(
            "acme/widgets",
            auth=TokenAuth("t"),
            base_url=url,
            timeout=0.3,
            archive_timeout=5,
            retry=instant_retry(max_attempts=1),
        ) as gh:
            assert await gh.download_archive("main") == b"x" * 16
            with pytest.raises(GitHubUnavailable, match=r"within 0\.3s"):
                await gh.repository()
        async with GitHub(
            "acme/widgets",
            auth=TokenAuth("t"),
            base_url=url,
            timeout=0.3,
            archive_timeout=0.4,
            retry=instant_retry(max_attempts=1),
        ) as gh:
            with pytest.raises(GitHubUnavailable, match=r"within 0\.4s"):
                await gh.download_archive("main")
    finally:
        await server.stop()
