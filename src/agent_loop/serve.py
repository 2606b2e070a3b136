"""`agent-loop serve`: the gateway on this machine, running each run in Flyte local mode.

The same app as the deployed gateway (`agent_loop_gateway`), with a runner that calls
`run_agent_once(agent, settings, target=N)`: exactly `agent-loop run <agent> --issue N`
or `--pr N`, memory under `AGENT_LOOP_HOME`. Flyte's local mode is synchronous and
initializes process-global state, so every run goes through one worker thread, one at
a time; the gateway's dispatcher still coalesces deliveries per target and keeps one
run per target, and the event loop keeps answering GitHub while a run works.

Point a webhook at it with a tunnel (`smee`, `ngrok`, `cloudflared`) or, offline, at the
emulator: `GitHubEmulator.add_webhook(f"{url}/webhook", secret)`. See docs/events.md.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import structlog
from starlette.applications import Starlette

from agent_loop.agents import AgentName, run_agent_once
from agent_loop_common.runtime import TickSummary
from agent_loop_common.settings import Settings
from agent_loop_gateway import create_app, server_config

__all__ = ["LocalRun", "LocalRunner", "local_app", "serve"]

_log = structlog.get_logger(__name__)

RunOnce = Callable[..., TickSummary]
"""`run_agent_once`'s shape: `(agent, settings, *, target) -> summary`."""


@dataclass(frozen=True)
class LocalRun:
    """One run the local runner finished (or that failed)."""

    agent: AgentName
    target: int | None
    summary: TickSummary | None
    error: str | None
    seconds: float


class LocalRunner:
    """A gateway `Runner` that runs ticks in Flyte local mode in one worker thread."""

    def __init__(self, settings: Settings, *, run_once: RunOnce = run_agent_once) -> None:
        self._settings = settings
        self._run_once = run_once
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agent-loop-run")
        self._cond = threading.Condition()
        self.finished: list[LocalRun] = []
        """Every run so far, in the order they ended."""

    async def __call__(self, agent: AgentName, target: int | None) -> None:
        loop = asyncio.get_running_loop()
        run = await loop.run_in_executor(self._pool, self._run, agent, target)
        with self._cond:
            self.finished.append(run)
            self._cond.notify_all()
        if run.error is not None:
            raise RuntimeError(run.error)

    def _run(self, agent: AgentName, target: int | None) -> LocalRun:
        start = time.perf_counter()
        _log.info("serve.run", agent=agent, target=target)
        try:
            summary = self._run_once(agent, self._settings, target=target)
        except Exception as exc:
            return LocalRun(
                agent, target, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - start
            )
        _log.info(
            "serve.run_done",
            agent=agent,
            target=target,
            outcome=summary.outcome,
            links=summary.links,
            run_id=summary.run_id or None,
        )
        return LocalRun(agent, target, summary, None, time.perf_counter() - start)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[LocalRun]:
        """Block until `count` runs ended (from any thread); the runs so far."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self.finished) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"{len(self.finished)} of {count} runs ended")
                self._cond.wait(left)
            return list(self.finished)

    def close(self) -> None:
        """Stop taking runs; a run in progress finishes in its thread."""
        self._pool.shutdown(wait=False, cancel_futures=True)


def local_app(settings: Settings, runner: LocalRunner | None = None) -> Starlette:
    """The gateway app with a `LocalRunner` (raises `ValueError` without a webhook secret)."""
    return create_app(settings, runner=runner or LocalRunner(settings))


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Serve the gateway until interrupted (uvicorn; logs each delivery and each run)."""
    import uvicorn

    runner = LocalRunner(settings)
    app = local_app(settings, runner)
    _log.info("serve.listening", url=f"http://{host}:{port}/webhook", repo=settings.repo)
    try:
        uvicorn.Server(server_config(app, settings, host=host, port=port)).run()
    finally:
        runner.close()
