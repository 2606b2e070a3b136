"""What a decided agent PR left on GitHub, read as outcomes. Pure.

- `first_ci`: the first CI result on the head the builder pushed, from its check runs
  and commit statuses: `failed` if any failed, else `passed` if any passed, else `none`.
- `close_reason`: why a PR was closed unmerged. Comments and labels are untrusted text,
  so only a trusted person's (`AGENT_LOOP_TRUSTED_MIN_PERMISSION`, not the agents' own
  identity) label, or comment made from an hour before the close on, gives a reason
  (`duplicate`, `superseded`, `not_planned`); anything else, silence included, is
  `no_reason`, which counts as the agent's failure. A stranger cannot excuse a failure.
- `revert_of`: the commit on the default branch that reverted a merge within 30 days:
  its message says `This reverts commit <merge sha>` (git's own revert message, also
  kept by a squashed revert PR) or `Reverts owner/name#<PR>` (GitHub's revert button).
  Commits on the default branch were pushed or merged by someone with write access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agent_loop_common.github import CheckRun, Comment, CommitStatus, IssueEvent, PathCommit
from agent_loop_common.records import CheckResult, CloseReason

__all__ = [
    "CLOSING_COMMENT_WINDOW",
    "REVERT_WINDOW",
    "PullFacts",
    "close_reason",
    "closer",
    "first_ci",
    "revert_of",
]

REVERT_WINDOW = timedelta(days=30)
"""A revert this long after the merge still counts against the run; after it, the merge
is decided `not_reverted`."""

CLOSING_COMMENT_WINDOW = timedelta(hours=1)
"""Trusted comments from this long before the close on may give its reason."""

_FAILED_CHECKS = frozenset(
    {"failure", "timed_out", "cancelled", "action_required", "startup_failure"}
)
_PASSED_CHECKS = frozenset({"success", "neutral", "skipped"})

_LABEL_REASONS: dict[str, CloseReason] = {
    "duplicate": CloseReason.DUPLICATE,
    "superseded": CloseReason.SUPERSEDED,
    "wontfix": CloseReason.NOT_PLANNED,
    "won't fix": CloseReason.NOT_PLANNED,
    "invalid": CloseReason.NOT_PLANNED,
    "not planned": CloseReason.NOT_PLANNED,
    "not-planned": CloseReason.NOT_PLANNED,
}
_COMMENT_REASONS: tuple[tuple[re.Pattern[str], CloseReason], ...] = (
    (re.compile(r"\bduplicat(?:e|es|ed|ing)\b"), CloseReason.DUPLICATE),
    (re.compile(r"\bsupersed(?:e|es|ed|ing)\b|\breplaced by\b"), CloseReason.SUPERSEDED),
    (
        re.compile(r"\bnot planned\b|\bwon'?t fix\b|\bwontfix\b|\bnot needed\b"),
        CloseReason.NOT_PLANNED,
    ),
)
_REVERTS_COMMIT = re.compile(r"This reverts commit ([0-9a-f]{7,40})", re.IGNORECASE)
_REVERTS_PULL = re.compile(r"^Reverts ([\w.-]+/[\w.-]+)?#(\d+)\s*$", re.MULTILINE | re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class PullFacts:
    """The outcome facts read once for a PR that left the open list."""

    unresolved_threads: int | None
    first_head_sha: str
    first_ci: CheckResult | None
    merge_sha: str = ""
    merged_at: datetime | None = None
    closed_by: str = ""
    close_reason: CloseReason | None = None


def first_ci(runs: Iterable[CheckRun], statuses: Iterable[CommitStatus]) -> CheckResult:
    """The CI verdict on one commit: any failure fails it; pending runs are no result."""
    results = [r.conclusion for r in runs if r.status == "completed" and r.conclusion]
    states = [s.state for s in statuses]
    if any(c in _FAILED_CHECKS for c in results) or any(s in ("failure", "error") for s in states):
        return "failed"
    if any(c in _PASSED_CHECKS for c in results) or "success" in states:
        return "passed"
    return "none"


def _labels_by_applier(events: Sequence[IssueEvent]) -> dict[str, str]:
    """Labels on the PR after every event, each with who applied it last."""
    applied: dict[str, str] = {}
    for e in sorted(events, key=lambda e: (e.created_at, e.id)):
        if e.label is None:
            continue
        name = e.label.casefold()
        if e.event == "labeled":
            applied[name] = e.actor.login if e.actor is not None else ""
        elif e.event == "unlabeled":
            applied.pop(name, None)
    return applied


def close_reason(
    events: Sequence[IssueEvent],
    comments: Iterable[Comment],
    closed_at: datetime | None,
    trusted: Callable[[str], bool],
) -> CloseReason:
    """Why the PR was closed unmerged, as only trusted people can say.

    A trusted label decides first; then the latest trusted comment in the closing
    window that names a reason. `trusted` must be False for the agents' own identity.
    """
    for label, login in sorted(_labels_by_applier(events).items()):
        reason = _LABEL_REASONS.get(label)
        if reason is not None and login and trusted(login):
            return reason
    start = closed_at - CLOSING_COMMENT_WINDOW if closed_at is not None else None
    said = sorted(
        (c for c in comments if trusted(c.user.login) and (start is None or c.created_at >= start)),
        key=lambda c: (c.created_at, c.id),
        reverse=True,
    )
    for comment in said:
        text = comment.body.casefold()
        for pattern, reason in _COMMENT_REASONS:
            if pattern.search(text):
                return reason
    return CloseReason.NO_REASON


def closer(events: Sequence[IssueEvent]) -> str:
    """Who closed the PR last (empty when no event says)."""
    closes = [e for e in events if e.event == "closed" and e.actor is not None]
    last = max(closes, key=lambda e: (e.created_at, e.id), default=None)
    return last.actor.login if last is not None and last.actor is not None else ""


def revert_of(
    commits: Iterable[PathCommit],
    *,
    merge_sha: str,
    number: int,
    repo: str,
    merged_at: datetime,
) -> PathCommit | None:
    """The oldest commit within `REVERT_WINDOW` of the merge that reverts it, if any."""
    end = merged_at + REVERT_WINDOW
    found: list[PathCommit] = []
    for c in commits:
        if c.sha == merge_sha or c.committed_at is None:
            continue
        if not merged_at <= c.committed_at <= end:
            continue
        by_sha = any(
            merge_sha.startswith(m.group(1).lower()) for m in _REVERTS_COMMIT.finditer(c.message)
        )
        by_pull = any(
            int(m.group(2)) == number
            and (m.group(1) is None or m.group(1).casefold() == repo.casefold())
            for m in _REVERTS_PULL.finditer(c.message)
        )
        if (by_sha and merge_sha) or by_pull:
            found.append(c)
    return min(found, key=lambda c: c.committed_at or merged_at, default=None)
