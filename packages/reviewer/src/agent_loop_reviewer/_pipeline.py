"""One reviewer tick: select -> claim -> review -> verify -> push -> reply -> record.

The Flyte-free core. `run_reviewer_tick` picks the first agent PR that needs a pass,
claims it, re-reads it under the claim (another run may have just done the pass), lets
the agent review, the repository's tests check a fix against the head and the verifier
judge it (the shared attempt loop), and writes through a
`Writer` (its durable writes, declared once in `_writes`). Every exit
path ends recorded and released (`run_scoped`); a tick that finds nothing to do claims
nothing, calls no model and only bumps the idle counter.

A pass concludes in one of these ways, each leaving one marked comment on the PR and
the head reviewed in memory, except a conflict (the new head gets a pass of its own) and
an error (the PR rests with a backoff and is tried again later):

| outcome          | on GitHub                                           |
|------------------|-----------------------------------------------------|
| `pushed_fix`     | one commit (compare-and-swap), replies, a summary   |
| `reviewed_clean` | "no changes" comment naming the head (own review)   |
| `commented`      | "no changes" answering feedback, or "checks stopped"|
| `rejected`       | comment: no fix passed verification, nothing pushed |
| `conflict`       | nothing: someone pushed during the run              |
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import structlog

from agent_loop_common.attempts import attempt_loop
from agent_loop_common.checks import open_checks
from agent_loop_common.claims import Claim
from agent_loop_common.exposure import draw_lessons, work_kind_of
from agent_loop_common.github import NotFound
from agent_loop_common.memory import ContextView, MemoryLocation, read_context
from agent_loop_common.records import Links, Outcome, Role, RunRecord, Target, TargetKind
from agent_loop_common.repo import RepoSnapshot, repository_instructions, stale_lessons
from agent_loop_common.runtime import DirectWriter, RunScope, Runtime, Writer, run_scoped
from agent_loop_common.trust import Trust
from agent_loop_reviewer._attempt import ReviewProposer
from agent_loop_reviewer._candidates import Candidate, agent_pulls, examine, reread_after_claim
from agent_loop_reviewer._conclude import conclude
from agent_loop_reviewer._prompts import DIGEST_CHARS_PER_TOKEN, PassPrompt

__all__ = ["run_reviewer_tick", "scout_pulls"]

_log = structlog.get_logger(__name__)


async def run_reviewer_tick(
    runtime: Runtime,
    target: int | None = None,
    write: Writer | None = None,
    *,
    retry_now: bool = False,
    among: Sequence[int] | None = None,
) -> RunRecord | None:
    """Run one reviewer tick; the run's record, or `None` when nothing needed a pass.

    Args:
        runtime: The run's effects (`open_runtime(settings, Role.REVIEWER, ...)`).
        target: Only consider this PR (still only if it is an agent PR that needs a pass).
        write: How the durable writes run (`env.py` passes the Flyte actions); direct
            calls on the runtime's facade by default.
        retry_now: With `target`: the operator asks to retry it now, ignoring its back-off.
        among: Only these PRs, in this order (a slot of a tick over many repositories or
            with `AGENT_LOOP_REVIEWER_PARALLEL` above 1); each is still examined in full.
    """
    if runtime.role is not Role.REVIEWER:
        raise ValueError(f"the reviewer needs a reviewer runtime, got {runtime.role.value}")
    writer = write if write is not None else DirectWriter(runtime.github)

    async def body(scope: RunScope) -> None:
        await _tick(scope, target, writer, retry_now=retry_now and target is not None, among=among)

    return await run_scoped(runtime, body)


async def scout_pulls(runtime: Runtime) -> list[tuple[int, datetime]]:
    """The agent PRs a tick could give a pass, with their age (one conditional listing);
    the slot that gets one examines it in full under its own run."""
    pulls = await agent_pulls(runtime, await runtime.claimer.agent_login())
    return [(pull.number, pull.created_at) for pull in pulls]


async def _tick(
    scope: RunScope,
    only: int | None,
    write: Writer,
    *,
    retry_now: bool,
    among: Sequence[int] | None = None,
) -> None:
    rt = scope.runtime
    async with scope.stage("select"):
        agent_login = await rt.claimer.agent_login()
        trust = Trust(
            rt.github, minimum=rt.settings.trusted_min_permission, agent_login=agent_login
        )
        pulls = await agent_pulls(rt, agent_login, only)
    if among is not None:
        by_number = {p.number: p for p in pulls}
        pulls = [by_number[n] for n in among if n in by_number]
    for pull in pulls:
        async with scope.stage("select"):
            candidate = await examine(
                rt, pull, agent_login=agent_login, trust=trust, retry_now=retry_now
            )
        if candidate is None:
            continue
        async with scope.stage("claim"):
            claim = await scope.claim(TargetKind.PR, pull.number, title=pull.title)
        if claim is None:
            continue
        scope.target = Target(
            kind=TargetKind.PR,
            number=pull.number,
            title=pull.title,
            url=pull.html_url,
            created_at=pull.created_at,
        )
        scope.links = Links(pr_url=pull.html_url)
        async with scope.resting_on_failure(claim.target):
            await _pass(scope, claim, candidate, agent_login, trust, write, retry_now=retry_now)
        return
    if only is not None:  # the operator named a PR: say why it was not worked on
        reason, missing = await _why_not_worked(rt, only, found=bool(pulls))
        # No title: the PR may be a stranger's, and records reach the distiller's model.
        scope.target = Target(kind=TargetKind.PR, number=only)
        # A PR that does not exist was never reached: the CLI exits non-zero.
        scope.finish(Outcome.PREFLIGHT_FAILED if missing else Outcome.SKIPPED, reason)
        _log.info("reviewer.refused", target=only, reason=reason)
        return
    _log.info("reviewer.idle", agent_prs=len(pulls))


async def _why_not_worked(rt: Runtime, number: int, *, found: bool) -> tuple[str, bool]:
    """Why a requested PR got no pass, and whether it is no pull request at all (one
    more read when it was not an agent PR, and another when it is no pull request)."""
    if found:
        return f"PR #{number} needed no review pass now (or another run holds it)", False
    try:
        await rt.github.get_pull(number)
    except NotFound:
        try:  # GitHub numbers issues and pull requests together: a typo is often one
            await rt.github.get_issue(number)
        except NotFound:
            return f"PR #{number} does not exist in {rt.settings.repo}", True
        return (
            f"#{number} is an issue, not a pull request (the builder works on issues: "
            f"agent-loop run builder --issue {number})",
            True,
        )
    return f"PR #{number} is not an open pull request of the agents", False


async def _pass(
    scope: RunScope,
    claim: Claim,
    seen: Candidate,
    agent_login: str,
    trust: Trust,
    write: Writer,
    *,
    retry_now: bool,
) -> None:
    rt = scope.runtime
    number = claim.target.number
    async with scope.stage("claim"):
        pulls = await agent_pulls(rt, agent_login, number)
        fresh: Candidate | None = None
        if pulls:
            snapshot = await reread_after_claim(
                rt.github, seen.snapshot, pulls[0], own_comment=claim.comment_id
            )
            fresh = await examine(
                rt,
                snapshot.pull,
                agent_login=agent_login,
                trust=trust,
                full=True,
                retry_now=retry_now,
                snapshot=snapshot,
            )
    if fresh is None:
        scope.finish(Outcome.SKIPPED, "the PR needed no pass any more once claimed")
        return
    a = fresh.assessment
    write = scope.guarded(write)  # a pass that lost its claim writes nothing more
    if a.only_stop_note:
        await conclude(scope, claim, fresh, None, write)
        return
    pull = fresh.pull
    base = RepoSnapshot(
        rt.github, pull.base_sha, pull.base_ref, label=f"base branch {pull.base_ref}"
    )
    async with scope.stage("review"):
        context = await _context(scope, base)
        files = await rt.github.list_pull_files(number)
    context = _drawn_context(scope, context)
    rules = await repository_instructions(base, [f.filename for f in files])
    prompt = PassPrompt(
        pull=fresh.pull,
        files=files,
        assessment=a,
        max_check_fixes=rt.settings.reviewer_max_check_fixes,
        digest=context.digest,
        digest_token_budget=rt.settings.digest_token_budget,
        instructions=rules.render(level=2),
    )
    head = RepoSnapshot(
        rt.github, pull.head_sha, pull.head_ref, label=f"head commit {pull.head_sha[:7]}"
    )
    # The fix is tested against the head it applies to; the command comes from the base
    # branch, never from the pull request itself.
    async with open_checks(rt, tree=head, config=base) as checks:
        proposer = ReviewProposer(rt, prompt, head, base=base, checks=checks)
        result = await attempt_loop(scope, proposer, tries=rt.settings.max_tries, checks=checks)
        await conclude(scope, claim, fresh, result, write, head)


async def _context(scope: RunScope, base: RepoSnapshot) -> ContextView:
    """Digest and lessons, without those whose citations the base commit lacks (listed
    in the record as `stale_lessons` for the distiller to fix or retire)."""
    rt = scope.runtime
    share_from = rt.settings.share_lessons_from if rt.settings.many_repos else ()
    # The repository's visibility matters only when lessons may come from elsewhere.
    private = bool(share_from) and (await rt.github.repository()).private
    context = await read_context(
        rt.memory,
        shared=MemoryLocation.shared_from_settings(rt.settings, rt.memory.root),
        share_from=share_from,
        reader_public=not private,
    )
    scope.stale_lessons = await stale_lessons(base, context.lessons.for_role(Role.REVIEWER))
    return context.without(stale.lesson_id for stale in scope.stale_lessons)


def _drawn_context(scope: RunScope, context: ContextView) -> ContextView:
    """The context with held-out and inapplicable lessons out of its digest.

    The reviewer sees lessons through the digest (one `- [<id>]` line each); a lesson
    counts as shown when its line is within the part of the digest the prompt keeps.
    """
    rt = scope.runtime
    scope.work_kind = work_kind_of((), role=Role.REVIEWER)
    draw = draw_lessons(
        context.lessons.lessons,
        run_id=rt.run_id,
        role=Role.REVIEWER,
        kind=scope.work_kind,
        rate=rt.settings.lesson_holdout,
    )
    view = context.without(draw.hidden_ids)
    kept = view.digest[: rt.settings.digest_token_budget * DIGEST_CHARS_PER_TOKEN]
    shown = [x.id for x in draw.drawn_in if f"- [{x.id}]" in kept]
    scope.lesson_ids = shown
    scope.exposures = draw.record(shown)
    return view
