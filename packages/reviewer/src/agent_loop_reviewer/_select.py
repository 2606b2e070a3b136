"""Which agent PRs need a reviewer pass (pure: snapshots and marks in, decisions out).

A PR is the reviewer's only when the agents' identity opened it from a branch under the
agents' prefix (never "any PR by the token's owner": a person sharing the token's
account, or another tool using it, keeps their PRs). Such a PR needs a pass when

- its head commit is not the one the reviewer last reviewed (a new agent PR, or a push
  by someone else), or
- trusted people left feedback newer than the last pass (conversation comments, review
  summaries, inline comments; an edit counts as new), or
- a check run or status on the head failed after the last pass, while check-fix
  attempts remain (`AGENT_LOOP_REVIEWER_MAX_CHECK_FIXES`), or
- those attempts are used up, checks still fail, and the PR has not been told yet, or
- a trusted person asked for one with `/agent-loop review` after the last pass.

A PR a trusted person stopped with `/agent-loop stop` gets no pass until `/agent-loop
resume` (the candidates' reading of the thread decides that before these rules).
Anything else costs no claim and no model call. "Newer" always compares GitHub's
timestamps with the GitHub time the last pass had seen (`snapshot_time`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agent_loop_common.claims import backoff_state, claim_state
from agent_loop_common.github import PullRequest
from agent_loop_common.memory import ReviewedMark
from agent_loop_common.records import TargetKind
from agent_loop_common.trust import is_agent_pull
from agent_loop_reviewer._feedback import FeedbackItem, PullSnapshot, snapshot_time
from agent_loop_reviewer._texts import PassHistory

__all__ = ["Assessment", "Block", "assess", "block_of", "blocked_by", "is_open_agent_pull"]


def is_open_agent_pull(pull: PullRequest, *, agent_login: str, branch_prefix: str) -> bool:
    """Whether `pull` is an open PR the agents opened from one of their branches."""
    return pull.state == "open" and is_agent_pull(
        pull, agent_login=agent_login, branch_prefix=branch_prefix
    )


@dataclass(frozen=True, slots=True)
class Block:
    """Why a PR may not be worked on now, and when the clock alone lifts that."""

    reason: str
    until: datetime
    """When the claim expires or the back-off ends."""


def block_of(
    snapshot: PullSnapshot,
    *,
    agent_login: str,
    now: datetime,
    own_run: str = "",
    trusted: Callable[[str], bool] | None = None,
    retry_now: bool = False,
    retry_requested_at: datetime | None = None,
) -> Block | None:
    """What keeps the PR from being worked on now (`None` when nothing does): a live
    claim or a back-off.

    `now` is the runner's clock, the same clock that wrote the claim and backoff expiry
    times being compared. A live claim of `own_run` (this run, after claiming) is no block.
    Only `trusted` people's comments reset a back-off; `retry_now` (the operator's
    `--retry-now`) ignores it, and so does a trusted `/agent-loop review` written after
    the back-off (`retry_requested_at`).
    """
    claim = claim_state(snapshot.comments, agent_login=agent_login, now=now, kind=TargetKind.PR)
    if claim.owner is not None and claim.owner.run != own_run:
        return Block(f"claimed by run {claim.owner.run} ({claim.owner.role})", claim.owner.until)
    if retry_now:
        return None
    backoff = backoff_state(
        snapshot.comments,
        issue_updated_at=snapshot.pull.updated_at,
        agent_login=agent_login,
        trusted=trusted,
    )
    requested = retry_requested_at is not None and (
        backoff is None or retry_requested_at > backoff.recorded_at
    )
    if backoff is not None and backoff.active(now) and not requested:
        number = snapshot.pull.number
        return Block(
            f"backed off: {backoff.describe()}; to retry it now: "
            f"agent-loop run reviewer --pr {number} --retry-now",
            backoff.until,
        )
    return None


def blocked_by(
    snapshot: PullSnapshot,
    *,
    agent_login: str,
    now: datetime,
    own_run: str = "",
    trusted: Callable[[str], bool] | None = None,
    retry_now: bool = False,
    retry_requested_at: datetime | None = None,
) -> str:
    """Why the PR may not be worked on now ("" when it may): `block_of`'s reason."""
    block = block_of(
        snapshot,
        agent_login=agent_login,
        now=now,
        own_run=own_run,
        trusted=trusted,
        retry_now=retry_now,
        retry_requested_at=retry_requested_at,
    )
    return block.reason if block is not None else ""


