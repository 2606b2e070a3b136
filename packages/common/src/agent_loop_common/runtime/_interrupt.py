"""Stopping a tick at its next safe point when the operator (or the cluster) says so.

Ctrl-C used to raise `KeyboardInterrupt` in the CLI's thread, above the code that
releases the claim and records the run, while the tick went on in Flyte's loop thread
until the process died under it: the claim stayed for its whole TTL, no record was
written, and a rerun was refused as "claimed". A pod's SIGTERM did the same, or nothing
at all (PID 1 ignores a signal it has no handler for).

Here a signal becomes a *stop request* instead of an exception:

- `stop_on_signals()` installs SIGINT and SIGTERM handlers in the main thread for the
  duration of a tick (the CLI, `python -m agent_loop_<role>`, a task on a cluster).
  The first signal calls `request_stop`; a second one exits at once (`os._exit`), after
  saying what may be left behind (`left_behind`: the claims still held). The same
  signal again within `REPEAT_WINDOW_SECONDS` of the first is not a second one: it is
  the first delivered twice, as `uv run` does (it forwards a signal its process group
  already received to its child, 200 ms later, when no terminal delivered it), so a
  single `kill -INT -PGID` of `uv run agent-loop run ...` must not exit at once.
- `request_stop` records the request (`stop_requested`) and hands it to every open
  `StopGate`, thread-safely, on its own event loop.
- `run_scoped` opens one `StopGate` around a pipeline body. The gate cancels the body's
  task where it waits, unless the body is inside a section that must not be cut
  (`StopGate.hold`: a claim being written) or past its point of no return
  (`StopGate.commit`: the first durable write; a push and its record are never split).
  A held request is delivered when the hold ends; a committing body runs to its end.
  `run_scoped` then releases the claim and records the run as `interrupted`.

Nothing here imports Flyte or githubkit: the idle tick's lean path may use it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType

__all__ = [
    "REPEAT_WINDOW_SECONDS",
    "Interrupt",
    "StopGate",
    "left_behind",
    "open_gate",
    "request_stop",
    "reset_stop",
    "stop_on_signals",
    "stop_requested",
]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)

REPEAT_WINDOW_SECONDS = 1.0
"""The same signal again this soon after the first is the first delivered twice (a
wrapper forwarding what its process group already got: `uv run` does, 200 ms later),
not an operator's second Ctrl-C; a person's second press comes later, or is another
signal."""


@dataclass(frozen=True, slots=True)
class Interrupt:
    """A stop the operator asked for, and the signal that carried it."""

    signum: int
    """The signal number (`signal.SIGINT`, `signal.SIGTERM`)."""

    @property
    def name(self) -> str:
        """`SIGINT`, `SIGTERM`."""
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by the signal: 128 + its number
        (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


@dataclass(eq=False)
class StopGate:
    """Where one run's body may be stopped: it is cancelled where it waits, never
    inside a `hold` and never once it `commit`s.

    Every method but `request` runs on the body's own task; `request` runs on the same
    event loop (scheduled there by `request_stop`), so no state here needs a lock.
    """

    task: asyncio.Task[object]
    """The task running the body."""
    loop: asyncio.AbstractEventLoop
    """Its event loop."""
    holding: Callable[[], list[str]]
    """What the run holds now, for people (`left_behind`), e.g. `issue #5 (run R)`."""
    interrupt: Interrupt | None = None
    """The stop request this gate received (`None`: none)."""
    cancels: int = 0
    """How many times the gate cancelled the task (`run_scoped` takes them back)."""
    committing: bool = False
    """The body is past its point of no return: it runs to its end."""
    _holds: int = 0
    _open: bool = field(default=True, repr=False)

    @property
    def stopped(self) -> bool:
        """Whether a stop request reached this gate."""
        return self.interrupt is not None

    def request(self, interrupt: Interrupt) -> None:
        """Take a stop request (on the loop): cancel the body where it waits, now, if it
        is not holding or committing; otherwise when its hold ends, or never."""
        if self.interrupt is None:
            self.interrupt = interrupt
        if self._open and not self._holds and not self.committing and not self.cancels:
            self.cancels += 1
            self.task.cancel(f"interrupted by {interrupt.name}")

    @contextmanager
    def hold(self) -> Generator[None]:
        """A section that must not be cut (a claim's ref and comment being written).

        A request that arrives meanwhile is delivered as the section ends, by raising
        `CancelledError` there (the body is running, not waiting, at that moment).
        """
        self._holds += 1
        try:
            yield
        finally:
            self._holds -= 1
        self.checkpoint()

    def commit(self) -> None:
        """The body starts writing its result: from here it runs to its end."""
        self.committing = True

    def checkpoint(self) -> None:
        """A safe point: stop here if a request is pending (a body that swallowed the
        cancellation meets the request again at its next stage).

        Raises:
            asyncio.CancelledError: A stop was requested and nothing holds the body.
        """
        if self.interrupt is not None and not self._holds and not self.committing:
            raise asyncio.CancelledError(f"interrupted by {self.interrupt.name}")

    def close(self) -> None:
        """The body ended: no request reaches it any more."""
        self._open = False


# Reentrant: `request_stop` runs in signal handlers, which run in the main thread
# between two bytecodes, possibly while that thread is inside one of the sections below.
_lock = threading.RLock()
_gates: set[StopGate] = set()
_requested: Interrupt | None = None
_requested_at = 0.0
"""When the first request was made (`time.monotonic`)."""


def stop_requested() -> Interrupt | None:
    """The stop request of this process, if one was made (the first signal's)."""
    return _requested


def reset_stop() -> None:
    """Forget a stop request (a command starting in a process that ran one before:
    the tests call the CLI many times in one process)."""
    global _requested
    with _lock:
        _requested = None


def request_stop(signum: int) -> bool:
    """Ask every open gate to stop; `True` for the first request of the process.

    Safe from a signal handler and from any thread: each gate gets the request on its
    own loop (`call_soon_threadsafe`). A gate opened later sees it at once.
    """
    global _requested, _requested_at
    with _lock:
        first = _requested is None
        if first:
            _requested = Interrupt(signum)
            _requested_at = time.monotonic()
        interrupt = _requested
        gates = list(_gates)
    assert interrupt is not None
    for gate in gates:
        try:
            gate.loop.call_soon_threadsafe(gate.request, interrupt)
        except RuntimeError:  # its loop closed: that run has ended
            continue
    return first


def _repeated(signum: int, window: float) -> bool:
    """Whether `signum` is the first request's signal again, within `window` seconds."""
    with _lock:
        first = _requested
        return (
            first is not None
            and first.signum == signum
            and time.monotonic() - _requested_at < window
        )


@contextmanager
def open_gate(holding: Callable[[], list[str]]) -> Generator[StopGate]:
    """A gate for the body about to run on the current task (see `StopGate`).

    A stop requested before the gate opened reaches it at once: the body then stops at
    its first safe point.
    """
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - run_scoped always runs in a task
        raise RuntimeError("open_gate needs a running task")
    gate = StopGate(task=task, loop=asyncio.get_running_loop(), holding=holding)
    with _lock:
        _gates.add(gate)
        pending = _requested
    if pending is not None:
        gate.interrupt = pending
    try:
        yield gate
    finally:
        gate.close()
        with _lock:
            _gates.discard(gate)


def left_behind() -> list[str]:
    """What the open runs hold now (their claims), for a process about to exit at once."""
    with _lock:
        gates = list(_gates)
    return [item for gate in gates for item in gate.holding()]


@contextmanager
def stop_on_signals(
    say: Callable[[str], None] | None = None,
    *,
    exit_now: Callable[[int], None] = os._exit,
    repeat_window: float = REPEAT_WINDOW_SECONDS,
) -> Generator[None]:
    """SIGINT and SIGTERM stop the tick at its next safe point while this block runs.

    The first signal requests the stop (`request_stop`) and, through `say`, tells the
    operator what happens next. A second signal says what may be left behind (the
    claims still held: they expire by themselves, or `agent-loop claims release`) and
    exits at once with 128 + its number; the first one's signal again within
    `repeat_window` seconds is that same request delivered twice (`uv run` forwards it)
    and changes nothing. The handlers are installed whatever the signals' disposition
    was, an inherited "ignore" included (a shell script's background job): a stop asked
    for is always honoured. Outside the main thread (where Python cannot install
    handlers) this does nothing: the thread that owns the signals does it.

    Args:
        say: Where to tell the operator (default: standard error, unbuffered).
        exit_now: How the second signal ends the process (tests pass their own).
        repeat_window: Seconds during which the first signal, again, is not a second.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    tell = say or _to_stderr

    def handler(signum: int, frame: FrameType | None) -> None:
        del frame
        if request_stop(signum):
            tell(
                f"agent-loop: {Interrupt(signum).name} received: stopping at the next safe "
                "point, then releasing the claim and recording the run (again to exit at "
                "once)"
            )
            return
        if _repeated(signum, repeat_window):
            return
        held = left_behind()
        what = (
            "may be left claimed until the claim expires: " + "; ".join(held)
            if held
            else "nothing was claimed"
        )
        tell(
            f"agent-loop: {Interrupt(signum).name} again: exiting at once; no run record was written; {what}."
        )
        exit_now(128 + signum)

    previous = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    for signum in _SIGNALS:
        signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():  # `None`: a handler not set from Python
            signal.signal(signum, signal.SIG_DFL if old is None else old)


def _to_stderr(text: str) -> None:
    """Write a line to standard error straight from a signal handler (no buffering)."""
    os.write(2, (text + "\n").encode(errors="replace"))
