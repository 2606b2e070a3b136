"""agent_loop_reviewer: every agent PR gets its own review; feedback becomes verified fixes.

One tick (`run_reviewer_tick`, Flyte-free) picks the first agent PR that needs a pass
(a head it has not reviewed, trusted feedback or a failing check newer than its last
pass), claims it, lets the reviewer agent review it and propose a fix with the shared
staging tools, has the strict verifier judge the fix (the shared attempt loop), pushes it
by compare-and-swap and answers the feedback. `env.reviewer_tick` is the scheduled
Flyte task around it; `run_once` fires that task once, locally or on a cluster.

```python
async with open_runtime(settings, Role.REVIEWER) as runtime:
    record = await run_reviewer_tick(runtime)        # None: nothing needed a pass
```

Modules, by concern (the same names in every agent package): `_select` (pure rules:
does a PR need a pass), `_candidates` (reading the agent PRs), `_feedback` (feedback
items), `_prompts`, `_tools`, `_attempt` (the reviewer in the shared attempt loop),
`_conclude` (what a result writes), `_writes` (the durable writes, declared once),
`_texts` (what the reviewer posts, its pass marker), `_pipeline` (one tick), `env`
(Flyte), `__main__`.
"""

from __future__ import annotations

from agent_loop_common.runtime import TickSummary
from agent_loop_common.settings import Settings, load_settings
from agent_loop_reviewer._feedback import (
    FeedbackItem,
    PullSnapshot,
    failing_checks,
    people_feedback,
)
from agent_loop_reviewer._pipeline import run_reviewer_tick, scout_pulls
from agent_loop_reviewer._prompts import REVIEWER_MARKER, REVIEWER_NAME, reviewer_instructions
from agent_loop_reviewer._select import (
    Assessment,
    Block,
    assess,
    block_of,
    blocked_by,
    is_open_agent_pull,
)
from agent_loop_reviewer._texts import (
    PassHistory,
    PassMarker,
    pass_history,
    render_pass_marker,
    summary_body,
)
from agent_loop_reviewer._writes import (
    WRITES,
    FixCommit,
    NoChangesNote,
    PostedReplies,
    PushResult,
    ReplyBatch,
    ReplyPost,
    post_no_changes,
    post_note,
    post_replies,
    push_fix,
)

__all__ = [
    "REVIEWER_MARKER",
    "REVIEWER_NAME",
    "WRITES",
    "Assessment",
    "Block",
    "FeedbackItem",
    "FixCommit",
    "NoChangesNote",
    "PassHistory",
    "PassMarker",
    "PostedReplies",
    "PullSnapshot",
    "PushResult",
    "ReplyBatch",
    "ReplyPost",
    "assess",
    "block_of",
    "blocked_by",
    "failing_checks",
    "is_open_agent_pull",
    "pass_history",
    "people_feedback",
    "post_no_changes",
    "post_note",
    "post_replies",
    "push_fix",
    "render_pass_marker",
    "reviewer_instructions",
    "run_once",
    "run_reviewer_tick",
    "scout_pulls",
    "summary_body",
]


def run_once(
    *,
    target: int | None = None,
    remote: bool = False,
    settings: Settings | None = None,
    retry_now: bool = False,
) -> TickSummary:
    """Fire one reviewer tick and return its summary.

    Args:
        target: Only consider this pull request.
        remote: Run the deployed task on the configured Flyte cluster instead of in
            local mode on this machine.
        settings: The configuration; `load_settings()` by default.
        retry_now: With `target`: retry it now, ignoring its back-off (an operator's reset).
    """
    from agent_loop_common.runtime import run_tick
    from agent_loop_reviewer.env import reviewer_tick

    return run_tick(
        settings or load_settings(),
        reviewer_tick,
        target=target,
        remote=remote,
        retry_now=retry_now,
    )
