"""One tick of one agent, the way `agent-loop run`, the demo and the gateway fire it.

Each agent package exports `run_once` of the `AgentEntry` shape (common): it fires the
agent's scheduled task through `run_tick` (Flyte local mode under `AGENT_LOOP_HOME`, or
the deployed task) and returns a `TickSummary`. The packages are imported only when
used: importing an agent pulls in its Flyte environment, and the CLI's `status` and
`--help` should not pay for that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # the names below must stay cheap: the CLI's parser uses them
    from agent_loop_common.runtime import AgentEntry, TickSummary
    from agent_loop_common.settings import Settings

__all__ = ["AGENTS", "TARGETS", "AgentName", "entry_point", "run_agent_once"]

AgentName = Literal["builder", "reviewer", "distiller"]
AGENTS: tuple[AgentName, ...] = ("builder", "reviewer", "distiller")

TARGETS: dict[AgentName, str | None] = {"builder": "issue", "reviewer": "pr", "distiller": None}
"""What each agent's single target is (`--issue`, `--pr`); `None`: it takes none."""


def entry_point(agent: AgentName) -> AgentEntry:
    """The agent package's `run_once` (imports the package on first use)."""
    if agent == "builder":
        from agent_loop_builder import run_once as builder

        return builder
    if agent == "reviewer":
        from agent_loop_reviewer import run_once as reviewer

        return reviewer
    from agent_loop_distiller import run_once as distiller

    return distiller


def run_agent_once(
    agent: AgentName,
    settings: Settings,
    *,
    target: int | None = None,
    remote: bool = False,
    retry_now: bool = False,
) -> TickSummary:
    """Run one tick of `agent` and return its summary.

    Args:
        agent: Which agent.
        settings: The loaded configuration (the task itself reads the same environment).
        target: Issue number (builder) or PR number (reviewer); `None` lets the agent pick.
        remote: Fire the deployed task on the configured Flyte cluster.
        retry_now: Ignore the target's back-off (the operator's reset).

    Raises:
        ValueError: A target for the distiller, which takes none.
    """
    if target is not None and TARGETS[agent] is None:
        raise ValueError(f"the {agent} takes no target")
    return entry_point(agent)(target=target, remote=remote, settings=settings, retry_now=retry_now)
