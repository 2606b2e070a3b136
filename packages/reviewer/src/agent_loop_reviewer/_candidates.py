"""Finding the agent PRs that need a pass: the effectful half of selection.

Reads the open PRs, keeps the agents' own (identity and branch prefix), and for each one
reads its snapshot and the reviewer's mark in memory, then lets the pure rules in
`_select` decide. A PR held by another run or resting after failures is passed over
before any model is involved. Every listing goes through the facade's ETag cache, so an
idle tick that finds nothing new is answered with 304s that do not count against the
rate limit; permissions are looked up only for authors whose feedback could matter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import structlog

from agent_loop_common.claims import backoff_resetters
from agent_loop_common.commands import honour_commands
from agent_loop_common.github import Comment, GitHub, NotFound, PullRequest
from agent_loop_common.memory import ReviewedMark, read_reviewed
from agent_loop_common.runtime import Runtime
from agent_loop_common.trust import Trust, as_their_authors_left_them, comments_edited_by_untrusted
from agent_loop_reviewer._feedback import PullSnapshot, failing_checks, people_feedback
from agent_loop_reviewer._select import Assessment, assess, block_of, is_open_agent_pull
from agent_loop_reviewer._texts import pass_history

__all__ = ["Candidate", "agent_pulls", "authors", "examine", "read_snapshot", "reread_after_claim"]

_log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Candidate:
    """An agent PR as this run saw it, and what it needs."""

    snapshot: PullSnapshot
    mark: ReviewedMark | None
    assessment: Assessment

    @property
    def pull(self) -> PullRequest:
        return self.snapshot.pull


async def agent_pulls(rt: Runtime, agent_login: str, only: int | None = None) -> list[PullRequest]:
    """The open PRs the agents opened from their branches, oldest first.

    With `only`, just that PR, and only if it is one of theirs: asking for a person's PR
    by number still never touches it.
    """
    if only is not None:
        try:
            pulls = [await rt.github.get_pull(only)]
        except NotFound:
            pulls = []
    else:
        pulls = await rt.github.list_pulls(state="open")
    prefix = rt.settings.branch_prefix
    mine = [
        p for p in pulls if is_open_agent_pull(p, agent_login=agent_login, branch_prefix=prefix)
    ]
    return sorted(mine, key=lambda p: p.number)


async def examine(
    rt: Runtime,
    pull: PullRequest,
    *,
    agent_login: str,
    trust: Trust,
    full: bool = False,
    retry_now: bool = False,
    snapshot: PullSnapshot | None = None,
) -> Candidate | None:
    """Read one PR and decide; `None` when it needs no pass or may not be worked now.

    Args:
        full: Resolve the trust of every author (the pass shows all feedback); otherwise
            only the authors of items newer than the last pass are looked up.
        retry_now: The operator asked to retry this PR now (its back-off is ignored).
        snapshot: `pull` as already read (`reread_after_claim`); read here when `None`.
    """
    if snapshot is None:
        snapshot = await read_snapshot(rt.github, pull)
    log = _log.bind(pr=pull.number, head=pull.head_sha[:7])
    commands = await honour_commands(
        rt.github,
        pull.number,
        snapshot.comments,
        kind="pr",
        trust=trust,
        now=rt.clock(),
        updated_at=pull.updated_at,
    )
    if commands.stopped:
        log.info("reviewer.pr_stopped", by=commands.stopped_by)
        return None
    resetters = backoff_resetters(snapshot.comments, agent_login=agent_login)
    await trust.resolve(resetters)
    as_left = await as_their_authors_left_them(
        rt.github, trust, snapshot.comments, authors={r for r in resetters if trust(r)}
    )
    blocked = block_of(
        replace(snapshot, comments=as_left),
        agent_login=agent_login,
        now=rt.clock(),
        own_run=rt.run_id,
        trusted=trust,
        retry_now=retry_now,
        retry_requested_at=commands.retry_requested_at,
    )
    if blocked is not None:  # a live claim or a back-off: lifted by the clock alone
        rt.depends_on_time(blocked.until)
        log.info("reviewer.pr_blocked", reason=blocked.reason)
        return None
    mark = await read_reviewed(rt.memory, pull.number)
    same_head = mark is not None and mark.head_sha == pull.head_sha
    since = mark.reviewed_at if same_head and mark is not None and not full else None
    await trust.resolve(authors(snapshot, since=since))
    assessment = assess(
        snapshot,
        mark=mark,
        history=pass_history(snapshot.comments, agent_login=agent_login),
        people=people_feedback(
            snapshot,
            agent_login=agent_login,
            trusted=trust,
            edited_by_untrusted=await comments_edited_by_untrusted(
                rt.github,
                trust,
                [
                    c
                    for c in [*snapshot.comments, *snapshot.review_comments]
                    if not trust.is_agent(c.user.login) and trust(c.user.login)
                ],
            ),
        ),
        failing=failing_checks(snapshot),
        max_check_fixes=rt.settings.reviewer_max_check_fixes,
        review_requested_at=commands.retry_requested_at,
    )
    log.info("reviewer.pr_assessed", due=assessment.due, reasons=list(assessment.reasons))
    return Candidate(snapshot, mark, assessment) if assessment.due else None


async def read_snapshot(
    github: GitHub, pull: PullRequest, *, comments: Sequence[Comment] | None = None
) -> PullSnapshot:
    """Read comments (unless given, as just read), reviews, inline comments, checks and
    statuses of `pull`'s head."""
    listed, reviews, review_comments, check_runs, statuses = await asyncio.gather(
        _given(comments) if comments is not None else github.list_issue_comments(pull.number),
        github.list_reviews(pull.number),
        github.list_review_comments(pull.number),
        github.list_check_runs(pull.head_sha),
        github.list_statuses(pull.head_sha),
    )
    return PullSnapshot(
        pull=pull,
        comments=listed,
        reviews=reviews,
        review_comments=review_comments,
        check_runs=check_runs,
        statuses=statuses,
    )


