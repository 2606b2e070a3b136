"""Read-only snapshots of emulator state for test assertions.

Tests assert on these frozen copies instead of the live records, so a later request
cannot change a value a test already read, and tests never mutate state behind the
API's back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agent_loop_testing._emulator_ops_pulls import base_sha, head_sha
from agent_loop_testing._emulator_state import CommentRec, IssueRec, State

__all__ = ["CommitView", "EmulatedComment", "EmulatedIssue", "EmulatedPull"]


@dataclass(frozen=True)
class EmulatedIssue:
    """An issue (or the issue side of a PR) as the emulator holds it."""

    number: int
    title: str
    body: str | None
    state: str
    author: str
    labels: tuple[str, ...]
    is_pull_request: bool
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None
    last_editor: str | None = None
    """Who last edited the body (GitHub's GraphQL `editor`); `None` when never edited."""
    last_edited_at: datetime | None = None
    """When the body was last edited (GraphQL `lastEditedAt`)."""


@dataclass(frozen=True)
class EmulatedComment:
    id: int
    issue: int
    body: str
    author: str
    created_at: datetime
    updated_at: datetime
    last_editor: str | None = None
    """Who last edited the comment; `None` when never edited."""
    last_edited_at: datetime | None = None
    """When the comment was last edited."""


@dataclass(frozen=True)
class EmulatedPull:
    """A pull request; `head_sha` follows the head branch until it is merged or deleted."""

    number: int
    title: str
    body: str | None
    state: str
    author: str
    head_ref: str
    head_sha: str
    base_ref: str
    base_sha: str
    draft: bool
    merged: bool
    merged_at: datetime | None
    merge_commit_sha: str | None


@dataclass(frozen=True)
class CommitView:
    sha: str
    message: str
    parents: tuple[str, ...]
    tree: str


def issue_view(issue: IssueRec) -> EmulatedIssue:
    return EmulatedIssue(
        issue.number,
        issue.title,
        issue.body,
        issue.state,
        issue.author,
        tuple(issue.labels),
        issue.pull is not None,
        issue.created_at,
        issue.updated_at,
        issue.closed_at,
        issue.edits[-1].editor if issue.edits else None,
        issue.edits[-1].edited_at if issue.edits else None,
    )


def comment_view(comment: CommentRec) -> EmulatedComment:
    return EmulatedComment(
        comment.id,
        comment.issue,
        comment.body,
        comment.author,
        comment.created_at,
        comment.updated_at,
        comment.edits[-1].editor if comment.edits else None,
        comment.edits[-1].edited_at if comment.edits else None,
    )


def pull_view(st: State, issue: IssueRec) -> EmulatedPull:
    pull = issue.pull
    assert pull is not None
    return EmulatedPull(
        issue.number,
        issue.title,
        issue.body,
        issue.state,
        issue.author,
        pull.head_ref,
        head_sha(st, pull),
        pull.base_ref,
        base_sha(st, pull),
        pull.draft,
        pull.merged_at is not None,
        pull.merged_at,
        pull.merge_commit_sha,
    )


def commit_view(st: State, sha: str) -> CommitView:
    commit = st.git.commit(sha)
    assert commit is not None
    return CommitView(
        sha,
        commit.message.decode("utf-8", "replace"),
        tuple(p.decode() for p in commit.parents),
        commit.tree.decode(),
    )
