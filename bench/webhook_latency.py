"""Webhook latency and burst handling of the gateway, over real HTTP on loopback.

Three processes, as in production: GitHub (the emulator, served here), the gateway
(its real app under uvicorn, in a child process, talking to the emulator over HTTP for
trust lookups and the stop check), and the sender of a burst (another child), so none
of them competes with another for the interpreter lock.

1. Latency: a trusted person opens 50 issues; the emulator delivers each signed
   `issues.opened`; the gateway's runner records when each run starts. Delivery sent
   -> run start, median and p95, with the default coalescing window and with none.
2. Burst: 500 signed deliveries posted at once over 64 connections: 5 for each of 100
   issues, then 500 for one issue. Every delivery must be answered 2xx and be covered
   by exactly one run start: none dropped, none in two runs.
3. Attack: 300 slow unauthenticated connections (100 stalled request heads, 100 unsigned
   250 kB bodies sent in part, 100 bodies under a well-formed wrong signature sent in
   part), held open by a child process from four addresses (127.0.0.2-5), while a
   trusted person opens 20 issues: how each connection is answered, how fast the
   gateway drops them, its resident memory (from /proc) before, at peak and after, and
   whether the signed deliveries still start their runs.
4. Byte budget (issue 30): 520 reconnecting loops from four addresses, each announcing
   a body as large as the cap under a well-formed wrong signature and sending it slowly
   (half stall after a quarter), for 20 s, while a trusted person opens 20 issues: what
   they were answered, the gateway's resident memory before, at peak and after, and
   whether the signed deliveries were answered and started their runs. The security
   review's script of this shape held about 720 MB before the byte budget.

`--parts attack,flood` runs only those parts (default: all).

The gateway runs with the configuration it is deployed with (`server_config`).

The runner only records and holds each run 50 ms (a run's own duration is the
agent's). The latency table's answer times are measured by the emulator's sender, which
shares its process with the emulator answering the gateway's lookups; the burst's are
measured by a sender of their own. Run with `uv run --frozen python bench/webhook_latency.py`.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agent_loop_testing import GitHubEmulator, sign_payload

SECRET = "bench-secret"  # noqa: S105 (the emulator's and the gateway's shared test secret)
LATENCY_DELIVERIES = 50
BURST_ISSUES, PER_ISSUE = 100, 5

_GATEWAY = """
import asyncio, json, socket, sys, time
import uvicorn
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from agent_loop_common.settings import load_settings
from agent_loop_common.logs import configure_logging
from agent_loop_gateway import build_app, create_gateway, server_config

configure_logging("console", "WARNING")
starts = []

async def runner(agent, target):
    starts.append([agent, target, time.monotonic()])
    await asyncio.sleep(0.05)

settings = load_settings()
gateway = create_gateway(settings, runner=runner)
app = build_app(gateway)

async def bench(request: Request) -> JSONResponse:
    history = [
        {"target": r.key.target, "deliveries": list(r.deliveries), "refused": r.refused}
        for r in gateway.dispatcher.history
    ]
    return JSONResponse({"quiet": gateway.quiet, "starts": starts, "history": history})

app.router.routes.append(Route("/bench", bench))
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
open(sys.argv[1], "w").write(str(sock.getsockname()[1]))
config = server_config(app, settings, host="127.0.0.1", port=sock.getsockname()[1])
uvicorn.Server(config).run(sockets=[sock])
"""

_CLIENT = r"""
# 64 keep-alive HTTP/1.1 connections over plain asyncio streams: a sender whose own
# overhead does not show up in the gateway's answer times.
import asyncio, json, sys, time
from urllib.parse import urlsplit
url, items_path, out_path = sys.argv[1:4]
items = json.load(open(items_path))
parts = urlsplit(url)
queue = list(enumerate(items))
results = [None] * len(items)

async def worker():
    reader, writer = await asyncio.open_connection(parts.hostname, parts.port)
    while queue:
        index, item = queue.pop(0)
        body = item["body"].encode()
        head = [f"POST {parts.path} HTTP/1.1", f"Host: {parts.netloc}", f"Content-Length: {len(body)}"]
        head += [f"{k}: {v}" for k, v in item["headers"].items()]
        start = time.monotonic()
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()
        status = int((await reader.readline()).split()[1])
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        await reader.readexactly(length)
        results[index] = [status, time.monotonic() - start]
    writer.close()

