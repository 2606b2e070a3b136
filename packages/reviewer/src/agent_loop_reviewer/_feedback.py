"""Feedback on an agent PR, as one list of items with GitHub's own timestamps (pure).

A PR's feedback comes from five GitHub listings: conversation comments, review
summaries, inline review comments, check runs and commit statuses. They are read once
into a `PullSnapshot` and turned into `FeedbackItem`s here, so selection, the prompt, the
verifier's request and the replies all work from the same items and ids.

Trust is decided before anything reaches a model: people's items count only when their
author is trusted (the `trusted` predicate, backed by repository permissions), the
agents' own comments never count, and CI speaks through check runs and statuses.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agent_loop_common.github import (
    CheckRun,
    Comment,
    CommitStatus,
    PullRequest,
    Review,
    ReviewComment,
)

__all__ = [
    "FAILING_CONCLUSIONS",
    "FAILING_STATES",
    "FeedbackItem",
    "FeedbackKind",
    "PullSnapshot",
    "failing_checks",
    "people_feedback",
    "snapshot_time",
]

FeedbackKind = Literal["comment", "review", "review_comment", "check_run", "status"]

FAILING_CONCLUSIONS = frozenset({"failure", "timed_out", "startup_failure"})
"""Check-run conclusions a fix can address (`cancelled` and `action_required` need a person)."""
FAILING_STATES = frozenset({"failure", "error"})
"""Commit-status states that count as failing."""


@dataclass(frozen=True, slots=True)
class PullSnapshot:
    """Everything the reviewer reads about one PR, read once per pass."""

    pull: PullRequest
    comments: Sequence[Comment]
    """Conversation comments, the agents' own included (claims, markers, backoff)."""
    reviews: Sequence[Review]
    review_comments: Sequence[ReviewComment]
    check_runs: Sequence[CheckRun]
    """Latest run per check name on the head commit."""
    statuses: Sequence[CommitStatus]
    """Latest status per context on the head commit."""


@dataclass(frozen=True, slots=True)
class FeedbackItem:
    """One piece of feedback the reviewer may act on."""

    kind: FeedbackKind
    id: int
    """GitHub id (comment, review, review comment or check run); 0 for a status."""
    author: str
    """Login of a person, or the check's / status context's name for CI."""
    body: str
    """What it says (for CI: title, summary and output text)."""
    at: datetime
    """When GitHub says it was posted or last changed."""
    url: str = ""
    path: str = ""
    """File of an inline review comment."""
    line: int | None = None
    """Line of an inline review comment."""
    thread_id: int | None = None
    """Top-level comment of an inline thread (the one to reply to)."""
    state: str = ""
    """Review state, check conclusion or status state."""

    @property
    def is_ci(self) -> bool:
        """Whether the item comes from CI rather than a person."""
        return self.kind in ("check_run", "status")

    @property
    def replyable(self) -> bool:
        """Whether a reply can be posted to it (people's items)."""
        return not self.is_ci


def people_feedback(
    snapshot: PullSnapshot,
    *,
    agent_login: str,
    trusted: Callable[[str], bool],
    edited_by_untrusted: Collection[int] = (),
) -> list[FeedbackItem]:
    """Trusted people's comments, review summaries and inline comments, oldest first.

    A review without a body is only the envelope of its inline comments (or a bare
    approval) and is left out; pending and dismissed reviews never count. A comment
    whose last edit was made by someone untrusted (`edited_by_untrusted`, comment ids)
    no longer says what its trusted author wrote, and is left out too.
    """
    agent = agent_login.casefold()
    tainted = set(edited_by_untrusted)

    def counts(login: str) -> bool:
        return login.casefold() != agent and trusted(login)

    items: list[FeedbackItem] = []
    for c in snapshot.comments:
        if counts(c.user.login) and c.id not in tainted:
            at = max(c.created_at, c.updated_at)
            items.append(FeedbackItem("comment", c.id, c.user.login, c.body, at, c.html_url))
    for r in snapshot.reviews:
        if r.state in ("PENDING", "DISMISSED") or r.submitted_at is None:
            continue
        if (r.body.strip() or r.state == "CHANGES_REQUESTED") and counts(r.user.login):
            items.append(
                FeedbackItem("review", r.id, r.user.login, r.body, r.submitted_at, state=r.state)
            )
    items.extend(
        FeedbackItem(
            "review_comment",
            rc.id,
            rc.user.login,
            rc.body,
            max(rc.created_at, rc.updated_at),
            rc.html_url,
            path=rc.path,
            line=rc.line,
            thread_id=rc.in_reply_to_id or rc.id,
        )
        for rc in snapshot.review_comments
        if counts(rc.user.login) and rc.id not in tainted
    )
    items.sort(key=lambda item: (item.at, item.id))
    return items


def failing_checks(snapshot: PullSnapshot) -> list[FeedbackItem]:
    """Failing check runs and statuses on the head commit."""
    head = snapshot.pull.head_sha
    items: list[FeedbackItem] = []
    for run in snapshot.check_runs:
        if run.head_sha != head or run.status != "completed":
            continue
        if run.conclusion not in FAILING_CONCLUSIONS:
            continue
        at = run.completed_at or run.started_at or snapshot.pull.updated_at
        body = "\n\n".join(
            part for part in (run.output_title, run.output_summary, run.output_text) if part
        )
        items.append(
            FeedbackItem("check_run", run.id, run.name, body, at, state=run.conclusion or "")
        )
    for status in snapshot.statuses:
        if status.state not in FAILING_STATES:
            continue
        at = status.updated_at or snapshot.pull.updated_at
        items.append(
            FeedbackItem(
                "status",
                0,
                status.context,
                status.description,
                at,
                status.target_url,
                state=status.state,
            )
        )
    return items


def snapshot_time(snapshot: PullSnapshot) -> datetime:
    """The latest GitHub time anywhere in the snapshot: how far this pass has seen.

    Stored as the pass's `reviewed_at`, it is compared only with GitHub's timestamps of
    later feedback, never with the runner's clock, so clock skew between the runner and
    GitHub cannot hide feedback or make old feedback look new.
    """
    moments = [snapshot.pull.created_at, snapshot.pull.updated_at]
    moments += [max(c.created_at, c.updated_at) for c in snapshot.comments]
    moments += [r.submitted_at for r in snapshot.reviews if r.submitted_at is not None]
    moments += [max(c.created_at, c.updated_at) for c in snapshot.review_comments]
    for run in snapshot.check_runs:
        moments += [m for m in (run.started_at, run.completed_at) if m is not None]
    moments += [s.updated_at for s in snapshot.statuses if s.updated_at is not None]
    return max(moments)
