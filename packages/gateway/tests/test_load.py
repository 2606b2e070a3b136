"""The gateway under load, over real sockets, served the way it is deployed (`server_config`).

Attack (issue 22, point 7): unsigned bodies up to the cap were read before the signature
check, with no read deadline and no connection cap, so stalled connections pinned memory
indefinitely. Now a request that cannot be signed is refused before its body is read,
a slow head or body is dropped at the deadline with one log line, and signed deliveries
keep starting runs meanwhile.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import uvicorn

from agent_loop_common.settings import Settings
from agent_loop_gateway import build_app, create_gateway, server_config
from agent_loop_testing import GitHubEmulator, emulator_client, sign_payload

from .conftest import SECRET, FakeRunner

DEADLINE = 0.5


def served(settings: Settings, emulator: GitHubEmulator, runner: FakeRunner) -> Iterator[int]:
    """The gateway under uvicorn with the deployed configuration; yields its port."""
    app = build_app(create_gateway(settings, runner=runner, github=emulator_client(emulator)))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    server = uvicorn.Server(server_config(app, settings, host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1_000):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture
def port(settings: Settings, emulator: GitHubEmulator, runner: FakeRunner) -> Iterator[int]:
    tight = settings.model_copy(update={"webhook_read_timeout_seconds": DEADLINE})
    yield from served(tight, emulator, runner)


def connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    return conn


def head(headers: dict[str, str]) -> bytes:
    lines = ["POST /webhook HTTP/1.1", "Host: gateway"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer(conn: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by the timeout)."""
    data = b""
    while chunk := conn.recv(65_536):
        data += chunk
    return data


def status(data: bytes) -> int | None:
    return int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else None


def signed_delivery(port: int, number: int) -> int | None:
    payload = {
        "action": "created",
        "issue": {"number": number, "pull_request": None},
        "comment": {"id": 999, "body": "/agent-loop build", "user": {"login": "alice"}},
        "repository": {"full_name": "acme/widgets"},
        "sender": {"login": "alice", "type": "User"},
    }
    body = json.dumps(payload).encode()
    with connect(port) as conn:
        conn.sendall(
            head(
                {
                    "Content-Type": "application/json",
                    "Content-Length": str(len(body)),
                    "X-GitHub-Event": "issue_comment",
                    "X-GitHub-Delivery": f"signed-{number}-{time.monotonic_ns()}",
                    "X-Hub-Signature-256": sign_payload(SECRET, body),
                    "Connection": "close",
                }
            )
            + body
        )
        return status(answer(conn))


def test_slow_unauthenticated_connections_are_dropped_and_signed_ones_still_run(
    port: int, emulator: GitHubEmulator, captured_logs: list[MutableMapping[str, Any]]
) -> None:
    # Stalled in the request head: a few bytes, then nothing.
    stalled_heads = [connect(port) for _ in range(20)]
    for conn in stalled_heads:
        conn.sendall(b"POST /webhook HTTP/1.1\r\nHost: gate")
    # A full head announcing a large body, no signature: refused before the body is read.
    unsigned = [connect(port) for _ in range(20)]
    for conn in unsigned:
        conn.sendall(
            head({"Content-Length": "200000", "X-GitHub-Event": "issues"}) + b"{" + b" " * 1_000
        )
    # A well-formed but wrong signature and a body that never finishes: 408 at the deadline.
    dribbling = [connect(port) for _ in range(20)]
    for conn in dribbling:
        conn.sendall(
            head(
                {
                    "Content-Length": "200000",
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": "d",
                    "X-Hub-Signature-256": "sha256=" + "ab" * 32,
                }
            )
            + b"{"
            + b" " * 1_000
        )

    # Signed deliveries are answered while all of that hangs.
    assert signed_delivery(port, 1) == 202
    assert signed_delivery(port, 2) == 202

    assert {status(answer(c)) for c in unsigned} == {401}
    assert {status(answer(c)) for c in dribbling} == {408}
    assert {answer(c) for c in stalled_heads} == {b""}  # closed without a word
    for conn in stalled_heads + unsigned + dribbling:
        conn.close()

    dropped = [e["reason"] for e in captured_logs if e["event"] == "gateway.connection_dropped"]
    assert dropped.count("no complete request head within 0.5 s") == len(stalled_heads)
    outcomes = [e["outcome"] for e in captured_logs if e["event"] == "gateway.delivery"]
    assert outcomes.count("bad_signature") == len(unsigned)
    assert outcomes.count("too_slow") == len(dribbling)


def test_a_client_that_hangs_up_mid_body_is_one_log_line(
    port: int, captured_logs: list[MutableMapping[str, Any]]
) -> None:
    with connect(port) as conn:
        conn.sendall(
            head(
                {
                    "Content-Length": "5000",
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": "gone",
                    "X-Hub-Signature-256": "sha256=" + "cd" * 32,
                }
            )
            + b"{"
        )
    for _ in range(500):
        if any(e["event"] == "gateway.client_disconnected" for e in captured_logs):
            break
        time.sleep(0.01)
    events = [e["event"] for e in captured_logs]
    assert events.count("gateway.client_disconnected") == 1
    assert "gateway.delivery" not in events  # no answer to log: nobody is listening


def test_past_the_connection_cap_a_request_is_answered_503(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    capped = settings.model_copy(
        update={"webhook_max_connections": 4, "webhook_read_timeout_seconds": 5.0}
    )
    for port in served(capped, emulator, runner):
        held = [connect(port) for _ in range(4)]
        for conn in held:
            conn.sendall(b"POST /webhook HTTP/1.1\r\n")
        answers = [signed_delivery(port, 1) for _ in range(20)]  # until all four are accepted
        assert 503 in answers
        assert answers[answers.index(503) :] == [503] * (len(answers) - answers.index(503))
        for conn in held:
            conn.close()
        for _ in range(100):
            if signed_delivery(port, 1) == 202:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the gateway never took deliveries again")


def test_healthz_answers_what_the_docs_say(port: int) -> None:
    """docs/events.md shows the `/healthz` answer; the server gives exactly that shape."""
    import pathlib
    import re

    docs = pathlib.Path(__file__).resolve().parents[3] / "docs" / "events.md"
    shown = re.search(r"`GET /healthz` answers\s+`(\{.*?\})`", docs.read_text(), re.S)
    assert shown is not None, "docs/events.md no longer shows the /healthz answer"
    with connect(port) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nConnection: close\r\n\r\n")
        raw = answer(conn)
    assert status(raw) == 200
    live = json.loads(raw.split(b"\r\n\r\n", 1)[1])
    assert live == json.loads(shown.group(1))
