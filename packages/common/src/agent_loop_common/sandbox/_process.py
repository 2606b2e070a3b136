"""Run one process to completion without blocking the event loop, within a wall time.

The process starts in a session of its own, so at the time limit the whole process
group is killed with one `killpg`, not just the program that was started. Its combined
output streams into an `OutputCapture` as it arrives, so memory stays bounded whatever
it prints. After it exits, the output is drained for a short grace period only: a
straggler that kept the pipe open cannot hold the caller.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_loop_common.sandbox._capture import OutputCapture

__all__ = ["ProcessOutcome", "run_process"]

_CHUNK = 64 * 1024
_DRAIN_SECONDS = 5.0


@dataclass
class ProcessOutcome:
    """How a process ended.

    Attributes:
        exit_code: Its exit status; `128 + N` when signal `N` ended it.
        signal: The signal that ended it, when it can be told.
        timed_out: It was killed at its wall-time limit.
        duration: Seconds from start to exit.
        capture: Its output.
        start_error: Why it could not be started at all (then `exit_code` is 127).
    """

    exit_code: int
    signal: int | None
    timed_out: bool
    duration: float
    capture: OutputCapture
    start_error: str = ""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _pump(stream: asyncio.StreamReader, capture: OutputCapture) -> None:
    while True:
        chunk = await stream.read(_CHUNK)
        if not chunk:
            return
        capture.feed(chunk)


async def run_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: Path,
    time_limit: float,
    capture: OutputCapture,
    pass_fds: Sequence[int] = (),
    on_timeout: Callable[[], Awaitable[None]] | None = None,
    on_start: Callable[[int], Awaitable[None]] | None = None,
    kill_group_after_exit: bool = False,
    signal_from_status: bool = False,
) -> ProcessOutcome:
    """Run `argv` and wait for it, killing its process group at `time_limit` seconds.

    Args:
        argv: The program and its arguments.
        env: Its whole environment (nothing is inherited).
        cwd: Its working directory.
        time_limit: Wall-time limit in seconds.
        capture: Receives the combined stdout and stderr.
        pass_fds: File descriptors to keep open in the child.
        on_timeout: Extra cleanup at the time limit (e.g. `docker kill`).
        on_start: Called with the pid once the process started (attaching a network
            to its namespace); if it raises, the process group is killed.
        kill_group_after_exit: Also kill what is left of the group after a normal exit
            (background children of an unsandboxed command).
        signal_from_status: Read an exit status above 128 as `128 + signal` (what
            bubblewrap and docker report for a command killed by a signal).
    """
    started = time.perf_counter()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    except OSError as exc:
        return ProcessOutcome(
            exit_code=127,
            signal=None,
            timed_out=False,
            duration=time.perf_counter() - started,
            capture=capture,
            start_error=f"cannot start {argv[0]}: {exc.strerror or exc}",
        )
    assert proc.stdout is not None
    pump = asyncio.create_task(_pump(proc.stdout, capture))
    timed_out = False
    try:
        if on_start is not None:
            await on_start(proc.pid)
        await asyncio.wait_for(proc.wait(), time_limit - (time.perf_counter() - started))
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        if on_timeout is not None:
            await on_timeout()
        await proc.wait()
    except BaseException:
        _kill_group(proc.pid)
        pump.cancel()
        raise
    duration = time.perf_counter() - started
    if kill_group_after_exit or timed_out:
        _kill_group(proc.pid)
    try:
        await asyncio.wait_for(asyncio.shield(pump), _DRAIN_SECONDS)
    except TimeoutError:
        pump.cancel()
    capture.finish()
    code = proc.returncode
    assert code is not None
    sig: int | None = None
    if code < 0:
        sig, code = -code, 128 - code
    elif signal_from_status and 128 < code < 128 + 65:
        sig = code - 128
    return ProcessOutcome(
        exit_code=code, signal=sig, timed_out=timed_out, duration=duration, capture=capture
    )
