"""The gateway's memory is bounded in bytes, not connections (issue 30, attack 4), over
real sockets with the deployed server configuration.

The attack: hundreds of reconnecting senders, each announcing a body as large as the
cap under a well-formed but wrong signature and sending it slowly (some finish, some
stall), from a few addresses. Before, every such body was read whole before its
signature was checked: 520 loops held about 720 MB against the deployed 512 Mi, and
real deliveries got 503. Now each body reserves its `Content-Length` from a byte budget
before it is read, per address and in all; what does not fit is answered at once,
unread; the signature is computed as the body streams. Held bytes stay under the
budget, one address never holds more than its share, and GitHub's signed deliveries,
from another address, keep being answered 202 and starting their runs throughout.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import uvicorn

from agent_loop_common.settings import Settings
from agent_loop_gateway import Gateway, build_app, create_gateway, server_config
from agent_loop_testing import GitHubEmulator, emulator_client

from .conftest import SECRET, FakeRunner
from .test_load import head, status

ATTACKERS = ("127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5")
LOOPS_PER_ADDRESS = 80  # 320 reconnecting loops in all
ATTACK_SECONDS = 4.0
DEADLINE = 1.5
CHUNK = 16 * 1024


@dataclass
class Served:
    port: int
    gateway: Gateway


@contextlib.contextmanager
def serve(settings: Settings, emulator: GitHubEmulator, runner: FakeRunner) -> Iterator[Served]:
    gateway = create_gateway(settings, runner=runner, github=emulator_client(emulator))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    config = server_config(build_app(gateway), settings, host="127.0.0.1", port=port)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(1_000):
        if server.started:
            break
        time.sleep(0.01)
    try:
        yield Served(port, gateway)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        sock.close()


@dataclass
class Attack:
    """Reconnecting senders of cap-sized bodies under a wrong signature, in a thread."""

    port: int
    size: int
    answers: Counter[int | None] = field(default_factory=Counter[int | None])
    connections: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    async def _loop(self, source: str, stalls: bool) -> None:
        signature = "sha256=" + "ab" * 32  # well-formed, wrong
        while not self.stop.is_set():
            writer: asyncio.StreamWriter | None = None
            answer: asyncio.Future[bytes] | None = None
            try:
                reader, writer = await asyncio.open_connection(
                    "127.0.0.1", self.port, local_addr=(source, 0)
                )
                self.connections += 1
                writer.write(
                    head(
                        {
                            "Content-Length": str(self.size),
                            "X-GitHub-Event": "issues",
                            "X-GitHub-Delivery": f"attack-{self.connections}",
                            "X-Hub-Signature-256": signature,
                        }
                    )
                )
                sent, limit = 0, self.size // 4 if stalls else self.size
                answer = asyncio.ensure_future(reader.read(64))
                while sent < limit and not answer.done() and not self.stop.is_set():
                    writer.write(b" " * min(CHUNK, limit - sent))
                    await writer.drain()
                    sent += CHUNK
                    await asyncio.sleep(0.01)
                try:
                    data = await asyncio.wait_for(answer, timeout=DEADLINE * 3)
                except (TimeoutError, OSError):
                    data = b""
                self.answers[status(data)] += 1
            except OSError:
                self.answers[None] += 1
                await asyncio.sleep(0.01)
            finally:
                if answer is not None and not answer.done():
                    answer.cancel()
                elif answer is not None and not answer.cancelled():
                    answer.exception()  # retrieved: a reset after the answer is expected
                if writer is not None:
                    writer.close()

    def run(self) -> None:
        async def main() -> None:
            await asyncio.gather(
                *(
                    self._loop(source, stalls=i % 2 == 0)
                    for source in ATTACKERS
                    for i in range(LOOPS_PER_ADDRESS)
                )
            )

        asyncio.run(main())


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as status_file:
        for line in status_file:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@pytest.mark.slow
def test_hundreds_of_slow_wrongly_signed_senders_hold_bounded_bytes(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    tight = settings.model_copy(update={"webhook_read_timeout_seconds": DEADLINE})
    with serve(tight, emulator, runner) as served:
        emulator.add_webhook(f"http://127.0.0.1:{served.port}/webhook", SECRET)
        before = _rss()
        attack = Attack(served.port, tight.webhook_max_body_bytes)
        attacker = threading.Thread(target=attack.run, daemon=True)
        attacker.start()
        peak_rss = before
        opened: list[int] = []
        started = time.monotonic()
        while time.monotonic() - started < ATTACK_SECONDS:
            # GitHub's real deliveries, from 127.0.0.1: a trusted person opens an issue.
            opened.append(emulator.add_issue("Fix it", "x", author="alice", labels=["agent"]))
            peak_rss = max(peak_rss, _rss())
            time.sleep(0.2)
        deadline = time.monotonic() + 20
        while not set(opened) <= {t for _, t in runner.calls} and time.monotonic() < deadline:
            time.sleep(0.05)
        runs = list(runner.calls)
        attack.stop.set()
        attacker.join(timeout=30)
        deliveries = emulator.wait_for_deliveries()

    # GitHub's deliveries were all answered and started their runs while the attack ran.
    assert len(opened) >= 10
    assert {d.status for d in deliveries} <= {202, 204}, Counter(d.status for d in deliveries)
    assert {target for _, target in runs} >= set(opened)
    # Loosely, the process (gateway and attackers both) grew by far less than the
    # deployed memory, where reading every announced body would have taken hundreds of MB.
    grown = peak_rss - before
    assert grown < 128 * 1024 * 1024, f"resident memory grew {grown / 2**20:.0f} MiB"
    # The attack was real: hundreds of connections, many refused unread for lack of room.
    assert attack.connections > len(ATTACKERS) * LOOPS_PER_ADDRESS
    assert attack.answers[429] > 0, attack.answers
    budget = served.gateway.bodies
    assert budget.refused["source"] > 0
    # Bytes held stayed within the budget and each address within its share.
    assert budget.peak <= tight.webhook_buffer_bytes
    assert budget.peak_per_source <= tight.webhook_buffer_bytes_per_source
    assert budget.held == 0  # every reservation was released


def _hold(port: int, source: str, size: int, event: str = "issues") -> socket.socket:
    """A connection from `source` announcing `size` bytes under a wrong signature, holding."""
    conn = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    conn.sendall(
        head(
            {
                "Content-Length": str(size),
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": f"hold-{source}-{time.monotonic_ns()}",
                "X-Hub-Signature-256": "sha256=" + "cd" * 32,
            }
        )
        + b"{"
    )
    return conn


def _answer(conn: socket.socket) -> int | None:
    data = b""
    with contextlib.suppress(OSError):
        while chunk := conn.recv(65_536):
            data += chunk
    return status(data)


def test_many_addresses_fill_the_budget_and_are_answered_503_at_once(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    """With more addresses than the budget has shares, the whole budget fills: every
    further request is answered 503 at once, unread, and nothing more is held."""
    small = settings.model_copy(
        update={
            "webhook_read_timeout_seconds": 3.0,
            "webhook_max_body_bytes": 100_000,
            "webhook_buffer_bytes_per_source": 200_000,
            "webhook_buffer_bytes": 500_000,
        }
    )
    with serve(small, emulator, runner) as served:
        held = [_hold(served.port, f"127.0.1.{i}", 100_000) for i in range(1, 6)]
        time.sleep(0.3)  # the five reservations are made (500,000 bytes: the budget)
        assert served.gateway.bodies.held == 500_000
        started = time.monotonic()
        refused = [_answer(_hold(served.port, f"127.0.2.{i}", 100_000)) for i in range(1, 6)]
        quick = time.monotonic() - started
        for conn in held:
            conn.close()
    assert refused == [503] * 5
    assert quick < 2.0  # answered at once, not at the body deadline (3 s)
    assert served.gateway.bodies.peak == 500_000
    assert served.gateway.bodies.refused == {"total": 5, "source": 0}


def test_one_address_is_held_to_its_share_and_other_addresses_still_fit(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    small = settings.model_copy(
        update={
            "webhook_read_timeout_seconds": 3.0,
            "webhook_max_body_bytes": 100_000,
            "webhook_buffer_bytes_per_source": 200_000,
            "webhook_buffer_bytes": 1_000_000,
        }
    )
    with serve(small, emulator, runner) as served:
        mine = [_hold(served.port, "127.0.3.1", 100_000) for _ in range(2)]
        time.sleep(0.3)
        third = _answer(_hold(served.port, "127.0.3.1", 100_000))
        other = _hold(served.port, "127.0.3.2", 100_000)
        time.sleep(0.3)
        assert served.gateway.bodies.of("127.0.3.2") == 100_000
        for conn in [*mine, other]:
            conn.close()
    assert third == 429


def test_a_trusted_proxy_names_the_client_and_anyone_else_cannot(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    """Behind an ingress every connection comes from the proxy: its `X-Forwarded-For`
    tells the clients apart. From any other address the header is ignored, so nobody
    escapes their share by writing it."""
    proxied = settings.model_copy(
        update={
            "webhook_read_timeout_seconds": 3.0,
            "webhook_max_body_bytes": 100_000,
            "webhook_buffer_bytes_per_source": 100_000,
            "webhook_trusted_proxies": ("127.0.4.0/24",),
        }
    )

    def forwarded(source: str, client: str) -> socket.socket:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
        conn.sendall(
            head(
                {
                    "Content-Length": "100000",
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": f"fwd-{time.monotonic_ns()}",
                    "X-Hub-Signature-256": "sha256=" + "cd" * 32,
                    "X-Forwarded-For": client,
                }
            )
            + b"{"
        )
        return conn

    with serve(proxied, emulator, runner) as served:
        port = served.port
        via_proxy = [forwarded("127.0.4.1", f"203.0.113.{i}") for i in range(1, 4)]
        time.sleep(0.3)
        bodies = served.gateway.bodies
        assert [bodies.of(f"203.0.113.{i}") for i in range(1, 4)] == [100_000] * 3
        spoofer = forwarded("127.0.5.1", "198.51.100.1")
        time.sleep(0.3)
        assert bodies.of("198.51.100.1") == 0
        assert bodies.of("127.0.5.1") == 100_000
        again = _answer(forwarded("127.0.5.1", "198.51.100.2"))  # its share is taken
        for conn in [*via_proxy, spoofer]:
            conn.close()
    assert again == 429


def test_an_event_can_have_a_larger_cap(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    """`AGENT_LOOP_WEBHOOK_MAX_BODY_BYTES_BY_EVENT`: a large `pull_request` delivery is
    read, the same size under another event is refused unread."""
    raised = settings.model_copy(
        update={
            "webhook_read_timeout_seconds": 3.0,
            "webhook_max_body_bytes_by_event": ("pull_request=600000",),
        }
    )
    with serve(raised, emulator, runner) as served:
        large = _hold(served.port, "127.0.6.1", 500_000, event="pull_request")
        time.sleep(0.3)
        assert served.gateway.bodies.held == 500_000
        refused = _answer(_hold(served.port, "127.0.6.2", 500_000, event="issues"))
        large.close()
    assert refused == 413


def test_source_of_groups_an_ipv6_host_by_its_64() -> None:
    from agent_loop_gateway._budget import source_of

    assert source_of("2001:db8:1:2::1") == source_of("2001:db8:1:2:ffff::9") == "2001:db8:1:2::/64"
    assert source_of("2001:db8:1:3::1") != source_of("2001:db8:1:2::1")
    assert source_of("::ffff:192.0.2.7") == "192.0.2.7"
    assert source_of(None) == "unknown"


def test_the_default_budget_fits_the_deployed_memory() -> None:
    """The byte budget is derived from the gateway's deployed memory; with every
    connection's read buffer (64 KiB at most: uvicorn pauses reading past it) on top,
    three quarters of the memory are still left for the interpreter, its libraries and
    the kernel's socket buffers."""
    from agent_loop_gateway.env import env

    memory = env.resources.memory if env.resources is not None else None
    assert isinstance(memory, str)
    assert memory.endswith("Mi")
    deployed = int(memory.removesuffix("Mi")) * 2**20
    defaults = {name: f.default for name, f in Settings.model_fields.items()}
    worst = defaults["webhook_buffer_bytes"] + defaults["webhook_max_connections"] * 64 * 2**10
    assert worst <= deployed // 4
    assert defaults["webhook_buffer_bytes_per_source"] * 4 <= defaults["webhook_buffer_bytes"]