async def main():
    await asyncio.gather(*(worker() for _ in range(64)))

asyncio.run(main())
json.dump(results, open(out_path, "w"))
"""


_ATTACK = r"""
# Slow unauthenticated connections: stalled request heads, unsigned bodies and bodies
# under a well-formed but wrong signature, each sent in part and then left hanging.
# Records when the gateway answered (status) and when it closed each connection.
import asyncio, json, sys, time
host, port, per_kind, out_path, ready_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
ADDRESSES = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
BODY = 250_000

def head(extra):
    lines = ["POST /webhook HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {BODY}",
             "X-GitHub-Event: issues", "X-GitHub-Delivery: attack"] + extra
    return ("\r\n".join(lines) + "\r\n\r\n").encode()

KINDS = {
    "stalled head": b"POST /webhook HTTP/1.1\r\nHost: gate",
    "unsigned body": head([]) + b"{" + b" " * 200_000,
    "wrong signature, body unfinished": head(["X-Hub-Signature-256: sha256=" + "ab" * 32]) + b"{" + b" " * 200_000,
}

async def one(kind, start, index):
    source = ADDRESSES[index % len(ADDRESSES)]
    reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
    writer.write(KINDS[kind])
    try:
        await writer.drain()
    except ConnectionError:
        pass
    return reader, writer, time.monotonic()

async def main():
    start = time.monotonic()
    conns = []
    for kind in KINDS:
        for index in range(per_kind):
            conns.append((kind, *(await one(kind, start, index))))
    open(ready_path, "w").write("ready")
    async def watch(kind, reader, writer, opened):
        status, data = None, b""
        try:
            while chunk := await reader.read(65536):
                data += chunk
        except ConnectionError:
            pass
        if data.startswith(b"HTTP/1.1 "):
            status = int(data.split(b" ", 2)[1])
        writer.close()
        return [kind, status, time.monotonic() - opened]
    results = await asyncio.wait_for(asyncio.gather(*(watch(*c) for c in conns)), timeout=120)
    json.dump({"opened": time.monotonic() - start, "results": results}, open(out_path, "w"))

asyncio.run(main())
"""


_FLOOD = r"""
# The byte-budget attack: reconnecting loops from a few addresses, each announcing a body
# as large as the cap under a well-formed wrong signature and sending it slowly; half
# stall after a quarter of it. Counts what the gateway answered.
import asyncio, json, sys, time
from collections import Counter
host, port, loops, seconds, size, out_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
ADDRESSES = [f"127.0.0.{2 + i}" for i in range(int(sys.argv[7]))]
CHUNK = 16 * 1024
answers, connections = Counter(), [0]
stop = time.monotonic() + seconds

async def loop(index):
    source, stalls = ADDRESSES[index % len(ADDRESSES)], index % 2 == 0
    while time.monotonic() < stop:
        writer = answer = None
        try:
            reader, writer = await asyncio.open_connection(host, port, local_addr=(source, 0))
            connections[0] += 1
            head = ["POST /webhook HTTP/1.1", f"Host: {host}", f"Content-Length: {size}",
                    "X-GitHub-Event: issues", f"X-GitHub-Delivery: flood-{connections[0]}",
                    "X-Hub-Signature-256: sha256=" + "ab" * 32]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            answer = asyncio.ensure_future(reader.read(64))
            sent, limit = 0, size // 4 if stalls else size
            while sent < limit and not answer.done() and time.monotonic() < stop:
                writer.write(b" " * min(CHUNK, limit - sent))
                await writer.drain()
                sent += CHUNK
                await asyncio.sleep(0.02)
            data = await asyncio.wait_for(answer, timeout=30)
            answers[int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else "closed"] += 1
        except (OSError, TimeoutError):
            answers["reset"] += 1
            await asyncio.sleep(0.01)
        finally:
            if answer is not None and not answer.done():
                answer.cancel()
            elif answer is not None and not answer.cancelled():
                answer.exception()
            if writer is not None:
                writer.close()

