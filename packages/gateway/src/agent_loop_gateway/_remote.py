"""The deployed gateway's runner: start the deployed agent tasks by name on the cluster.

The gateway never imports an agent package; it names each agent's scheduled task
(`builder.builder_tick`, ...) and starts its latest deployed version with the one
target as input, exactly what `agent-loop run <agent> --remote --issue/--pr N` does.
By default it waits for the run to end, so the dispatcher keeps one run per target at a
time on the cluster too (the claim protocol would also keep a second run off the target).
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog

from agent_loop_gateway._events import AgentName

__all__ = ["TICK_TASKS", "FlyteRunner"]

_log = structlog.get_logger(__name__)

TICK_TASKS: Mapping[AgentName, str] = {
    "builder": "builder.builder_tick",
    "reviewer": "reviewer.reviewer_tick",
    "distiller": "distiller.distiller_tick",
}
"""Each agent's scheduled task as deployed (`<env>.<task>`)."""

TARGET_INPUT = "target"
"""The single-target input every agent's tick takes (issue or PR number)."""


class FlyteRunner:
    """A `Runner` that starts the deployed tick of an agent with `flyte.run`.

    Call `flyte.init_in_cluster()` (inside the app) or `flyte.init_from_config()` first.
    """

    def __init__(
        self, *, project: str | None = None, domain: str | None = None, wait: bool = True
    ) -> None:
        self._project = project
        self._domain = domain
        self._wait = wait

    async def __call__(self, agent: AgentName, target: int | None) -> None:
        import flyte
        import flyte.remote

        task = flyte.remote.Task.get(
            name=TICK_TASKS[agent],
            project=self._project,
            domain=self._domain,
            auto_version="latest",
        )
        inputs = {} if target is None else {TARGET_INPUT: target}
        run = await flyte.run.aio(task, **inputs)
        _log.info("gateway.remote_run", agent=agent, target=target, run=run.name, url=run.url)
        if self._wait:
            await run.wait.aio(quiet=True)