def test_a_chunked_body_under_a_small_content_length_is_refused_unread(
    settings: Settings, emulator: GitHubEmulator, runner: FakeRunner
) -> None:
    """Attack (re-audit of issue 30, item 4): `Transfer-Encoding: chunked` beside
    `Content-Length: 100`. The HTTP parser frames the body by the transfer encoding (it
    wins over the length, RFC 9112), so the gateway reserved 100 bytes and then read
    whatever was streamed: one connection under a well-formed wrong signature made it
    hold 400 MB within the body deadline, against the deployed 512 Mi. Now a request that
    names a transfer encoding is answered 411 before a byte of its body is read."""
    with serve(settings, emulator, runner) as served:
        emulator.add_webhook(f"http://127.0.0.1:{served.port}/webhook", SECRET)
        before = _rss()
        conn = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        conn.sendall(
            head(
                {
                    "Content-Length": "100",
                    "Transfer-Encoding": "chunked",
                    "X-GitHub-Event": "issues",
                    "X-GitHub-Delivery": "smuggled",
                    "X-Hub-Signature-256": "sha256=" + "ab" * 32,
                }
            )
        )
        piece = b" " * 2**20
        chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
        sent, peak = 0, before
        with contextlib.suppress(OSError):  # refused: the server stops reading and closes
            while sent < 96:
                conn.sendall(chunk)
                sent += 1
                if sent % 8 == 0:
                    peak = max(peak, _rss())
            conn.sendall(b"0\r\n\r\n")
        answered = _answer(conn)
        conn.close()
        peak = max(peak, _rss())
        held = served.gateway.bodies.peak
        # A real delivery right after is answered as usual.
        emulator.add_issue("Fix it", "x", author="alice", labels=["agent"])
        deliveries = emulator.wait_for_deliveries()

    assert answered == 411
    assert held == 0  # nothing was reserved: refused before the budget was asked
    grown = peak - before
    assert grown < 32 * 2**20, f"resident memory grew {grown / 2**20:.0f} MiB"
    assert deliveries
    assert {d.status for d in deliveries} <= {202, 204}
    assert 202 in {d.status for d in deliveries}


async def test_a_body_longer_than_its_reservation_is_never_read_past_it(gateway: Gateway) -> None:
    """Whatever the HTTP server in front does, the app reads at most the bytes it
    reserved: a body that runs past its `Content-Length` is answered 413 at the first
    chunk that would overrun, and the stream is read no further."""
    chunks = [b"x" * 8] * 100
    asked = 0

    async def receive() -> dict[str, object]:
        nonlocal asked
        asked += 1
        return {"type": "http.request", "body": chunks[asked - 1], "more_body": asked < 100}

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    headers = {
        "content-length": "10",
        "x-github-event": "issues",
        "x-github-delivery": "longer",
        "x-hub-signature-256": "sha256=" + "ab" * 32,
    }
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/webhook",
        "raw_path": b"/webhook",
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in headers.items()],
        "client": ("192.0.2.9", 4000),
        "server": ("127.0.0.1", 8080),
    }
    await build_app(gateway)(scope, receive, send)  # type: ignore[arg-type]

    assert sent[0]["status"] == 413
    assert asked == 2  # 8 bytes fit the 10 reserved, the next 8 would not
    assert gateway.bodies.held == 0