async def main():
    await asyncio.gather(*(loop(i) for i in range(loops)))

asyncio.run(main())
json.dump({"connections": connections[0], "answers": {str(k): v for k, v in answers.items()}}, open(out_path, "w"))
"""


@dataclass
class Gateway:
    url: str
    pid: int = 0

    def rss_mb(self) -> float:
        """The gateway process's resident memory, from /proc."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def state(self) -> dict[str, Any]:
        data: dict[str, Any] = httpx.get(f"{self.url}/bench", trust_env=False).json()
        return data

    def settled(self, timeout: float = 120.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while not (state := self.state())["quiet"]:
            if time.monotonic() > deadline:
                raise TimeoutError("the gateway did not settle")
            time.sleep(0.05)
        return state


@contextmanager
def gateway_process(emu: GitHubEmulator, api: str, window: float | None) -> Iterator[Gateway]:
    """The gateway in its own process, acting against the emulator at `api`."""
    with tempfile.TemporaryDirectory(prefix="bench-webhooks-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENT_LOOP_"))}
        env.update(
            AGENT_LOOP_REPO=emu.full_name,
            GITHUB_TOKEN=emu.bot_token,
            GITHUB_API_URL=api,
            AGENT_LOOP_BOT_LOGIN=emu.bot,
            AGENT_LOOP_WEBHOOK_SECRET=SECRET,
            AGENT_LOOP_HOME=tmp,
            AGENT_LOOP_LOG_LEVEL="WARNING",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        if window is not None:
            env["AGENT_LOOP_WEBHOOK_COALESCE_SECONDS"] = str(window)
        port_file = Path(tmp) / "port"
        child = subprocess.Popen(
            [sys.executable, "-c", _GATEWAY, str(port_file)], env=env, stderr=subprocess.DEVNULL
        )
        try:
            deadline = time.monotonic() + 60
            while True:
                if child.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the gateway process did not start")
                if port_file.exists() and port_file.read_text():
                    url = f"http://127.0.0.1:{port_file.read_text()}"
                    try:
                        if httpx.get(f"{url}/healthz", trust_env=False).status_code == 200:
                            break
                    except httpx.TransportError:
                        pass
                time.sleep(0.05)
            yield Gateway(url, child.pid)
        finally:
            child.terminate()
            child.wait(timeout=10)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def latency(window: float | None) -> tuple[str, list[float], float]:
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    with emu.serve() as api, gateway_process(emu, api, window) as gateway:
        emu.add_webhook(f"{gateway.url}/webhook", SECRET, events=["issues"])
        for n in range(LATENCY_DELIVERIES):
            emu.add_issue(f"Issue {n}", author="alice")
            time.sleep(0.02)  # people file issues one by one, not in one millisecond
        deliveries = emu.wait_for_deliveries()
        state = gateway.settled()
    started = {target: at for _, target, at in state["starts"]}
    waits = [started[d.payload["issue"]["number"]] - d.sent_at for d in deliveries]
    label = "1 s window (default)" if window is None else f"{window:g} s window"
    return label, waits, max(d.seconds for d in deliveries)


@dataclass
class Burst:
    label: str
    sent: int
    answered: int
    statuses: Counter[int]
    slowest_answer: float
    p95_answer: float
    runs: int
    targets: int
    dropped: int
    duplicated: int
    seconds: float


def _items(template: dict[str, Any], targets: list[int], per_target: int) -> list[dict[str, Any]]:
    """Signed deliveries, each target's `per_target` in a row (one action's events)."""
    out: list[dict[str, Any]] = []
    for number in targets:
        for edit in range(per_target):
            payload = json.loads(json.dumps(template))
            payload["issue"]["number"] = number
            payload["issue"]["title"] = f"Issue {number} (event {edit})"  # distinct bodies
            body = json.dumps(payload)
            out.append(
                {
                    "body": body,
                    "headers": {
                        "Content-Type": "application/json",
                        "X-GitHub-Event": "issues",
                        "X-GitHub-Delivery": str(uuid.uuid4()),
                        "X-Hub-Signature-256": sign_payload(SECRET, body.encode()),
                    },
                }
            )
    return out


def _post_all(url: str, items: list[dict[str, Any]]) -> list[tuple[int, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        items_path, out_path = Path(tmp) / "items.json", Path(tmp) / "out.json"
        items_path.write_text(json.dumps(items))
        subprocess.run(
            [sys.executable, "-c", _CLIENT, url, str(items_path), str(out_path)], check=True
        )
        return [(int(s), float(t)) for s, t in json.loads(out_path.read_text())]


def burst(label: str, targets: int, per_target: int) -> Burst:
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    numbers = [emu.add_issue(f"Issue {n}", author="alice") for n in range(targets)]
    with emu.serve() as api, gateway_process(emu, api, None) as gateway:
        emu.add_webhook(f"{gateway.url}/webhook", SECRET, events=["issues"])
        emu.add_issue("the template delivery", author="alice")
        template = emu.wait_for_deliveries()[0].payload
        gateway.settled()
        items = _items(template, numbers, per_target)
        start = time.monotonic()
        answers = _post_all(f"{gateway.url}/webhook", items)
        state = gateway.settled()
        seconds = time.monotonic() - start
    wanted = set(numbers)
    history = [r for r in state["history"] if r["target"] in wanted]
    covered = Counter(d for run in history for d in run["deliveries"])
    sent = [i["headers"]["X-GitHub-Delivery"] for i in items]
    times = [t for _, t in answers]
    return Burst(
        label=label,
        sent=len(items),
        answered=sum(1 for s, _ in answers if 200 <= s < 300),
        statuses=Counter(s for s, _ in answers),
        slowest_answer=max(times),
        p95_answer=_percentile(times, 0.95),
        runs=sum(1 for _, target, _ in state["starts"] if target in wanted),
        targets=len({r["target"] for r in history if r["refused"] is None}),
        dropped=sum(1 for d in sent if covered[d] == 0),
        duplicated=sum(1 for d in sent if covered[d] > 1),
        seconds=seconds,
    )


ATTACK_PER_KIND = 100
ATTACK_SIGNED = 20


@dataclass
class Attack:
    connections: int
    kinds: list[tuple[str, str, float, float]]
    """Per kind of connection: what the gateway answered, closed after (median, max)."""
    dropped_max: float
    rss_before: float
    rss_peak: float
    rss_after: float
    signed_answered: int
    signed_runs: int
    signed_p95_wait: float


def attack() -> Attack:
    """300 slow unauthenticated connections, while a trusted person opens issues."""
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    with emu.serve() as api, gateway_process(emu, api, None) as gateway:
        emu.add_webhook(f"{gateway.url}/webhook", SECRET, events=["issues"])
        gateway.settled()
        before = gateway.rss_mb()
        host, port = gateway.url.removeprefix("http://").split(":")
        with tempfile.TemporaryDirectory() as tmp:
            out, ready = Path(tmp) / "out.json", Path(tmp) / "ready"
            child = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _ATTACK,
                    host,
                    port,
                    str(ATTACK_PER_KIND),
                    str(out),
                    str(ready),
                ]
            )
            peak = before
            deadline = time.monotonic() + 60
            while not ready.exists() and child.poll() is None and time.monotonic() < deadline:
                peak = max(peak, gateway.rss_mb())
                time.sleep(0.02)
            numbers = []
            for n in range(ATTACK_SIGNED):  # signed deliveries while the attack holds on
                numbers.append(emu.add_issue(f"During the attack {n}", author="alice"))
                peak = max(peak, gateway.rss_mb())
                time.sleep(0.05)
            while child.poll() is None and time.monotonic() < deadline + 120:
                peak = max(peak, gateway.rss_mb())
                time.sleep(0.05)
            data = json.loads(out.read_text())
        deliveries = emu.wait_for_deliveries()
        state = gateway.settled()
        after = gateway.rss_mb()
    started = {target: at for _, target, at in state["starts"]}
    waits = [
        started[d.payload["issue"]["number"]] - d.sent_at
        for d in deliveries
        if d.payload["issue"]["number"] in started
    ]
    closes = [at for _, _, at in data["results"]]
    return Attack(
        connections=len(data["results"]),
        kinds=[
            (
                kind,
                ", ".join(
                    f"{'closed unanswered' if st is None else st} x{n}"
                    for st, n in Counter(st for k, st, _ in data["results"] if k == kind).items()
                ),
                statistics.median(at for k, _, at in data["results"] if k == kind),
                max(at for k, _, at in data["results"] if k == kind),
            )
            for kind in dict.fromkeys(k for k, _, _ in data["results"])
        ],
        dropped_max=max(closes),
        rss_before=before,
        rss_peak=peak,
        rss_after=after,
        signed_answered=sum(1 for d in deliveries if d.status == 202),
        signed_runs=sum(1 for n in numbers if n in started),
        signed_p95_wait=_percentile(waits, 0.95) if waits else float("nan"),
    )


FLOOD_LOOPS = 520
FLOOD_SECONDS = 20.0


@dataclass
class Flood:
    addresses: int
    connections: int
    answers: dict[str, int]
    rss_before: float
    rss_peak: float
    rss_after: float
    signed_answered: int
    signed_statuses: Counter[int | None]
    signed_runs: int


def flood(addresses: int) -> Flood:
    """520 reconnecting loops of cap-sized bodies under a wrong signature, 20 s."""
    emu = GitHubEmulator()
    emu.add_user("alice", permission="write")
    with emu.serve() as api, gateway_process(emu, api, None) as gateway:
        emu.add_webhook(f"{gateway.url}/webhook", SECRET, events=["issues"])
        gateway.settled()
        before = peak = gateway.rss_mb()
        host, port = gateway.url.removeprefix("http://").split(":")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out.json"
            argv = [host, port, str(FLOOD_LOOPS), str(FLOOD_SECONDS), "262144", str(out)]
            argv.append(str(addresses))
            child = subprocess.Popen([sys.executable, "-c", _FLOOD, *argv])
            time.sleep(2.0)  # the loops are under way
            numbers = []
            for n in range(ATTACK_SIGNED):
                numbers.append(emu.add_issue(f"During the flood {n}", author="alice"))
                for _ in range(10):
                    peak = max(peak, gateway.rss_mb())
                    time.sleep(0.05)
            while child.poll() is None:
                peak = max(peak, gateway.rss_mb())
                time.sleep(0.05)
            data = json.loads(out.read_text())
        deliveries = emu.wait_for_deliveries()
        state = gateway.settled()
        after = gateway.rss_mb()
    started = {target for _, target, _ in state["starts"]}
    return Flood(
        addresses=addresses,
        connections=data["connections"],
        answers=data["answers"],
        rss_before=before,
        rss_peak=peak,
        rss_after=after,
        signed_answered=sum(1 for d in deliveries if d.status == 202),
        signed_statuses=Counter(d.status for d in deliveries),
        signed_runs=sum(1 for n in numbers if n in started),
    )


def main() -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Webhook latency, bursts and attacks.")
    parser.add_argument("--parts", default="latency,burst,attack,flood")
    parts = set(parser.parse_args().parts.split(","))
    failed = False
    if "latency" in parts:
        _print_latency()
    if "burst" in parts:
        failed |= _print_bursts()
    if "attack" in parts:
        failed |= _print_attack()
    if "flood" in parts:
        failed |= _print_flood()
    return 1 if failed else 0


def _print_flood() -> bool:
    floods = [flood(4), flood(16)]
    print(
        f"\n### Byte budget: {FLOOD_LOOPS} reconnecting loops, cap-sized bodies under a "
        f"wrong signature, {FLOOD_SECONDS:g} s; {ATTACK_SIGNED} signed deliveries "
        "meanwhile\n"
    )
    print(
        "| attacking addresses | attack connections | answered | gateway RSS before / peak "
        "/ after | signed deliveries answered | their runs started |"
    )
    print("|---:|---:|---|---:|---|---:|")
    for f in floods:
        answers = ", ".join(f"{k}: {v}" for k, v in sorted(f.answers.items()))
        signed = ", ".join(f"{k}: {v}" for k, v in sorted(f.signed_statuses.items(), key=str))
        print(
            f"| {f.addresses} | {f.connections} | {answers} | {f.rss_before:.0f} / "
            f"{f.rss_peak:.0f} / {f.rss_after:.0f} MB | {signed} | "
            f"{f.signed_runs}/{ATTACK_SIGNED} |"
        )
    print(
        "\n429: the address's share (AGENT_LOOP_WEBHOOK_BUFFER_BYTES_PER_SOURCE) was taken; "
        "503: the whole budget (AGENT_LOOP_WEBHOOK_BUFFER_BYTES); 401: a finished body "
        "under the wrong signature; 408: a stalled body at the deadline; closed/reset: "
        "refused as it opened (AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS_PER_SOURCE) or closed "
        "after an answer. With fewer addresses than the budget has shares (8), GitHub's "
        "deliveries still fit; with more, they may be refused 503 too, and memory stays "
        "bounded either way."
    )
    return floods[0].signed_runs != ATTACK_SIGNED


def _print_latency() -> None:
    rows = [latency(None), latency(0.0)]
    print(f"### Delivery sent -> run start ({LATENCY_DELIVERIES} deliveries, one new issue each)\n")
    print("| coalescing | median | p95 | max | slowest answer (as the emulator saw it) |")
    print("|---|---:|---:|---:|---:|")
    for label, waits, answer in rows:
        print(
            f"| {label} | {statistics.median(waits):.3f} s | {_percentile(waits, 0.95):.3f} s "
            f"| {max(waits):.3f} s | {answer * 1000:.0f} ms |"
        )


def _print_bursts() -> bool:
    bursts = [
        burst(f"{BURST_ISSUES} issues x {PER_ISSUE}", BURST_ISSUES, PER_ISSUE),
        burst("1 issue x 500", 1, BURST_ISSUES * PER_ISSUE),
    ]
    print("\n### A burst of 500 deliveries posted at once (64 connections)\n")
    print(
        "| burst | answered 2xx | statuses | answer p95 / max | runs started | targets run "
        "| dropped | duplicated | until quiet |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    failed = False
    for b in bursts:
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(b.statuses.items()))
        print(
            f"| {b.label} | {b.answered}/{b.sent} | {codes} "
            f"| {b.p95_answer * 1000:.0f} / {b.slowest_answer * 1000:.0f} ms "
            f"| {b.runs} | {b.targets} | {b.dropped} | {b.duplicated} | {b.seconds:.1f} s |"
        )
        failed |= b.answered != b.sent or b.dropped > 0 or b.duplicated > 0
    print(
        "\ndropped: deliveries no run covered; duplicated: deliveries covered by two runs. "
        "A target gets a second run only for deliveries that arrived after its first run "
        "had started (news that run may not have read)."
    )
    return failed


def _print_attack() -> bool:
    a = attack()
    print(
        f"\n### Attack: {a.connections} slow unauthenticated connections "
        f"({ATTACK_PER_KIND} of each kind, from 4 addresses), {ATTACK_SIGNED} signed "
        "deliveries meanwhile\n"
    )
    print(
        "| connections | answered | closed by the gateway after (median / max, from its opening) |"
    )
    print("|---|---|---:|")
    for kind, answered, median, slowest in a.kinds:
        print(f"| {kind} | {answered} | {median:.1f} / {slowest:.1f} s |")
    print(
        f"\nGateway resident memory before / peak / after: {a.rss_before:.0f} / "
        f"{a.rss_peak:.0f} / {a.rss_after:.0f} MB. Signed deliveries during the attack: "
        f"{a.signed_answered}/{ATTACK_SIGNED} answered 202, {a.signed_runs}/{ATTACK_SIGNED} "
        f"runs started, delivery -> run start p95 {a.signed_p95_wait:.3f} s."
    )
    print(
        "\nDefaults: AGENT_LOOP_WEBHOOK_READ_TIMEOUT_SECONDS=10 (a request head, then its "
        "body), AGENT_LOOP_WEBHOOK_MAX_CONNECTIONS=1024 (128 per address), body cap "
        "256 KiB, byte budget 64 MiB (8 MiB per address). 'closed': dropped without an "
        "answer (its head never completed, or its address's connections were full)."
    )
    return a.signed_runs != ATTACK_SIGNED or a.dropped_max > 30


if __name__ == "__main__":
    sys.exit(main())
