"""Finding the agent PRs that need a pass: the effectful half of selection.

Reads the open PRs, keeps the agents' own (identity and branch prefix), and for each one
reads its snapshot and the reviewer's mark in memory, then lets the pure rules in
`_select` decide. A PR held by another run or resting after failures is passed over
before any model is involved.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from agent_loop_common.github import NotFound, PullRequest
from agent_loop_common.memory import ReviewedMark, read_reviewed
from agent_loop_common.runtime import Runtime
from agent_loop_reviewer._feedback import PullSnapshot, failing_checks, people_feedback
from agent_loop_reviewer._markers import pass_history
from agent_loop_reviewer._select import Assessment, assess, blocked_by, is_agent_pull
from agent_loop_reviewer._snapshot import Trust, authors, read_snapshot

__all__ = ["Candidate", "agent_pulls", "examine"]

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
    mine = [p for p in pulls if is_agent_pull(p, agent_login=agent_login, branch_prefix=prefix)]
    return sorted(mine, key=lambda p: p.number)


async def examine(
    rt: Runtime, pull: PullRequest, *, agent_login: str, trust: Trust, full: bool = False
) -> Candidate | None:
    """Read one PR and decide; `None` when it needs no pass or may not be worked now.

    Args:
        full: Resolve the trust of every author (the pass shows all feedback); otherwise
            only the authors of items newer than the last pass are looked up.
    """
    snapshot = await read_snapshot(rt.github, pull)
    log = _log.bind(pr=pull.number, head=pull.head_sha[:7])
    blocked = blocked_by(snapshot, agent_login=agent_login, now=rt.clock(), own_run=rt.run_id)
    if blocked:
        log.info("reviewer.pr_blocked", reason=blocked)
        return None
    mark = await read_reviewed(rt.memory, pull.number)
    same_head = mark is not None and mark.head_sha == pull.head_sha
    since = mark.reviewed_at if same_head and mark is not None and not full else None
    await trust.resolve(authors(snapshot, since=since))
    assessment = assess(
        snapshot,
        mark=mark,
        history=pass_history(snapshot.comments, agent_login=agent_login),
        people=people_feedback(snapshot, agent_login=agent_login, trusted=trust),
        failing=failing_checks(snapshot),
        max_check_fixes=rt.settings.reviewer_max_check_fixes,
    )
    log.info("reviewer.pr_assessed", due=assessment.due, reasons=list(assessment.reasons))
    return Candidate(snapshot, mark, assessment) if assessment.due else None
