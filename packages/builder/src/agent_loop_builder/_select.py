"""Which issues the builder may work on (pure: facts in, a refusal or `None` out).

The rules, cheapest first, so the thin fetch in `candidates` asks GitHub only about
issues that passed the earlier ones:

1. `static_refusal`: an open issue (not a pull request), with no open agent pull
   request, whose `depends on #N` upstreams are all closed.
2. `trust_refusal`: written by someone with at least the configured permission (the
   repository owner has `admin`), by the agents themselves (sub-issues of a verified
   decomposition), or carrying the opt-in label applied by such a person.
3. `thread_refusal`: not claimed by another live run and not resting in back-off, as the
   agents' own markers in the comments say.

An agent pull request is recognized by `agent_loop_common.trust.is_agent_pull` (the
agents' identity *and* the branch prefix), so a person's pull request from a similar
branch, or a bot PR outside the prefix, never blocks an issue.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from agent_loop_common.agents import strip_hidden
from agent_loop_common.claims import CommentLike, backoff_state, claim_state, format_time
from agent_loop_common.github import Issue, PullRequest
from agent_loop_common.records import TargetKind
from agent_loop_common.trust import is_agent_pull, permission_at_least

__all__ = [
    "Refusal",
    "RefusalCode",
    "agent_pull_issues",
    "branch_issue",
    "oldest_first",
    "parse_depends_on",
    "static_refusal",
    "thread_refusal",
    "trust_refusal",
]

_DEPENDS = re.compile(r"\bdepends\s+on\s*:?\s*((?:#\d+[\s,;&]*(?:and\s+)?)+)", re.IGNORECASE)
_NUMBER = re.compile(r"#(\d+)")
_CLOSES = re.compile(r"\b(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)\s*:?\s+#(\d+)\b", re.IGNORECASE)


class RefusalCode(StrEnum):
    """Why an issue is not worked on (the pipeline maps `BACKED_OFF` to its own outcome)."""

    MISSING = "missing"
    PULL_REQUEST = "pull_request"
    CLOSED = "closed"
    AGENT_PR = "agent_pr"
    WAITING = "waiting"
    UNTRUSTED = "untrusted"
    CLAIMED = "claimed"
    STOPPED = "stopped"
    BACKED_OFF = "backed_off"


@dataclass(frozen=True, slots=True)
class Refusal:
    """An issue the builder leaves alone, and a reason a person can read."""

    code: RefusalCode
    reason: str
    until: datetime | None = None
    """When a time-based refusal (a live claim, a back-off) runs out by itself."""

    @property
    def timed(self) -> bool:
        """Whether the clock alone can lift this refusal (a claim or a back-off)."""
        return self.code in (RefusalCode.CLAIMED, RefusalCode.BACKED_OFF)

    def __str__(self) -> str:
        return self.reason


def parse_depends_on(body: str) -> tuple[int, ...]:
    """Issue numbers named by `depends on #N` (also `depends on #1, #2 and #3`).

    Only text a reader of the issue sees counts: a dependency hidden in an HTML
    comment would hold an issue back with no visible reason.
    """
    found: list[int] = []
    for match in _DEPENDS.finditer(strip_hidden(body)):
        for number in _NUMBER.findall(match.group(1)):
            if int(number) not in found:
                found.append(int(number))
    return tuple(found)


def branch_issue(head_ref: str, branch_prefix: str) -> int | None:
    """The issue number in an agent branch name `<prefix>issue-<N>[-slug]`, if any."""
    match = re.match(rf"{re.escape(branch_prefix)}issue-(\d+)(?:-|$)", head_ref)
    return int(match.group(1)) if match else None


def agent_pull_issues(
    pulls: Iterable[PullRequest], *, agent_login: str, branch_prefix: str
) -> frozenset[int]:
    """Issues that an open agent pull request works on (its branch or its `Fixes #N`)."""
    numbers: set[int] = set()
    for pull in pulls:
        if pull.state != "open" or not is_agent_pull(
            pull, agent_login=agent_login, branch_prefix=branch_prefix
        ):
            continue
        from_branch = branch_issue(pull.head_ref, branch_prefix)
        if from_branch is not None:
            numbers.add(from_branch)
        numbers.update(int(n) for n in _CLOSES.findall(pull.body))
    return frozenset(numbers)


def oldest_first(issues: Iterable[Issue]) -> list[Issue]:
    """Open issues that are not pull requests, oldest first (ties: lower number first)."""
    return sorted(
        (i for i in issues if i.state == "open" and not i.is_pull_request),
        key=lambda i: (i.created_at, i.number),
    )


def static_refusal(
    issue: Issue, *, open_numbers: frozenset[int], agent_pr_issues: frozenset[int]
) -> Refusal | None:
    """Refuse pull requests, closed issues, issues with an agent PR, and blocked issues.

    Args:
        issue: The issue.
        open_numbers: Numbers of every open issue and pull request; an upstream not in it
            is closed (or never existed, which blocks nothing).
        agent_pr_issues: From `agent_pull_issues`.
    """
    if issue.is_pull_request:
        return Refusal(
            RefusalCode.PULL_REQUEST,
            f"#{issue.number} is a pull request, not an issue (the reviewer works on pull "
            f"requests: agent-loop run reviewer --pr {issue.number})",
        )
    if issue.state != "open":
        return Refusal(RefusalCode.CLOSED, f"#{issue.number} is closed")
    if issue.number in agent_pr_issues:
        return Refusal(
            RefusalCode.AGENT_PR, f"#{issue.number} already has an open agent pull request"
        )
    waiting = [n for n in parse_depends_on(issue.body) if n in open_numbers and n != issue.number]
    if waiting:
        upstreams = ", ".join(f"#{n}" for n in waiting)
        return Refusal(RefusalCode.WAITING, f"#{issue.number} waits for {upstreams} to close")
    return None


def trust_refusal(
    issue: Issue,
    *,
    author_permission: str,
    minimum: str,
    agent_login: str,
    label: str | None = None,
    label_actor: str | None = None,
    label_actor_permission: str | None = None,
) -> Refusal | None:
    """Refuse issues from untrusted sources (see the module docstring).

    Args:
        issue: The issue.
        author_permission: The author's repository role.
        minimum: `settings.trusted_min_permission`.
        agent_login: The agents' identity (their own sub-issues are trusted).
        label: The opt-in label (`settings.trusted_label`), if configured.
        label_actor: Who applied that label last (see `label_applier`).
        label_actor_permission: That person's repository role.
    """
    author = issue.user.login
    if author.casefold() == agent_login.casefold():
        return None
    if permission_at_least(author_permission, minimum):
        return None
    labelled = label is not None and label.casefold() in (x.casefold() for x in issue.labels)
    if (
        labelled
        and label_actor is not None
        and permission_at_least(label_actor_permission or "none", minimum)
    ):
        return None
    reason = f"#{issue.number} is not from a trusted source: author @{author} has {author_permission} permission (needs {minimum})"
    if labelled:
        who = f"@{label_actor} ({label_actor_permission or 'none'})" if label_actor else "unknown"
        reason += f", and the label '{label}' was applied by {who}"
    elif label is not None:
        reason += f", and it has no '{label}' label"
    return Refusal(RefusalCode.UNTRUSTED, reason)


def thread_refusal(
    issue: Issue,
    comments: Sequence[CommentLike],
    *,
    agent_login: str,
    now: datetime,
    trusted: Callable[[str], bool] | None = None,
    retry_now: bool = False,
    retry_requested_at: datetime | None = None,
) -> Refusal | None:
    """Refuse issues claimed by a live run or resting in back-off, per the markers.

    Args:
        trusted: Whose comments may reset a back-off (see `backoff_state`).
        retry_now: The operator asked to retry this issue now: a back-off is ignored
            (a live claim never is).
        retry_requested_at: When a trusted `/agent-loop build` asked for a run: a
            back-off recorded before it no longer holds.
    """
    state = claim_state(comments, agent_login=agent_login, now=now, kind=TargetKind.ISSUE)
    if state.owner is not None:
        return Refusal(
            RefusalCode.CLAIMED,
            f"#{issue.number} is claimed by run {state.owner.run} until {format_time(state.owner.until)}",
            until=state.owner.until,
        )
    if retry_now:
        return None
    backoff = backoff_state(
        comments, issue_updated_at=issue.updated_at, agent_login=agent_login, trusted=trusted
    )
    requested = retry_requested_at is not None and (
        backoff is None or retry_requested_at > backoff.recorded_at
    )
    if backoff is not None and backoff.active(now) and not requested:
        return Refusal(
            RefusalCode.BACKED_OFF,
            f"#{issue.number} is backed off: {backoff.describe()}; to retry it now: "
            f"agent-loop run builder --issue {issue.number} --retry-now",
            until=backoff.until,
        )
    return None
