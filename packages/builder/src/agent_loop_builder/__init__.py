"""agent_loop_builder: one scheduled agent that takes a GitHub issue to a verified PR.

Each tick selects the oldest eligible issue (or a requested one), claims it, lets an
`Agent` stage a change or a decomposition with read-only tools, has the strict
verifier check it (the shared attempt loop, up to `AGENT_LOOP_MAX_TRIES` tries), and
only then opens the pull request or files the sub-issues as durable writes. Every
claimed run leaves a `RunRecord`.

```python
summary = run_once(target=42)             # Flyte local mode, like `python -m agent_loop_builder`
async with open_runtime(settings, Role.BUILDER, ...) as rt:
    record = await run_builder_tick(rt)   # the Flyte-free core (tests, scripts)
async with open_runtime(settings, Role.BUILDER, offline=True) as rt:   # the benchmark's
    replay = await replay_build(rt, ReplayAsk(number=7, statement=text), snapshot)
```

Modules, by concern (the same names in every agent package): `_select` (pure
eligibility rules), `_candidates` (what GitHub says about the open issues), `_prompts`,
`_tools`, `_attempt` (the builder in the shared attempt loop), `_build` (prepare and
attempt, shared by a tick and a replay), `_replay` (one issue offline, for the
benchmark), `_conclude` (what a result writes), `_writes` (the durable writes, declared once), `_texts` (what the
builder posts), `_pipeline` (one tick), `env` (Flyte), `__main__`.
"""

from __future__ import annotations

from agent_loop_builder._build import LessonChoice
from agent_loop_builder._pipeline import run_builder_tick, scout_issues
from agent_loop_builder._prompts import BUILDER_MARKER, BUILDER_NAME
from agent_loop_builder._replay import ReplayAsk, ReplayedBuild, ReplayOutcome, replay_build
from agent_loop_builder._select import (
    Refusal,
    RefusalCode,
    agent_pull_issues,
    branch_issue,
    oldest_first,
    parse_depends_on,
    static_refusal,
    thread_refusal,
    trust_refusal,
)
from agent_loop_builder._texts import (
    branch_name,
    parse_sub_issue_marker,
    pr_body,
    slugify,
    sub_issue_body,
)
from agent_loop_builder._tools import issue_tool
from agent_loop_builder._writes import (
    WRITES,
    FiledIssues,
    OpenedPull,
    PullRequestSpec,
    SubIssuesSpec,
    file_sub_issues,
    open_pull_request,
    post_feedback,
)
from agent_loop_common.runtime import TickSummary
from agent_loop_common.settings import Settings, load_settings

__all__ = [
    "BUILDER_MARKER",
    "BUILDER_NAME",
    "WRITES",
    "FiledIssues",
    "LessonChoice",
    "OpenedPull",
    "PullRequestSpec",
    "Refusal",
    "RefusalCode",
    "ReplayAsk",
    "ReplayOutcome",
    "ReplayedBuild",
    "SubIssuesSpec",
    "agent_pull_issues",
    "branch_issue",
    "branch_name",
    "file_sub_issues",
    "issue_tool",
    "oldest_first",
    "open_pull_request",
    "parse_depends_on",
    "parse_sub_issue_marker",
    "post_feedback",
    "pr_body",
    "replay_build",
    "run_builder_tick",
    "run_once",
    "scout_issues",
    "slugify",
    "static_refusal",
    "sub_issue_body",
    "thread_refusal",
    "trust_refusal",
]


def run_once(
    *,
    target: int | None = None,
    remote: bool = False,
    settings: Settings | None = None,
    retry_now: bool = False,
) -> TickSummary:
    """Fire one builder tick (Flyte local mode, or the deployed task with `remote`).

    Args:
        target: Work on this issue only (still checked for eligibility and trust).
        remote: Run the deployed task on the configured cluster instead.
        settings: The configuration; `load_settings()` by default.
        retry_now: With `target`: retry it now, ignoring its back-off (an operator's reset).

    Raises:
        ConfigError: The configuration is invalid (from `load_settings`).
    """
    from agent_loop_builder.env import builder_tick
    from agent_loop_common.runtime import run_tick

    config = settings if settings is not None else load_settings()
    return run_tick(config, builder_tick, target=target, remote=remote, retry_now=retry_now)
