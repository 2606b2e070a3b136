"""The emulator delivers webhooks: signed, GitHub-shaped, in order, never blocking the API."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from githubkit_schemas.latest import models as m
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agent_loop_testing import (
    GitHubEmulator,
    assert_matches_schema,
    serve_asgi,
    sign_payload,
)

SECRET = "It's a Secret to Everybody"

MODELS: dict[tuple[str, str | None], Any] = {
    ("issues", "opened"): m.WebhookIssuesOpened,
    ("issues", "labeled"): m.WebhookIssuesLabeled,
    ("issues", "assigned"): m.WebhookIssuesAssigned,
    ("issues", "closed"): m.WebhookIssuesClosed,
    ("issue_comment", "created"): m.WebhookIssueCommentCreated,
    ("issue_comment", "edited"): m.WebhookIssueCommentEdited,
    ("pull_request", "opened"): m.WebhookPullRequestOpened,
    ("pull_request", "labeled"): m.WebhookPullRequestLabeled,
    ("pull_request", "closed"): m.WebhookPullRequestClosed,
    ("pull_request_review", "submitted"): m.WebhookPullRequestReviewSubmitted,
    ("pull_request_review_comment", "created"): m.WebhookPullRequestReviewCommentCreated,
    ("check_run", "created"): m.WebhookCheckRunCreated,
    ("check_run", "completed"): m.WebhookCheckRunCompleted,
    ("status", None): m.WebhookStatus,
}


@dataclass
class Receiver:
    """A webhook endpoint that records what it got and answers `status`."""

    url: str = ""
    status: int = 202
    got: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)

    async def endpoint(self, request: Request) -> Response:
        while not self.gate.is_set():  # a test can hold the receiver
            await _sleep()
        self.got.append((dict(request.headers), await request.body()))
        return Response(status_code=self.status)


async def _sleep() -> None:
    import asyncio

    await asyncio.sleep(0.01)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    rec = Receiver()
    rec.gate.set()
    app = Starlette(routes=[Route("/hook", rec.endpoint, methods=["POST"])])
    with serve_asgi(app) as url:
        rec.url = f"{url}/hook"
        yield rec


@pytest.fixture
def emulator() -> GitHubEmulator:
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    emu.seed_files({"app.py": "x = 1\n"})
    return emu


def _story(emu: GitHubEmulator) -> None:
    """Everything the gateway listens to, once."""
    number = emu.add_issue("Fix it", "please", author="alice", labels=["bug"])
    emu.assign_issue(number, emu.bot, actor="alice")
    comment = emu.add_comment(number, "/agent-loop build", author="alice")
    emu.edit_comment(comment, "/agent-loop status")
    emu.close_issue(number)
    head = emu.push("fix", {"app.py": "x = 2\n"}, author="alice", message="fix")
    pr = emu.open_pull("fix", title="Fix", author="alice")
    emu.label_issue(pr, "ready", actor="acme")
    emu.add_comment(pr, "looks good", author="acme")
    emu.add_review(pr, author="acme", body="one thing", comments=[("app.py", 1, "why 2?")])
    emu.set_check_run(head, "tests", status="in_progress", conclusion=None)
    emu.set_check_run(head, "tests", conclusion="failure")
    emu.set_status(head, "lint", "failure")
    emu.merge_pull(pr)


def test_every_change_is_delivered_signed_in_order(
    emulator: GitHubEmulator, receiver: Receiver
) -> None:
    hook = emulator.add_webhook(receiver.url, SECRET)
    _story(emulator)
    deliveries = emulator.wait_for_deliveries()
    assert [(d.event, d.action) for d in deliveries] == [
        ("issues", "opened"),
        ("issues", "labeled"),
        ("issues", "assigned"),
        ("issue_comment", "created"),
        ("issue_comment", "edited"),
        ("issues", "closed"),
        ("pull_request", "opened"),
        ("pull_request", "labeled"),
        ("issue_comment", "created"),
        ("pull_request_review_comment", "created"),
        ("pull_request_review", "submitted"),
        ("check_run", "created"),
        ("check_run", "completed"),
        ("status", None),
        ("pull_request", "closed"),
    ]
    assert {d.status for d in deliveries} == {202}
    assert len({d.id for d in deliveries}) == len(deliveries)
    assert len(receiver.got) == len(deliveries)
    for (headers, body), delivery in zip(receiver.got, deliveries, strict=True):
        expected = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        assert headers["x-hub-signature-256"] == expected == sign_payload(SECRET, body)
        assert headers["x-github-event"] == delivery.event
        assert headers["x-github-delivery"] == delivery.id
        assert headers["x-github-hook-id"] == str(hook)
        assert headers["content-type"] == "application/json"
        assert body == delivery.body


def test_payloads_match_githubs_webhook_schema(
    emulator: GitHubEmulator, receiver: Receiver
) -> None:
    emulator.add_webhook(receiver.url, SECRET)
    _story(emulator)
    for delivery in emulator.wait_for_deliveries():
        assert_matches_schema(MODELS[(delivery.event, delivery.action)], delivery.body)


def test_payload_contents(emulator: GitHubEmulator, receiver: Receiver) -> None:
    emulator.add_webhook(receiver.url, SECRET)
    _story(emulator)
    by_kind: dict[tuple[str, str | None], list[dict[str, Any]]] = {}
    for d in emulator.wait_for_deliveries():
        by_kind.setdefault((d.event, d.action), []).append(d.payload)
    opened = by_kind[("issues", "opened")][0]
    assert (opened["issue"]["number"], opened["sender"]["login"]) == (1, "alice")
    assert opened["repository"]["full_name"] == "acme/widgets"
    assert by_kind[("issues", "labeled")][0]["label"]["name"] == "bug"
    assert by_kind[("issues", "assigned")][0]["assignee"]["login"] == emulator.bot
    created = by_kind[("issue_comment", "created")]
    assert created[0]["comment"]["body"] == "/agent-loop build"
    assert "pull_request" not in created[0]["issue"]
    assert "pull_request" in created[1]["issue"]  # a comment on the PR's conversation
    edited = by_kind[("issue_comment", "edited")][0]
    assert edited["changes"] == {"body": {"from": "/agent-loop build"}}
    failed = by_kind[("check_run", "completed")][0]["check_run"]
    assert failed["conclusion"] == "failure"
    assert [p["number"] for p in failed["pull_requests"]] == [2]
    status = by_kind[("status", None)][0]
    assert (status["state"], status["context"]) == ("failure", "lint")
    assert [b["name"] for b in status["branches"]] == ["fix"]
    closed = by_kind[("pull_request", "closed")][0]["pull_request"]
    assert closed["merged"] is True


def test_only_subscribed_events_are_sent(emulator: GitHubEmulator, receiver: Receiver) -> None:
    emulator.add_webhook(receiver.url, SECRET, events=["issue_comment"])
    _story(emulator)
    assert {d.event for d in emulator.wait_for_deliveries()} == {"issue_comment"}


def test_changes_through_the_api_are_delivered_too(
    emulator: GitHubEmulator, receiver: Receiver
) -> None:
    emulator.add_webhook(receiver.url, SECRET)
    with emulator.serve() as api:
        response = httpx.post(
            f"{api}/repos/acme/widgets/issues",
            json={"title": "From the API"},
            headers={"Authorization": f"token {emulator.token_for('alice')}"},
        )
        assert response.status_code == 201
        [delivery] = emulator.wait_for_deliveries()
    assert (delivery.event, delivery.action) == ("issues", "opened")
    assert delivery.payload["issue"]["url"].startswith(api)  # URLs lead back to the emulator


def test_a_slow_receiver_never_blocks_the_emulator(
    emulator: GitHubEmulator, receiver: Receiver
) -> None:
    emulator.add_webhook(receiver.url, SECRET)
    receiver.gate.clear()
    with emulator.serve() as api:
        for n in range(3):
            response = httpx.post(
                f"{api}/repos/acme/widgets/issues",
                json={"title": f"issue {n}"},
                headers={"Authorization": f"token {emulator.owner_token}"},
                timeout=2,
            )
            assert response.status_code == 201
        assert emulator.deliveries == []  # all three still queued behind the held receiver
        receiver.gate.set()
        assert len(emulator.wait_for_deliveries()) == 3


def test_redelivery_keeps_the_delivery_id(emulator: GitHubEmulator, receiver: Receiver) -> None:
    emulator.add_webhook(receiver.url, SECRET)
    emulator.add_issue("One")
    [first] = emulator.wait_for_deliveries()
    emulator.redeliver(first.id)
    _, again = emulator.wait_for_deliveries()
    assert (again.id, again.body, again.redelivery) == (first.id, first.body, True)
    assert receiver.got[0][1] == receiver.got[1][1]


def test_an_unreachable_receiver_is_logged_not_raised(emulator: GitHubEmulator) -> None:
    emulator.add_webhook("http://127.0.0.1:9/hook", SECRET)
    emulator.add_issue("One")
    [delivery] = emulator.wait_for_deliveries()
    assert delivery.status is None
    assert delivery.error is not None
    assert json.loads(delivery.body)["action"] == "opened"


def test_nothing_is_rendered_without_a_webhook(emulator: GitHubEmulator) -> None:
    emulator.add_issue("One")
    assert emulator.deliveries == []
