"""Webhook deliveries: the emulator tells a URL what happened, signed like GitHub does.

A test registers a URL and a secret (`GitHubEmulator.add_webhook`); from then on every
state change that GitHub would announce (an issue opened, labelled or assigned, a
comment, a pull request opened or closed, a review, a review comment, a check run, a
commit status) is rendered as GitHub's payload at that moment, under the state lock,
and queued. One background thread posts the queue in order with GitHub's headers
(`X-GitHub-Event`, `X-GitHub-Delivery`, `X-Hub-Signature-256`), so an API request that
causes a delivery never waits for the receiver. Every attempt is kept in a log with
the receiver's status code, and `redeliver` sends one again with the same delivery id,
as GitHub's "Redeliver" button does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent_loop_testing._emulator_render import Json, Urls

__all__ = ["Delivery", "Webhook", "WebhookSender", "sign_payload"]

Builder = Callable[[Urls], Json]
"""Renders one payload for the URLs the receiver should see (called under the lock)."""


def sign_payload(secret: str, body: bytes) -> str:
    """The `X-Hub-Signature-256` value of `body`: `sha256=` and the HMAC's hex digest."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Webhook:
    """One registered receiver."""

    id: int
    url: str
    secret: str
    events: frozenset[str] | None
    """Events it subscribes to; `None`: every event (GitHub's "send me everything")."""

    def wants(self, event: str) -> bool:
        return self.events is None or event in self.events


@dataclass(frozen=True)
class Delivery:
    """One delivery attempt and what the receiver answered."""

    id: str
    """`X-GitHub-Delivery`: the same for a redelivery."""
    hook_id: int
    event: str
    action: str | None
    body: bytes = field(repr=False)
    status: int | None
    """The receiver's HTTP status; `None` when it could not be reached."""
    error: str | None
    seconds: float
    """How long the receiver took to answer."""
    sent_at: float
    """`time.monotonic()` when the request was sent."""
    redelivery: bool = False

    @property
    def payload(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.body)
        return data


@dataclass(frozen=True)
class _Outgoing:
    hook: Webhook
    delivery_id: str
    event: str
    action: str | None
    body: bytes
    redelivery: bool = False


class WebhookSender:
    """Registered hooks, the delivery queue, its sender thread and the delivery log."""

    def __init__(self, *, timeout: float = 10.0) -> None:
        self.hooks: list[Webhook] = []
        self.log: list[Delivery] = []
        self.base_url = "http://emulator.test"
        """API root the payloads' URLs use (the served address while serving)."""
        self.web_url = "http://emulator.test"
        self._timeout = timeout
        self._queue: queue.Queue[_Outgoing | None] = queue.Queue()
        self._cond = threading.Condition()
        self._pending = 0
        self._counter = 0
        self._thread: threading.Thread | None = None
        self._outbox: dict[str, _Outgoing] = {}

    # ------------------------------------------------------------------ registry
    def add(self, url: str, secret: str, events: Iterable[str] | None) -> Webhook:
        hook = Webhook(
            len(self.hooks) + 1, url, secret, None if events is None else frozenset(events)
        )
        self.hooks.append(hook)
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="emulator-webhooks", daemon=True)
            self._thread.start()
        return hook

    def remove(self, hook_id: int) -> None:
        self.hooks = [h for h in self.hooks if h.id != hook_id]

    def wants(self, event: str) -> bool:
        return any(h.wants(event) for h in self.hooks)

    # ------------------------------------------------------------------ sending
    def _delivery_id(self) -> str:
        self._counter += 1
        return str(uuid.UUID(int=(0xE0 << 120) | self._counter))

    def emit(self, event: str, urls: Urls, build: Builder) -> None:
        """Render the payload now and queue one delivery per subscribed hook."""
        hooks = [h for h in self.hooks if h.wants(event)]
        if not hooks:
            return
        payload = build(urls)
        action = payload.get("action")
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        for hook in hooks:
            out = _Outgoing(
                hook, self._delivery_id(), event, action if isinstance(action, str) else None, body
            )
            self._outbox[out.delivery_id] = out
            self._put(out)

    def redeliver(self, delivery_id: str) -> None:
        """Send a delivery again, same id and body (GitHub's "Redeliver")."""
        out = self._outbox[delivery_id]
        self._put(
            _Outgoing(out.hook, out.delivery_id, out.event, out.action, out.body, redelivery=True)
        )

    def _put(self, out: _Outgoing) -> None:
        with self._cond:
            self._pending += 1
        self._queue.put(out)

    def _run(self) -> None:
        with httpx.Client(timeout=self._timeout, trust_env=False) as client:
            while True:
                out = self._queue.get()
                if out is None:
                    return
                delivery = self._post(client, out)
                with self._cond:
                    self.log.append(delivery)
                    self._pending -= 1
                    self._cond.notify_all()

    def _post(self, client: httpx.Client, out: _Outgoing) -> Delivery:
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "GitHub-Hookshot/emulator",
            "X-GitHub-Event": out.event,
            "X-GitHub-Delivery": out.delivery_id,
            "X-GitHub-Hook-ID": str(out.hook.id),
            "X-Hub-Signature-256": sign_payload(out.hook.secret, out.body),
        }
        start = time.monotonic()
        status: int | None = None
        error: str | None = None
        try:
            status = client.post(out.hook.url, content=out.body, headers=headers).status_code
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"
        return Delivery(
            out.delivery_id,
            out.hook.id,
            out.event,
            out.action,
            out.body,
            status,
            error,
            time.monotonic() - start,
            start,
            out.redelivery,
        )

    # ------------------------------------------------------------------ observing
    def deliveries(self) -> list[Delivery]:
        with self._cond:
            return list(self.log)

    def wait_idle(self, timeout: float = 10.0) -> list[Delivery]:
        """Wait until every queued delivery was answered; the whole log."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{self._pending} webhook deliveries still pending")
                self._cond.wait(left)
            return list(self.log)

    def wait_for(
        self, predicate: Callable[[Collection[Delivery]], bool], timeout: float = 10.0
    ) -> list[Delivery]:
        """Wait until `predicate(log)` holds; the log then."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not predicate(self.log):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the expected webhook deliveries did not happen")
                self._cond.wait(left)
            return list(self.log)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=self._timeout + 1)
            self._thread = None
