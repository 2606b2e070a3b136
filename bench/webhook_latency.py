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
from agent_loop_gateway import build_app, create_gateway

configure_logging("console", "WARNING")
starts = []

async def runner(agent, target):
    starts.append([agent, target, time.monotonic()])
    await asyncio.sleep(0.05)

gateway = create_gateway(load_settings(), runner=runner)
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
config = uvicorn.Config(app, lifespan="on", log_level="warning", access_log=False)
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


@dataclass
class Gateway:
    url: str

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
            yield Gateway(url)
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


def main() -> int:
    rows = [latency(None), latency(0.0)]
    bursts = [
        burst(f"{BURST_ISSUES} issues x {PER_ISSUE}", BURST_ISSUES, PER_ISSUE),
        burst("1 issue x 500", 1, BURST_ISSUES * PER_ISSUE),
    ]
    print(f"### Delivery sent -> run start ({LATENCY_DELIVERIES} deliveries, one new issue each)\n")
    print("| coalescing | median | p95 | max | slowest answer (as the emulator saw it) |")
    print("|---|---:|---:|---:|---:|")
    for label, waits, answer in rows:
        print(
            f"| {label} | {statistics.median(waits):.3f} s | {_percentile(waits, 0.95):.3f} s "
            f"| {max(waits):.3f} s | {answer * 1000:.0f} ms |"
        )
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
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
