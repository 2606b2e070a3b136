"""K instances at a time, each its own Flyte task, each result reported as it finishes.

A run's task (`env.eval_run`, `env.eval_score`) calls its instance task
(`env.eval_instance`, `env.eval_score_instance`) once per instance and gathers the calls, at most `parallel` in flight: on a cluster each call is
its own action (its own container, inputs and outputs recorded, retried by Flyte), in
Flyte's local mode each runs in this process, K at a time. This is `asyncio.gather` over
task calls, not a scheduler: Flyte runs, records and retries them (its `flyte.map`
would run them one by one in local mode).

An instance's task that fails outright (it should not: `evaluate` turns every failure
into a result) becomes an `error` result, so one instance never ends the run. Each
result is logged as it finishes and handed to the callbacks installed in this process
with `watch_results` (`agent-loop eval run` prints a line per instance this way in
local mode).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextlib import contextmanager

import structlog

from agent_loop_eval._instance import Instance
from agent_loop_eval._results import InstanceResult

__all__ = ["Inputs", "InstanceTask", "fan_out", "watch_results"]

_log = structlog.get_logger(__name__)

InstanceTask = Callable[..., Awaitable[InstanceResult]]
"""An instance task, called as `task(instance=..., **inputs)`."""

Inputs = Callable[[Instance], Mapping[str, object]]
"""An instance task's other inputs for one instance (`lessons` and `model` for a
replay, the `prediction` for a score)."""

Watcher = Callable[[InstanceResult, int, int], None]
"""Called with a result, how many results are done (this one included) and how many in all."""

_watchers: list[Watcher] = []


@contextmanager
def watch_results(watcher: Watcher) -> Generator[None]:
    """Hand every instance result finished in this process to `watcher` while the block runs."""
    _watchers.append(watcher)
    try:
        yield
    finally:
        _watchers.remove(watcher)


async def fan_out(
    task: InstanceTask, instances: Sequence[Instance], *, parallel: int, inputs: Inputs
) -> list[InstanceResult]:
    """Run `task` on every instance with its `inputs`, at most `parallel` at once;
    results in input order."""
    gate = asyncio.Semaphore(max(1, parallel))
    done = 0

    async def one(instance: Instance) -> InstanceResult:
        nonlocal done
        given = inputs(instance)
        async with gate:
            try:
                result = await task(instance=instance, **given)
            except Exception as exc:  # the action itself failed: still a result
                result = InstanceResult(
                    instance_id=instance.instance_id,
                    resolved=False,
                    repo=instance.repo,
                    base_commit=instance.base_commit,
                    lessons=str(given.get("lessons", "")),
                    error=f"the instance's task failed: {type(exc).__name__}: {exc}",
                )
        done += 1
        _log.info(
            "eval.instance_done",
            instance=result.instance_id,
            resolved=result.resolved,
            outcome=result.outcome,
            done=done,
            of=len(instances),
        )
        for watcher in _watchers:
            watcher(result, done, len(instances))
        return result

    return list(await asyncio.gather(*(one(i) for i in instances)))
