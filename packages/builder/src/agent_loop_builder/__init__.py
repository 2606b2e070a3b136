"""agent_loop_builder: one scheduled agent that takes a GitHub issue to a verified PR.

Each tick selects the oldest eligible issue (or a requested one), claims it, lets an
`Agent` stage a change or a decomposition with read-only tools, has the strict
verifier check it (up to `AGENT_LOOP_MAX_TRIES` tries), and only then opens the pull
request or files the sub-issues as durable actions. Every claimed run leaves a
`RunRecord`.

```python
summary = run_once(issue=42)          # Flyte local mode, like `python -m agent_loop_builder`
async with open_runtime(settings, Role.BUILDER, ...) as rt:
    record = await run_builder_tick(rt)   # the Flyte-free core (tests, scripts)
```
"""

from __future__ import annotations

from typing import Any

from agent_loop_builder.apply import (
    BuilderWrites,
    DirectWrites,
    FiledIssues,
    OpenedPull,
    Posted,
    PullRequestSpec,
    Receipt,
    SubIssuesSpec,
)
from agent_loop_builder.build import BuildFailed, BuildResult
from agent_loop_builder.pipeline import run_builder_tick
from agent_loop_builder.prompts import BUILDER_MARKER, BUILDER_NAME
from agent_loop_builder.report import report_html, summarize
from agent_loop_builder.select import Refusal, RefusalCode, parse_depends_on
from agent_loop_builder.texts import branch_name, parse_sub_issue_marker
from agent_loop_common.settings import Settings, load_settings

__all__ = [
    "BUILDER_MARKER",
    "BUILDER_NAME",
    "BuildFailed",
    "BuildResult",
    "BuilderWrites",
    "DirectWrites",
    "FiledIssues",
    "OpenedPull",
    "Posted",
    "PullRequestSpec",
    "Receipt",
    "Refusal",
    "RefusalCode",
    "SubIssuesSpec",
    "branch_name",
    "parse_depends_on",
    "parse_sub_issue_marker",
    "report_html",
    "run_builder_tick",
    "run_once",
    "summarize",
]


def run_once(
    *, issue: int | None = None, remote: bool = False, settings: Settings | None = None
) -> dict[str, Any]:
    """Fire one builder tick (Flyte local mode, or the deployed task with `remote`).

    Args:
        issue: Work on this issue only (still checked for eligibility and trust).
        remote: Run the deployed task on the configured cluster instead.
        settings: The configuration; `load_settings()` by default.

    Returns:
        The tick's summary (`{}` when it found nothing to do).

    Raises:
        ConfigError: The configuration is invalid (from `load_settings`).
    """
    from agent_loop_builder.env import builder_tick
    from agent_loop_common.runtime import run_task

    config = settings if settings is not None else load_settings()
    result = run_task(config, builder_tick, remote=remote, issue=issue)
    return dict(result or {})
