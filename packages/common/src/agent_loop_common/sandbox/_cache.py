"""The baseline cache: a tick runs the base commit's tests at most once per command.

Every attempt of a run, and every change of a tick at one base commit, is compared
with the same baseline: the test command on the base commit. Running it again per
attempt would double the time spent in tests for no new information. The cache is
keyed by the base SHA, the command and the setup command; concurrent requests for one
key wait for the one run in flight. It lives in memory for the process by default; a
caller can pass any `BaselineStore` instead (for example one kept in the agent's memory
across ticks).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from agent_loop_common.sandbox._result import RunResult

__all__ = ["BaselineCache", "BaselineKey", "BaselineStore", "baseline_key"]

BaselineKey = tuple[str, tuple[str, ...], tuple[str, ...]]
"""(base SHA, test command, setup command)."""


def baseline_key(
    base_sha: str, argv: Sequence[str], setup: Sequence[str] | None = None
) -> BaselineKey:
    """The cache key of a baseline run."""
    return (base_sha, tuple(argv), tuple(setup or ()))


class BaselineStore(Protocol):
    """Where baseline results are kept (the default is `BaselineCache`, in memory)."""

    async def get_or_run(
        self, key: BaselineKey, run: Callable[[], Awaitable[RunResult]]
    ) -> RunResult:
        """The result for `key`, calling `run()` only when there is none yet."""
        ...


class BaselineCache:
    """In-memory `BaselineStore`: one run per key, shared by concurrent callers.

    Args:
        max_entries: Most results kept (least recently used ones are dropped).
    """

    def __init__(self, max_entries: int = 32) -> None:
        self.max_entries = max_entries
        self.runs = 0
        """How many baseline runs actually happened (the rest were cache hits)."""
        self._results: OrderedDict[BaselineKey, RunResult] = OrderedDict()
        self._in_flight: dict[BaselineKey, asyncio.Future[RunResult]] = {}

    async def get_or_run(
        self, key: BaselineKey, run: Callable[[], Awaitable[RunResult]]
    ) -> RunResult:
        """The cached result for `key`, or the result of one call of `run()`.

        A failing `run()` (an exception, not a failing command) is not cached: the next
        caller tries again.
        """
        if key in self._results:
            self._results.move_to_end(key)
            return self._results[key]
        pending = self._in_flight.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            self.runs += 1
            result = await run()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        finally:
            self._in_flight.pop(key, None)
        future.set_result(result)
        self._results[key] = result
        while len(self._results) > self.max_entries:
            self._results.popitem(last=False)
        return result

    def __len__(self) -> int:
        return len(self._results)
