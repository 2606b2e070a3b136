"""Bad input, over real HTTP: each is refused or coalesced with a log line, and none starts
a run or writes to GitHub.

The emulator delivers to the gateway served by uvicorn on loopback, as GitHub would;
the runner only records. "No write" is read from the emulator's request log: the
gateway may read (trust and PR lookups) but must not react, comment or change anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from agent_loop_common.settings import Settings
from agent_loop_gateway import Gateway, build_app, create_gateway
from agent_loop_testing import GitHubEmulator, emulator_client, serve_asgi, sign_payload

from .conftest import SECRET, FakeRunner, writes


@dataclass
class Served:
    gateway: Gateway
    url: str

    @property
    def webhook(self) -> str:
        return f"{self.url}/webhook"


def serve_gateway(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> Iterator[Served]:
    gateway = create_gateway(settings, runner=runner, github=emulator_client(emulator))
    with serve_asgi(build_app(gateway), lifespan="on") as url:
        yield Served(gateway, url)


@pytest.fixture
def served(settings: Settings, emulator: GitHubEmulator, runner: FakeRunner) -> Iterator[Served]:
    yield from serve_gateway(settings, emulator, runner)


def until(what: str, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting until {what}")
        time.sleep(0.01)


def settle(emulator: GitHubEmulator, served: Served) -> list[int | None]:
    """Wait until every delivery was answered and the gateway is quiet; the statuses."""
    emulator.wait_for_deliveries()
    until("the gateway is quiet", lambda: served.gateway.quiet)
    deliveries = emulator.wait_for_deliveries()  # and what the gateway's own writes caused
    until("the gateway is quiet", lambda: served.gateway.quiet)
    return [d.status for d in deliveries]


def logged(logs: list[MutableMapping[str, Any]], event: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == event]


def test_a_forged_signature_is_refused(
    served: Served,
    emulator: GitHubEmulator,
    runner: FakeRunner,
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    emulator.add_webhook(served.webhook, "not the secret")
    emulator.add_issue("Run me", author="alice")
    emulator.add_comment(1, "/agent-loop build", author="alice")
    assert settle(emulator, served) == [401, 401]
    # a real delivery with its body changed after signing
    body = emulator.deliveries[0].body
    tampered = body.replace(b'"alice"', b'"acme"')
    response = httpx.post(
        served.webhook,
        content=tampered,
        headers={
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": "tampered-1",
            "X-Hub-Signature-256": sign_payload(SECRET, body),
        },
    )
    assert response.status_code == 401
    missing = httpx.post(
        served.webhook, content=body, headers={"X-GitHub-Event": "issues", "X-GitHub-Delivery": "x"}
    )
    assert missing.status_code == 401
    assert runner.calls == []
    assert writes(emulator) == []
    assert {e["outcome"] for e in logged(captured_logs, "gateway.delivery")} == {"bad_signature"}


def test_replays_are_refused(served: Served, emulator: GitHubEmulator, runner: FakeRunner) -> None:
    emulator.add_webhook(served.webhook, SECRET)
    emulator.add_comment(1, "/agent-loop status", author="alice")
    assert settle(emulator, served) == [202, 204]  # the command; the agents' own reply
    first = emulator.deliveries[0]
    emulator.redeliver(first.id)  # GitHub's "Redeliver": the same delivery id
    settle(emulator, served)
    [redelivered] = [d for d in emulator.deliveries if d.redelivery]
    assert (redelivered.id, redelivered.status) == (first.id, 204)
    again = httpx.post(  # a captured body under a new delivery id
        served.webhook,
        content=first.body,
        headers={
            "X-GitHub-Event": first.event,
            "X-GitHub-Delivery": "a-new-id",
            "X-Hub-Signature-256": sign_payload(SECRET, first.body),
        },
    )
    assert again.status_code == 204
    until("the gateway is quiet", lambda: served.gateway.quiet)
    replies = [c for c in emulator.comments(1) if c.author == emulator.bot]
    assert len(replies) == 1  # the status was answered once
    assert runner.calls == []


def test_an_oversized_body_is_refused(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    small = settings.model_copy(update={"webhook_max_body_bytes": 20_000})
    for served in serve_gateway(small, emulator, runner):
        emulator.add_webhook(served.webhook, SECRET)
        emulator.add_issue("Huge", "x" * 30_000, author="alice")
        assert settle(emulator, served) == [413]

        def chunks() -> Iterator[bytes]:  # no Content-Length: nothing to reserve, refused unread
            for _ in range(30):
                yield b"x" * 1_000

        streamed = httpx.post(
            served.webhook,
            content=chunks(),
            headers={
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": "s",
                "X-Hub-Signature-256": "sha256=" + "0" * 64,
            },
        )
        assert streamed.status_code == 411
    assert runner.calls == []
    assert writes(emulator) == []


def test_events_for_another_repository_are_refused(
    served: Served, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    other = GitHubEmulator(name="other")
    other.add_webhook(served.webhook, SECRET)  # same secret, another repository
    other.add_issue("Elsewhere")
    other.add_comment(1, "/agent-loop build", author=other.owner)
    assert [d.status for d in other.wait_for_deliveries()] == [204, 204]
    until("the gateway is quiet", lambda: served.gateway.quiet)
    assert runner.calls == []
    assert writes(emulator) == []
    assert writes(other) == []


def test_untrusted_senders_get_no_run_and_no_reply(
    served: Served,
    emulator: GitHubEmulator,
    runner: FakeRunner,
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    emulator.add_webhook(served.webhook, SECRET)
    number = emulator.add_issue("Please do this", author="mallory")
    emulator.add_comment(number, "/agent-loop build", author="mallory")
    emulator.add_comment(1, "/agent-loop status", author="mallory")
    emulator.add_comment(2, "/agent-loop review", author="mallory")
    assert settle(emulator, served) == [202, 202, 202, 202]
    assert runner.calls == []
    assert writes(emulator) == []
    refused = logged(captured_logs, "gateway.refused")
    assert {e["why"] for e in refused} == {"@mallory is not trusted"}
    assert len(refused) == 4


@pytest.mark.parametrize(
    "body",
    [
        "```\n/agent-loop build\n```",
        "> /agent-loop build\n\nI would not do that.",
        "Type `/agent-loop stop` to stop it.",
        "    /agent-loop build",
    ],
)
def test_commands_in_code_or_quotes_do_nothing(
    served: Served, emulator: GitHubEmulator, runner: FakeRunner, body: str
) -> None:
    emulator.add_webhook(served.webhook, SECRET)
    emulator.add_comment(1, body, author="alice")
    assert settle(emulator, served) == [204]
    assert runner.calls == []
    assert writes(emulator) == []


def test_a_flood_for_one_pr_is_one_run(
    settings: Settings,
    emulator: GitHubEmulator,
    runner: FakeRunner,
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    # a window longer than the flood takes to send, even on a busy machine
    slow = settings.model_copy(update={"webhook_coalesce_seconds": 3.0})
    for served in serve_gateway(slow, emulator, runner):
        emulator.add_webhook(served.webhook, SECRET)
        emulator.add_review(
            2,
            author="alice",
            body="many nits",
            comments=[("app.py", 1, f"nit {n}") for n in range(100)],
        )
        statuses = settle(emulator, served)
        assert statuses == [202] * 101
        assert runner.calls == [("reviewer", 2)]
        [run] = served.gateway.dispatcher.history
        assert len(run.deliveries) == 101
    assert writes(emulator) == []
    dispatched = logged(captured_logs, "gateway.dispatched")
    assert [e["outcome"] for e in dispatched].count("coalesced") == 100