async def reread_after_claim(
    github: GitHub, seen: PullSnapshot, pull: PullRequest, *, own_comment: int | None
) -> PullSnapshot:
    """`pull` as the pass must see it once claimed, re-reading only what could have moved.

    Between this run's selection and its claim another run may have passed the PR and
    released it. Such a pass moves the head (a pushed fix) or leaves a comment (its
    summary or note), so when the head (`pull`, read after the claim) and the
    conversation apart from this run's claim comment are as selection saw them, the
    selection's snapshot still stands, reviews, inline comments and checks included:
    two requests instead of six. It is returned as read then, so the pass marks the PR
    reviewed as of that moment (`snapshot_time`) and anything newer counts as new on the
    next tick. Otherwise everything is read again.
    """
    if pull.head_sha != seen.pull.head_sha:
        return await read_snapshot(github, pull)
    comments = await github.list_issue_comments(pull.number)
    if [c for c in comments if c.id != own_comment] == list(seen.comments):
        return seen
    return await read_snapshot(github, pull, comments=comments)


async def _given(comments: Sequence[Comment]) -> Sequence[Comment]:
    return comments


def authors(snapshot: PullSnapshot, *, since: datetime | None = None) -> set[str]:
    """People who commented or reviewed on the PR (only after `since`, when given).

    Selection resolves only the authors of items newer than the last pass: an idle PR
    then costs no permission lookup at all.
    """

    def recent(*moments: datetime | None) -> bool:
        return since is None or any(m is not None and m > since for m in moments)

    found = {c.user.login for c in snapshot.comments if recent(c.created_at, c.updated_at)}
    found |= {r.user.login for r in snapshot.reviews if recent(r.submitted_at)}
    found |= {c.user.login for c in snapshot.review_comments if recent(c.created_at, c.updated_at)}
    return found
