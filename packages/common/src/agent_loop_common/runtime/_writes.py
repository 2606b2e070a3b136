"""Durable writes that bring their GitHub request counts home on a receipt.

An agent's writes run as durable Flyte actions (`@env.task`), and each action builds its
own facade with `github_from_settings`, so the run's facade never sees those requests. To
keep one run's record honest about every request it caused, the action returns a
`Receipt` carrying its facade's counts, and the tick merges them into its own
`RequestStats`. Builder and reviewer share this plumbing; only their write functions
and result models are their own.

```python
@env.task
async def post_note(pr: int, body: str) -> Posted:       # Posted subclasses Receipt
    return await write_with_receipt(lambda gh: apply.post_note(gh, pr, body))

class TaskWrites(CountedWrites):                           # the tick's writes bundle
    async def post_note(self, pr: int, body: str) -> Posted:
        return self.counted(await post_note(pr, body))
```
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from agent_loop_common.github import GitHub, RequestStats
from agent_loop_common.runtime._local import github_from_settings
from agent_loop_common.settings import load_settings

__all__ = ["CountedWrites", "Receipt", "write_with_receipt"]


class Receipt(BaseModel):
    """A write's result, with the GitHub requests it made when it ran as its own action.

    `requests_by_route` has the shape of `RequestStats.by_route()`. It stays empty for
    writes made in process (plain tests), which the run's facade counted already.
    """

    model_config = ConfigDict(frozen=True)

    requests_by_route: dict[str, dict[int, int]] = {}


_R = TypeVar("_R", bound=Receipt)


async def write_with_receipt(write: Callable[[GitHub], Awaitable[_R]]) -> _R:
    """Run `write` over a facade of its own (from the settings); its requests on the receipt.

    Meant for the body of a durable write task: settings are loaded inside the action,
    where the deployed environment (not the caller's shell) supplies them.
    """
    async with github_from_settings(load_settings()) as github:
        result = await write(github)
        return result.model_copy(update={"requests_by_route": github.stats.by_route()})


class CountedWrites:
    """Base of a tick's durable-writes bundle: each receipt's counts join the run's.

    Subclasses call the `@env.task` writes and pass every result through `counted`, so
    the run record counts every request of the tick, its actions included.
    """

    def __init__(self, stats: RequestStats) -> None:
        self._stats = stats

    def counted(self, receipt: _R) -> _R:
        """Merge `receipt`'s request counts into the run's and hand it back unchanged."""
        self._stats.merge(receipt.requests_by_route)
        return receipt
