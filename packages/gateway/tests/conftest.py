"""Fixtures for the gateway's tests: an emulated repository with people and an agent PR,
settings with a webhook secret, a runner that only records, and ways to get GitHub's
own payloads (the emulator's deliveries) to a gateway in process or over HTTP.
"""

from __future__ import annotations

import asyncio
import pathlib
import threading
import time
from collections.abc import AsyncIterator, Generator, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_loop_common.settings import Settings
from agent_loop_gateway import AgentName, Gateway, build_app, create_gateway
from agent_loop_testing import (
    Delivery,
    GitHubEmulator,
    emulator_client,
    emulator_settings,
    quiet_logs,
    serve_asgi,
    sign_payload,
)

SECRET = "gateway-test-secret"
AGENT_BRANCH = "agent-loop/issue-1-fix"


@pytest.fixture(autouse=True)
def captured_logs() -> Generator[list[MutableMapping[str, Any]]]:
    with quiet_logs() as logs:
        yield logs


@dataclass
class FakeRunner:
    """A `Runner` that records each run; thread-safe, so a served gateway can use it."""

    calls: list[tuple[AgentName, int | None]] = field(default_factory=list)
    started_at: list[float] = field(default_factory=list)
    hold: float = 0.0
    """Seconds each run takes."""
    fail: bool = False
    _cond: threading.Condition = field(default_factory=threading.Condition)

    async def __call__(self, agent: AgentName, target: int | None) -> None:
        with self._cond:
            self.calls.append((agent, target))
            self.started_at.append(time.monotonic())
            self._cond.notify_all()
        if self.hold:
            await asyncio.sleep(self.hold)
        if self.fail:
            raise RuntimeError("the run failed")

    def wait_for(self, count: int, timeout: float = 10.0) -> list[tuple[AgentName, int | None]]:
        """Block until `count` runs started (from any thread); the calls so far."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.calls) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.calls)} of {count} runs started: {self.calls}")
                self._cond.wait(left)
            return list(self.calls)


@pytest.fixture
def emulator() -> GitHubEmulator:
    """`acme/widgets` with a writer (alice), a reader (mallory), issue #1 and agent PR #2."""
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    emu.add_user("mallory", permission="read")
    emu.seed_files({"app.py": "x = 1\n"})
    emu.add_issue("Make x two", "x should be 2", author="alice")
    emu.push(AGENT_BRANCH, {"app.py": "x = 2\n"}, author=emu.bot, message="x = 2")
    emu.open_pull(AGENT_BRANCH, title="Make x two", author=emu.bot)
    return emu


@pytest.fixture
def settings(emulator: GitHubEmulator, tmp_path: pathlib.Path) -> Settings:
    return emulator_settings(
        emulator,
        tmp_path / "home",
        webhook_secret=SECRET,
        webhook_coalesce_seconds=0.05,
        trusted_label="agent",
    )


@pytest.fixture
def runner() -> FakeRunner:
    return FakeRunner()


@pytest.fixture
def gateway(settings: Settings, emulator: GitHubEmulator, runner: FakeRunner) -> Gateway:
    return create_gateway(settings, runner=runner, github=emulator_client(emulator))


@pytest.fixture
async def client(gateway: Gateway) -> AsyncIterator[httpx.AsyncClient]:
    """The gateway in process (no sockets; runs and checks happen in the test's loop)."""
    transport = httpx.ASGITransport(app=build_app(gateway))
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway.test") as c:
        yield c
    await gateway.aclose()


@dataclass
class Recorder:
    """A webhook receiver that answers 204: a way to collect GitHub's payloads."""

    emulator: GitHubEmulator

    def take(self) -> list[Delivery]:
        """Every delivery so far (waiting for the queue), and forget them."""
        found = self.emulator.wait_for_deliveries()
        taken = found[self._seen :]
        self._seen = len(found)
        return taken

    _seen: int = 0


@pytest.fixture
def recorder(emulator: GitHubEmulator) -> Iterator[Recorder]:
    """The emulator's deliveries, collected (deliver them to a gateway with `post`)."""

    async def ok(request: Request) -> Response:
        await request.body()
        return Response(status_code=204)

    app = Starlette(routes=[Route("/hook", ok, methods=["POST"])])
    with serve_asgi(app) as url:
        emulator.add_webhook(f"{url}/hook", SECRET)
        yield Recorder(emulator)


async def post(
    client: httpx.AsyncClient,
    delivery: Delivery,
    *,
    secret: str = SECRET,
    delivery_id: str | None = None,
    body: bytes | None = None,
) -> httpx.Response:
    """Send one of the emulator's deliveries to the in-process gateway, signed."""
    raw = delivery.body if body is None else body
    return await client.post(
        "/webhook",
        content=raw,
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": delivery.event,
            "X-GitHub-Delivery": delivery_id or delivery.id,
            "X-Hub-Signature-256": sign_payload(secret, raw),
        },
    )


def writes(emulator: GitHubEmulator) -> list[tuple[str, str]]:
    """Every request that changed GitHub (the gateway's acknowledgements, say)."""
    return [(r.method, r.path) for r in emulator.requests if r.method != "GET"]
