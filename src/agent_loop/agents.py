"""One tick of one agent, the way `agent-loop run` and the demo fire it.

Each agent package exports `run_once(*, issue|pr=None, remote=False, settings=None)`,
which fires its scheduled task through `agent_loop_common.runtime.run_task` (Flyte
local mode under `AGENT_LOOP_HOME`, or the deployed task). The packages are imported
only when used: importing an agent pulls in its Flyte environment, and the CLI's
`status` and `--help` should not pay for that.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from agent_loop_common.settings import Settings

__all__ = ["AGENTS", "TARGET_OPTION", "AgentName", "TickSummary", "run_agent_once"]

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


_NUMBER = re.compile(r"/(?:pull|issues)/(\d+)")


@dataclass(frozen=True)
class TickSummary:
    """A tick's summary read the same way for every agent.

    Each agent returns a small JSON-able dict (run id, outcome, target, links); their
    shapes differ in detail (a target as `"issue#3"` or as an object, links at the top
    level or under `links`), so readers go through this instead of the raw keys.
    """

    raw: Mapping[str, Any]

    @property
    def idle(self) -> bool:
        """The tick found nothing to do."""
        return not self.raw

    @property
    def outcome(self) -> str:
        return str(self.raw.get("outcome") or self.raw.get("pass") or "")

    @property
    def run_id(self) -> str:
        return str(self.raw.get("run_id") or "")

    @property
    def error(self) -> str:
        return str(self.raw.get("error") or "")

    @property
    def target(self) -> str:
        """`issue #3`, `PR #4` or `repo`."""
        target = self.raw.get("target")
        if isinstance(target, Mapping):
            fields = cast(Mapping[str, Any], target)
            kind, number = str(fields.get("kind", "")), fields.get("number")
        else:
            kind, _, number = str(target or "").partition("#")
        if not number:
            return kind
        return f"{'PR' if kind == 'pr' else kind} #{number}"

    @property
    def target_number(self) -> int | None:
        _, _, number = self.target.partition("#")
        return int(number) if number.isdigit() else None

    @property
    def links(self) -> list[str]:
        """URLs of what the tick made or updated (PR first, then issues)."""
        found: list[str] = []
        nested = self.raw.get("links")
        sources = [self.raw, cast(Mapping[str, Any], nested) if isinstance(nested, Mapping) else {}]
        for source in sources:
            for key in ("pr_url", "issue_urls"):
                value = source.get(key)
                items = value.split() if isinstance(value, str) else value
                if isinstance(items, list):
                    found += [
                        str(u) for u in cast(list[object], items) if u and str(u) not in found
                    ]
        return found

    @property
    def made(self) -> list[int]:
        """Numbers of the PR and issues in `links`."""
        return [int(n) for url in self.links for n in _NUMBER.findall(url)]
