"""One tick of one agent, the way `agent-loop run` and the demo fire it.

Each agent package exports `run_once(*, issue|pr=None, remote=False, settings=None)`,
which fires its scheduled task through `agent_loop_common.runtime.run_task` (Flyte
local mode under `AGENT_LOOP_HOME`, or the deployed task). The packages are imported
only when used: importing an agent pulls in its Flyte environment, and the CLI's
`status` and `--help` should not pay for that.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, Literal, cast

from agent_loop_common.settings import Settings

__all__ = ["AGENTS", "TARGET_OPTION", "AgentName", "run_agent_once"]

AgentName = Literal["builder", "reviewer", "distiller"]
AGENTS: tuple[AgentName, ...] = ("builder", "reviewer", "distiller")

TARGET_OPTION: dict[AgentName, str | None] = {
    "builder": "issue",
    "reviewer": "pr",
    "distiller": None,
}
"""The keyword each agent's `run_once` takes for a single target (`None`: no target)."""


def run_agent_once(
    agent: AgentName,
    settings: Settings,
    *,
    target: int | None = None,
    remote: bool = False,
) -> dict[str, Any]:
    """Run one tick of `agent` and return its summary (`{}` for an idle tick).

    Args:
        agent: Which agent.
        settings: The loaded configuration (the task itself reads the same environment).
        target: Issue number (builder) or PR number (reviewer); `None` lets the agent pick.
        remote: Fire the deployed task on the configured Flyte cluster.
    """
    option = TARGET_OPTION[agent]
    if target is not None and option is None:
        raise ValueError(f"the {agent} takes no target")
    module = importlib.import_module(f"agent_loop_{agent}")
    run_once = cast(Callable[..., Any], module.run_once)
    kwargs: dict[str, Any] = {"remote": remote, "settings": settings}
    if option is not None:
        kwargs[option] = target
    summary = run_once(**kwargs)
    return cast(dict[str, Any], summary) if isinstance(summary, dict) else {"result": summary}
