"""Deliveries become runs: coalesced per target, one at a time per target, off the request.

```text
submit(builder #7)  ─► slot(builder #7): deliveries [d1]   ── window ──► run 1 (d1, d2, d3)
submit(builder #7)  ─►                   deliveries [d1, d2]
submit(builder #7)  ─►                   deliveries [d1, d2, d3]
                         (while run 1 runs)  [d4]           ── window ──► run 2 (d4)
```

The first delivery for a target (an agent and its issue, PR, or none for the
distiller) opens its slot and a driver task that waits `window` seconds, then starts one
run for every delivery collected so far. Deliveries that arrive while that run is going
are kept for one follow-up run after it (they may carry news the running one did not
see); so each delivery is covered by exactly one run, and a target never has two runs
from here at once. Different targets run side by side; the runner decides how many
really execute at a time (the local runner: one). A `gate` may veto a run just before
it starts (a trusted `/agent-loop stop` on the thread). A failing run is logged, never
raised: the schedule retries what a webhook could not.

`submit` is synchronous and does no I/O, so the request that calls it answers at once.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import structlog

from agent_loop_gateway._clock import Clock
from agent_loop_gateway._events import AgentName

__all__ = ["DispatchStats", "Dispatcher", "Gate", "RunKey", "RunStart", "Runner"]

_log = structlog.get_logger(__name__)


class Runner(Protocol):
    """Starts one run of `agent` on `target` and returns when it is done (or launched)."""

    def __call__(self, agent: AgentName, target: int | None) -> Awaitable[None]: ...


Gate = Callable[[AgentName, int | None], Awaitable[str | None]]
"""Just before a run: a reason not to start it, or None to go ahead."""


@dataclass(frozen=True, slots=True)
class RunKey:
    agent: AgentName
    target: int | None

    def __str__(self) -> str:
        return self.agent if self.target is None else f"{self.agent} #{self.target}"


@dataclass(frozen=True, slots=True)
class RunStart:
    """One run the dispatcher started (or the gate refused), for logs, tests and benches."""

    key: RunKey
    deliveries: tuple[str, ...]
    """Every delivery this run answers."""
    first_seen: float
    """Monotonic time the first of them was submitted."""
    started: float
    """Monotonic time the run started (or was refused)."""
    refused: str | None = None


@dataclass
class DispatchStats:
    submitted: int = 0
    coalesced: int = 0
    """Deliveries that joined a run already waiting to start."""
    started: int = 0
    refused: int = 0
    failed: int = 0


@dataclass
class _Slot:
    deliveries: list[str] = field(default_factory=list[str])
    first_seen: float = 0.0
    running: bool = False
    driver: asyncio.Task[None] | None = None


class Dispatcher:
    """Coalescing, per-target serialising front of a `Runner` (see the module docstring)."""

    def __init__(
        self,
        runner: Runner,
        *,
        clock: Clock,
        window: float = 1.0,
        gate: Gate | None = None,
        history: int = 10_000,
    ) -> None:
        self._runner = runner
        self._clock = clock
        self._window = window
        self._gate = gate
        self._slots: dict[RunKey, _Slot] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self.stats = DispatchStats()
        self.history: deque[RunStart] = deque(maxlen=history)
        """Recent runs, oldest first."""

    def submit(
        self, agent: AgentName, target: int | None, delivery: str
    ) -> Literal["queued", "coalesced"]:
        """Ask for a run of `agent` on `target` for `delivery`; never blocks."""
        key = RunKey(agent, target)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
        self.stats.submitted += 1
        joined = bool(slot.deliveries)
        if not slot.deliveries:
            slot.first_seen = self._clock.monotonic()
        slot.deliveries.append(delivery)
        if slot.driver is None:
            self._idle.clear()
            slot.driver = asyncio.get_running_loop().create_task(
                self._drive(key, slot), name=f"gateway-run-{key}"
            )
        if joined:
            self.stats.coalesced += 1
            return "coalesced"
        return "queued"

    @property
    def busy(self) -> bool:
        return bool(self._slots)

    async def idle(self) -> None:
        """Return once no run is waiting or running."""
        await self._idle.wait()

    async def aclose(self) -> None:
        """Cancel waiting and running drivers (a shutdown; the schedule catches up)."""
        drivers = [s.driver for s in self._slots.values() if s.driver is not None]
        for driver in drivers:
            driver.cancel()
        await asyncio.gather(*drivers, return_exceptions=True)
        dropped = sum(len(s.deliveries) for s in self._slots.values())
        if dropped:
            _log.info("gateway.dispatch_closed", dropped_deliveries=dropped)
        self._slots.clear()
        self._idle.set()

    async def _drive(self, key: RunKey, slot: _Slot) -> None:
        try:
            while slot.deliveries:
                await self._clock.sleep(self._window)
                batch, first = tuple(slot.deliveries), slot.first_seen
                slot.deliveries = []
                slot.running = True
                try:
                    await self._run(key, batch, first)
                finally:
                    slot.running = False
        finally:
            slot.driver = None
            if not slot.deliveries:
                self._slots.pop(key, None)
            if not self._slots:
                self._idle.set()

    async def _check_gate(self, key: RunKey) -> str | None:
        if self._gate is None:
            return None
        try:
            return await self._gate(key.agent, key.target)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # fail closed: the schedule will try again
            return f"could not check the thread: {type(exc).__name__}: {exc}"

    async def _run(self, key: RunKey, batch: tuple[str, ...], first: float) -> None:
        refused = await self._check_gate(key)
        start = RunStart(key, batch, first, self._clock.monotonic(), refused)
        self.history.append(start)
        waited_ms = round((start.started - first) * 1000)
        if refused is not None:
            self.stats.refused += 1
            _log.info("gateway.run_refused", run=str(key), reason=refused, deliveries=len(batch))
            return
        self.stats.started += 1
        _log.info(
            "gateway.run_start",
            run=str(key),
            deliveries=len(batch),
            first_delivery=batch[0],
            waited_ms=waited_ms,
        )
        try:
            await self._runner(key.agent, key.target)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stats.failed += 1
            _log.warning("gateway.run_failed", run=str(key), error=f"{type(exc).__name__}: {exc}")
            return
        _log.info("gateway.run_done", run=str(key))