@dataclass(frozen=True, slots=True)
class Assessment:
    """Whether a PR needs a pass, why, and what is new since the last one."""

    due: bool
    reasons: tuple[str, ...]
    new_head: bool
    """The head is not the one last reviewed."""
    people: tuple[FeedbackItem, ...]
    """All trusted people's feedback (shown to the model, new or not)."""
    new_people: tuple[FeedbackItem, ...]
    """The part of `people` newer than the last pass."""
    failing: tuple[FeedbackItem, ...]
    """Failing checks and statuses on the head."""
    new_failing: tuple[FeedbackItem, ...]
    """The part of `failing` newer than the last pass."""
    checks_actionable: bool
    """Check-fix attempts remain, so failing checks are work to do."""
    stop_note_due: bool
    """Attempts are used up, checks fail, and the PR has not been told."""
    history: PassHistory = field(default_factory=PassHistory)
    seen_until: datetime | None = None
    """GitHub time this snapshot reaches (becomes `reviewed_at` of the pass)."""

    @property
    def only_stop_note(self) -> bool:
        """Whether the only work is to say that check fixing stopped (no model needed)."""
        return self.stop_note_due and not (self.new_head or self.new_people)


def assess(
    snapshot: PullSnapshot,
    *,
    mark: ReviewedMark | None,
    history: PassHistory,
    people: Sequence[FeedbackItem],
    failing: Sequence[FeedbackItem],
    max_check_fixes: int,
    review_requested_at: datetime | None = None,
) -> Assessment:
    """Decide whether the PR needs a pass (see the module docstring for the rules).

    A trusted `/agent-loop review` newer than the last pass (`review_requested_at`)
    makes a pass due even when nothing else changed.
    """
    head = snapshot.pull.head_sha
    since = mark.reviewed_at if mark is not None else None
    new_head = mark is None or mark.head_sha != head
    new_people = tuple(i for i in people if since is None or i.at > since)
    new_failing = tuple(i for i in failing if new_head or since is None or i.at > since)
    actionable = history.check_fixes < max_check_fixes
    stop_due = max_check_fixes > 0 and not actionable and bool(failing) and not history.stopped
    reasons: list[str] = []
    if new_head:
        before = f" (last reviewed {mark.head_sha[:7]})" if mark is not None else ""
        reasons.append(f"head {head[:7]} not reviewed yet{before}")
    if new_people:
        reasons.append(f"{len(new_people)} new trusted feedback item(s)")
    if new_failing and actionable:
        reasons.append(
            f"{len(new_failing)} new failing check(s), "
            f"fix attempt {history.check_fixes + 1} of {max_check_fixes}"
        )
    if stop_due:
        reasons.append(f"check fixes used up ({history.check_fixes}/{max_check_fixes})")
    if review_requested_at is not None and (since is None or review_requested_at > since):
        reasons.append("a review was requested with /agent-loop review")
    due = bool(reasons)
    if not due:
        reasons.append("nothing new since the last pass")
    return Assessment(
        due=due,
        reasons=tuple(reasons),
        new_head=new_head,
        people=tuple(people),
        new_people=new_people,
        failing=tuple(failing),
        new_failing=new_failing,
        checks_actionable=actionable,
        stop_note_due=stop_due,
        history=history,
        seen_until=snapshot_time(snapshot),
    )
