"""Durable writes, declared once: one function per write, run direct or as a Flyte action.

An agent's writes to GitHub (open a pull request, push a fix, post a comment) must run
as durable Flyte actions on a cluster, and as plain calls in tests and scripts. Each
write is declared exactly once, as an async function over a GitHub facade, in the
agent's `WriteBook`:

```python
WRITES = WriteBook()

@WRITES.write
async def post_note(github: GitHub, pr: int, body: str) -> Posted:   # Posted: a Receipt
    ...
```

The pipeline calls it through a `Writer`: `await writer(post_note, pr, body)`. Two
writers exist. `DirectWriter(github)` calls the function on the run's own facade (the
requests are counted there already). `WRITES.durable(env, module=__name__)` turns every
declared write into an `@env.task` of the agent's environment (bound as a module-level
name of `env.py`, where Flyte's resolver finds it) and returns a `TaskWrites` whose
`writer(stats)` calls those tasks: each action builds its own facade from settings
(`github_from_settings`), and its requests come home on the `Receipt` and are merged
into the run's `RequestStats`, so a run record counts every request of the tick.
"""

from __future__ import annotations

import inspect
import sys
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from agent_loop_common.github import GitHub, RequestStats
from agent_loop_common.runtime._local import github_from_settings
from agent_loop_common.settings import load_settings

if typing.TYPE_CHECKING:
    import flyte

__all__ = [
    "DirectWriter",
    "Posted",
    "Receipt",
    "TaskWrites",
    "WriteBook",
    "Writer",
    "write_with_receipt",
]

_P = ParamSpec("_P")
_R = TypeVar("_R", bound="Receipt")


class Receipt(BaseModel):
    """A write's result, with the GitHub requests it made when it ran as its own action.

    `requests_by_route` has the shape of `RequestStats.by_route()`. It stays empty for
    writes made in process (plain tests), which the run's facade counted already.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    requests_by_route: dict[str, dict[int, int]] = {}


class Posted(Receipt):
    """One comment an agent posted."""

    url: str


async def write_with_receipt(write: Callable[[GitHub], Awaitable[_R]], *, repo: str = "") -> _R:
    """Run `write` over a facade of its own (from the settings); its requests on the receipt.

    The body of every durable write action: settings are loaded inside the action, where
    the deployed environment (not the caller's shell) supplies them. With
    `AGENT_LOOP_REPOS`, `repo` (an input of the action) names the repository written to.
    """
    settings = load_settings()
    if settings.many_repos:
        settings = settings.for_repo(repo)
    async with github_from_settings(settings) as github:
        result = await write(github)
        return result.model_copy(update={"requests_by_route": github.stats.by_route()})


class Writer(Protocol):
    """Runs one declared write with its inputs: `await writer(push_fix, fix)`."""

    async def __call__(
        self,
        write: Callable[Concatenate[GitHub, _P], Awaitable[_R]],
        /,
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R: ...


class DirectWriter:
    """A `Writer` that calls each write in process on one facade (tests, scripts)."""

    def __init__(self, github: GitHub) -> None:
        self.github = github

    async def __call__(
        self,
        write: Callable[Concatenate[GitHub, _P], Awaitable[_R]],
        /,
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R:
        return await write(self.github, *args, **kwargs)


_Write = Callable[..., Awaitable[Receipt]]


class WriteBook:
    """The durable writes of one agent, each declared once with `@book.write`."""

    def __init__(self) -> None:
        self._writes: dict[str, _Write] = {}

    def write(
        self, fn: Callable[Concatenate[GitHub, _P], Awaitable[_R]]
    ) -> Callable[Concatenate[GitHub, _P], Awaitable[_R]]:
        """Declare `fn(github, *inputs) -> Receipt` as one of the agent's writes."""
        if fn.__name__ in self._writes:
            raise ValueError(f"a write named {fn.__name__!r} is declared twice")
        self._writes[fn.__name__] = fn
        return fn

    @property
    def names(self) -> tuple[str, ...]:
        """The declared writes' names, in declaration order."""
        return tuple(self._writes)

    def durable(self, env: flyte.TaskEnvironment, *, module: str) -> TaskWrites:
        """Declare each write as an `@env.task` named like it, bound in `module`.

        Args:
            env: The agent's task environment.
            module: The importing module's `__name__` (the agent's `env.py`); each task
                becomes a module-level attribute there, where Flyte's resolver loads it.
        """
        target = sys.modules[module]
        tasks: dict[str, Any] = {}
        for name, fn in self._writes.items():
            task = env.task(_action(fn, module))
            setattr(target, name, task)
            tasks[name] = task
        return TaskWrites(tasks)


def _action(fn: _Write, module: str) -> Callable[..., Awaitable[Receipt]]:
    """The task body of one write: the inputs after `github`, run on a facade of its own."""
    signature = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    inputs = list(signature.parameters.values())[1:]

    async def action(on_repo: str = "", **kwargs: Any) -> Receipt:
        return await write_with_receipt(lambda github: fn(github, **kwargs), repo=on_repo)

    # The repository written to travels as an input too (many repositories: one env).
    inputs.append(
        inspect.Parameter(
            "on_repo", inspect.Parameter.POSITIONAL_OR_KEYWORD, default="", annotation=str
        )
    )

    # Named like the write and owned by the agent's env module, where Flyte's resolver
    # finds it; no `__wrapped__`, so Flyte reads this signature (inputs after `github`).
    action.__name__ = action.__qualname__ = fn.__name__
    action.__doc__ = fn.__doc__
    action.__module__ = module
    action.__signature__ = signature.replace(parameters=inputs)  # type: ignore[attr-defined]
    action.__annotations__ = {
        name: hint for name, hint in hints.items() if name in {p.name for p in inputs} | {"return"}
    } | {"on_repo": str}
    return action


class TaskWrites:
    """Every write of an agent as a task of its environment (from `WriteBook.durable`)."""

    def __init__(self, tasks: Mapping[str, Any]) -> None:
        self._tasks = dict(tasks)

    def writer(self, stats: RequestStats, repo: str = "") -> Writer:
        """A `Writer` for one run in `repo`: calls the tasks, merges their requests into
        `stats`."""
        return _TaskWriter(self._tasks, stats, repo)


class _TaskWriter:
    def __init__(self, tasks: Mapping[str, Any], stats: RequestStats, repo: str) -> None:
        self._tasks = tasks
        self._stats = stats
        self._repo = repo

    async def __call__(
        self,
        write: Callable[Concatenate[GitHub, _P], Awaitable[_R]],
        /,
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> _R:
        task = self._tasks.get(write.__name__)
        if task is None:
            raise LookupError(f"{write.__name__!r} is not a declared durable write")
        bound = inspect.signature(write).bind(None, *args, **kwargs)
        inputs = dict(list(bound.arguments.items())[1:])
        receipt: _R = await task(**inputs, on_repo=self._repo)
        self._stats.merge(receipt.requests_by_route)
        return receipt
