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
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import FrameType

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
        run = await loop.run_in_executor(self._pool, self._finished, agent, target)
        if run.error is not None:
            raise RuntimeError(run.error)

    def _finished(self, agent: AgentName, target: int | None) -> LocalRun:
        """Run, and note the run as ended from its own thread: a gateway shutting down
        no longer runs the event loop the caller awaits it on."""
        run = self._run(agent, target)
        with self._cond:
            self.finished.append(run)
            self._cond.notify_all()
        return run

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

    def close(self, *, wait: bool = False) -> None:
        """Stop taking runs (queued ones are dropped); with `wait`, until the run in
        progress has ended in its thread (a stop request ends it at its next safe point)."""
        self._pool.shutdown(wait=wait, cancel_futures=True)


def local_app(settings: Settings, runner: LocalRunner | None = None) -> Starlette:
    """The gateway app with a `LocalRunner` (raises `ValueError` without a webhook secret)."""
    return create_app(settings, runner=runner or LocalRunner(settings))


def serve(settings: Settings, *, host: str = "127.0.0.1", port: int = 8080) -> int:
    """Serve the gateway until interrupted (uvicorn; logs each delivery and each run).

    Ctrl-C or SIGTERM stops the gateway as it stops `agent-loop run`: uvicorn stops
    taking deliveries, and the run in progress (in the runner's thread) gets the stop
    request at once (`request_stop`), so it ends at its next safe point, its claim
    released and the run recorded `interrupted`; the gateway waits for that, says what
    it left, and exits 128 + the signal's number (0 when it was not signalled). Before,
    uvicorn's own handler shut the server down while the run went on, and the process
    then died under it (a second signal, or SIGTERM re-raised): its claim stayed for its
    whole TTL and no record was written. A second signal while it waits exits at once,
    naming the claims that may be left (`stop_on_signals`).

    Returns:
        The exit code.
    """
    import uvicorn

    from agent_loop.interrupted import farewell
    from agent_loop_common.runtime import (
        request_stop,
        reset_stop,
        stop_on_signals,
        stop_requested,
    )

    runner = LocalRunner(settings)
    ended_before_stop: list[int] = []

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            # Not uvicorn's own handler: it would re-raise the signal once the server
            # stopped, killing the process (SIGTERM) while the run still works.
            if request_stop(sig):
                ended_before_stop.append(len(runner.finished))
                _log.info("serve.stopping", signal=signal.Signals(sig).name)
            if self.should_exit and sig == signal.SIGINT:
                self.force_exit = True
            self.should_exit = True

    reset_stop()
    app = local_app(settings, runner)
    _log.info("serve.listening", url=f"http://{host}:{port}/webhook", repo=settings.repo)
    try:
        Server(server_config(app, settings, host=host, port=port)).run()
    finally:
        with stop_on_signals():  # a second signal while the run stops exits at once
            runner.close(wait=True)
    interrupt = stop_requested()
    if interrupt is None:
        return 0
    first = ended_before_stop[0] if ended_before_stop else len(runner.finished)
    cut = [run.summary for run in runner.finished[first:] if run.summary]
    for summary in cut:
        print(farewell(summary, interrupt), file=sys.stderr, flush=True)
    if not cut:
        print(
            f"agent-loop serve: {interrupt.name}: stopped; no run was in progress.",
            file=sys.stderr,
            flush=True,
        )
    return interrupt.exit_code
