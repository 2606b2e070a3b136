"""agent-loop reviewer: every agent PR gets its own review; feedback becomes verified fixes.

One tick (`run_reviewer_tick`, Flyte-free) picks the first agent PR that needs a pass
(a head it has not reviewed, trusted feedback or a failing check newer than its last
pass), claims it, lets the reviewer agent review it and propose a fix with the shared
staging tools, has the strict verifier judge the fix, pushes it by compare-and-swap and
answers the feedback. `env.reviewer_tick` is the scheduled Flyte task around it;
`run_once` fires that task once, locally or on a cluster.

```python
async with open_runtime(settings, Role.REVIEWER) as runtime:
    record = await run_reviewer_tick(runtime)        # None: nothing needed a pass
```
"""

from __future__ import annotations

from agent_loop_common.settings import Settings, load_settings
from agent_loop_reviewer._apply import (
    FixCommit,
    NoChangesNote,
    PostedReplies,
    PushResult,
    ReplyBatch,
    ReplyPost,
)
from agent_loop_reviewer._feedback import (
    FeedbackItem,
    PullSnapshot,
    failing_checks,
    people_feedback,
)
from agent_loop_reviewer._markers import PassHistory, PassMarker, pass_history, render_pass_marker
from agent_loop_reviewer._pipeline import run_reviewer_tick
from agent_loop_reviewer._prompts import REVIEWER_MARKER, reviewer_instructions
from agent_loop_reviewer._report import report_html, summary
from agent_loop_reviewer._review import ReviewFailed
from agent_loop_reviewer._select import Assessment, assess, blocked_by, is_agent_pull
from agent_loop_reviewer._writes import DirectWrites, ReviewWrites

__all__ = [
    "REVIEWER_MARKER",
    "Assessment",
    "DirectWrites",
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
    "ReviewFailed",
    "ReviewWrites",
    "assess",
    "blocked_by",
    "failing_checks",
    "is_agent_pull",
    "pass_history",
    "people_feedback",
    "render_pass_marker",
    "report_html",
    "reviewer_instructions",
    "run_once",
    "run_reviewer_tick",
    "summary",
]


def run_once(
    *, pr: int | None = None, remote: bool = False, settings: Settings | None = None
) -> dict[str, str]:
    """Fire one reviewer tick and return its summary (`{}` when nothing needed a pass).

    Args:
        pr: Only consider this pull request.
        remote: Run the deployed task on the configured Flyte cluster instead of in
            local mode on this machine.
        settings: The configuration; `load_settings()` by default.
    """
    from agent_loop_common.runtime import run_task
    from agent_loop_reviewer.env import reviewer_tick

    chosen = settings or load_settings()
    result: dict[str, str] = run_task(chosen, reviewer_tick, remote=remote, pr=pr)
    return result
