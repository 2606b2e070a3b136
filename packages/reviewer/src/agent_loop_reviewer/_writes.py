"""The seam for the reviewer's writes: durable Flyte actions in a task, direct calls elsewhere.

The pipeline only ever writes through a `ReviewWrites`. Inside the scheduled task it gets
the `@env.task` versions from `env.py` (each write a tracked, durable action); plain async
code and most tests get `DirectWrites` over the run's own facade. Both run the functions
in `_apply`, so the tests exercise the code a deployed reviewer runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent_loop_common.github import GitHub
from agent_loop_reviewer import _apply
from agent_loop_reviewer._apply import (
    FixCommit,
    NoChangesNote,
    Posted,
    PostedReplies,
    PushResult,
    ReplyBatch,
)

__all__ = ["DirectWrites", "ReviewWrites"]


class ReviewWrites(Protocol):
    """Every write a reviewer pass makes to GitHub."""

    async def push_fix(self, fix: FixCommit) -> PushResult:
        """Push one verified commit by compare-and-swap (never forced)."""
        ...

    async def post_replies(self, batch: ReplyBatch) -> PostedReplies:
        """Reply to each addressed item, then post the summary comment."""
        ...

    async def post_no_changes(self, note: NoChangesNote) -> Posted:
        """Post the short comment naming the head commit reviewed."""
        ...

    async def post_note(self, pr: int, body: str) -> Posted:
        """Post another pass comment (rejected fix, check fixing stopped)."""
        ...


@dataclass(frozen=True)
class DirectWrites:
    """Writes made in-process through one facade (plain async code, tests)."""

    github: GitHub

    async def push_fix(self, fix: FixCommit) -> PushResult:
        return await _apply.push_fix(self.github, fix)

    async def post_replies(self, batch: ReplyBatch) -> PostedReplies:
        return await _apply.post_replies(self.github, batch)

    async def post_no_changes(self, note: NoChangesNote) -> Posted:
        return await _apply.post_no_changes(self.github, note)

    async def post_note(self, pr: int, body: str) -> Posted:
        return await _apply.post_note(self.github, pr, body)
