"""Ending a pass: write its conclusion to GitHub, mark the head reviewed, set the outcome.

The order matters. A fix is pushed first (after renewing the claim, so a run that lost
its claim writes nothing); only a successful push is followed by replies and the one
summary comment, and only then is the new head marked reviewed, so the reviewer does not
review its own push. A refused push (someone pushed meanwhile) ends the pass as
`conflict` with nothing else written and no mark: the new head gets its own pass.

Every pushed fix passed the tests' hard rules first (the attempt loop runs them before
the verifier, on the exact tree that is pushed), and its summary shows that evidence.
"""

from __future__ import annotations

from agent_loop_common.attempts import AttemptResult, Declined, Rejected
from agent_loop_common.claims import Claim
from agent_loop_common.memory import ReviewedMark, mark_reviewed
from agent_loop_common.records import Outcome
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import RunScope, Writer
from agent_loop_common.staging import ChangePlan
from agent_loop_reviewer._candidates import Candidate
from agent_loop_reviewer._feedback import FeedbackItem
from agent_loop_reviewer._texts import (
    PassMarker,
    commit_message,
    rejected_body,
    stop_body,
    stop_note,
    summary_body,
)
from agent_loop_reviewer._writes import (
    FixCommit,
    NoChangesNote,
    ReplyBatch,
    ReplyPost,
    post_no_changes,
    post_note,
    post_replies,
    push_fix,
)

__all__ = ["conclude", "remember", "reply_posts"]

_PRIORITY = {"review_comment": 0, "comment": 1, "review": 2}


async def conclude(
    scope: RunScope,
    claim: Claim,
    candidate: Candidate,
    result: AttemptResult | None,
    write: Writer,
    snapshot: RepoSnapshot | None = None,
) -> None:
    """Write what `result` calls for (`None`: only say that check fixing stopped).

    `snapshot` is the head the pass read: a fix is committed on its tree as already
    read, not read again.
    """
    rt = scope.runtime
    a = candidate.assessment
    pull = candidate.pull
    head = pull.head_sha
    checks = a.checks_actionable and bool(a.failing)
    stop = stop_note(a.history.check_fixes) if a.stop_note_due else ""
    marker = PassMarker(head=head, run=rt.run_id, checks=checks, stop=bool(stop))
    if result is None:
        async with scope.stage("reply"):
            body = stop_body(check_fixes=a.history.check_fixes, marker=marker)
            await write(post_note, pull.number, body)
        await remember(scope, candidate, head, Outcome.COMMENTED)
        scope.finish(Outcome.COMMENTED)
        return
    if isinstance(result, Declined):
        outcome = Outcome.COMMENTED if a.new_people or checks else Outcome.REVIEWED_CLEAN
        note = NoChangesNote(
            pr=pull.number,
            head_sha=head,
            reason=result.reason,
            run_id=rt.run_id,
            checks=checks,
            stop=stop,
        )
        async with scope.stage("reply"):
            await write(post_no_changes, note)
        await remember(scope, candidate, head, outcome)
        scope.finish(outcome)
        return
    if isinstance(result, Rejected):
        body = rejected_body(
            head=head,
            tries=result.tries,
            notes=result.notes,
            run_id=rt.run_id,
            marker=marker,
            stop=stop,
        )
        async with scope.stage("reply"):
            await write(post_note, pull.number, body)
        await remember(scope, candidate, head, Outcome.REJECTED)
        scope.finish(Outcome.REJECTED, f"no fix passed verification: {result.notes}")
        return
    plan = result.plan
    if not isinstance(plan, ChangePlan):
        raise TypeError(f"a reviewer pass proposes a change, not {type(plan).__name__}")
    await rt.claimer.renew(claim)
    fix = FixCommit(
        pr=pull.number,
        branch=pull.head_ref,
        parent_sha=head,
        message=commit_message(
            pr=pull.number, summary=plan.summary, run_id=rt.run_id, addressed=len(plan.replies)
        ),
        files=dict(plan.files),
        parent_tree=(await snapshot.tree()).around(plan.files) if snapshot else None,
    )
    async with scope.stage("push"):
        pushed = await write(push_fix, fix)
    if not pushed.pushed:
        scope.finish(
            Outcome.CONFLICT,
            f"{pull.head_ref} moved from {head[:7]} to {pushed.found_head[:7] or 'nowhere'} "
            "during the run; the verified fix was not pushed and nothing was overwritten",
        )
        return
    summary = summary_body(
        old_head=head,
        new_head=pushed.sha,
        summary=plan.summary,
        run_id=rt.run_id,
        replies=len(plan.replies),
        tries=result.tries,
        marker=marker,
        stop=stop,
        tests=result.tests.markdown() if result.tests is not None else "",
        changed=list(plan.files),
    )
    replies = reply_posts(a.people, {r.comment_id: r.reply for r in plan.replies})
    async with scope.stage("reply"):
        await write(post_replies, ReplyBatch(pr=pull.number, replies=replies, summary=summary))
    await remember(scope, candidate, pushed.sha, Outcome.PUSHED_FIX)
    scope.finish(Outcome.PUSHED_FIX)


def reply_posts(people: tuple[FeedbackItem, ...], answers: dict[int, str]) -> list[ReplyPost]:
    """Turn the model's `{comment_id: reply}` into posts, in feedback order.

    Ids of different kinds could in principle coincide on GitHub; an inline comment
    wins over a conversation comment, which wins over a review summary.
    """
    by_id: dict[int, FeedbackItem] = {}
    for item in people:
        if item.kind not in _PRIORITY:
            continue
        known = by_id.get(item.id)
        if known is None or _PRIORITY[item.kind] < _PRIORITY[known.kind]:
            by_id[item.id] = item
    posts: list[ReplyPost] = []
    for item in sorted(by_id.values(), key=lambda i: (i.at, i.id)):
        if item.id not in answers or item.kind not in ("comment", "review", "review_comment"):
            continue
        posts.append(
            ReplyPost(
                kind=item.kind,
                comment_id=item.id,
                thread_id=item.thread_id,
                author=item.author,
                url=item.url,
                quote=item.body,
                reply=answers[item.id],
            )
        )
    return posts


async def remember(scope: RunScope, candidate: Candidate, head: str, outcome: Outcome) -> None:
    """Mark `head` reviewed as of what this pass saw (GitHub time, see `snapshot_time`)."""
    seen = candidate.assessment.seen_until
    if seen is None:
        raise ValueError("an assessment without its snapshot time cannot be remembered")
    async with scope.stage("record"):
        await mark_reviewed(
            scope.runtime.memory,
            ReviewedMark(
                pr=candidate.pull.number,
                head_sha=head,
                reviewed_at=seen,
                run_id=scope.runtime.run_id,
                outcome=outcome,
            ),
        )
