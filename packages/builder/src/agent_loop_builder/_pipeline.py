"""One builder tick: select -> claim -> build -> verify -> apply -> record.

Flyte-free, so plain async tests run it against the emulator; the scheduled task in
`env.py` runs the same function with the durable writes. `run_scoped` guarantees the
outer shape (claims released and a `RunRecord` written on every exit path, errors never
escaping); this module fills in the body: find an eligible issue, claim it, read the base
commit and the comments a model may see, and hand the issue to `build` (shared with the
offline replay: instructions, lessons, checks, the attempt loop), then `conclude`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import datetime

import structlog

from agent_loop_builder._build import BuildAsk, build
from agent_loop_builder._candidates import IssueFinder
from agent_loop_builder._conclude import HeldIssue, conclude
from agent_loop_builder._prompts import render_issue
from agent_loop_builder._select import Refusal, RefusalCode
from agent_loop_common.github import Comment, Issue
from agent_loop_common.records import Outcome, RunRecord, Target, TargetKind
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import DirectWriter, RunScope, Runtime, Writer, run_scoped
from agent_loop_common.trust import comments_edited_by_untrusted

__all__ = ["run_builder_tick", "scout_issues"]

_log = structlog.get_logger(__name__)

_CLAIM_RACES = 3
"""Eligible issues tried per tick when other runs win the claim race."""

_REFUSED_OUTCOMES = {
    RefusalCode.BACKED_OFF: Outcome.BACKED_OFF,
    RefusalCode.MISSING: Outcome.PREFLIGHT_FAILED,
    RefusalCode.PULL_REQUEST: Outcome.PREFLIGHT_FAILED,
}
"""The outcome of a requested issue that was refused, when not `skipped`: an issue that
does not exist, or a number that is a pull request's, was never reached
(`preflight_failed`: the CLI exits non-zero, a typo is not a skipped run)."""


async def run_builder_tick(
    runtime: Runtime,
    target: int | None = None,
    write: Writer | None = None,
    *,
    retry_now: bool = False,
    among: Sequence[int] | None = None,
) -> RunRecord | None:
    """Run one builder tick; the record, or `None` for an idle tick.

    Args:
        runtime: The run's effects (`open_runtime(settings, Role.BUILDER, ...)`).
        target: Work on this issue only, if it is eligible and trusted; otherwise the
            run records why it was refused and changes nothing on GitHub.
        write: How the durable writes run (`env.py` passes the Flyte actions); direct
            calls on the runtime's facade by default.
        retry_now: With `target`: the operator asks to retry it now, ignoring its back-off.
        among: Only these issues, in this order (a slot of a tick over many
            repositories or with `AGENT_LOOP_BUILDER_PARALLEL` above 1); each is still
            checked by every rule, and the first one claimed is worked on.
    """
    writer = write if write is not None else DirectWriter(runtime.github)

    async def body(scope: RunScope) -> None:
        await _tick(scope, target, writer, retry_now=retry_now, among=among)

    return await run_scoped(runtime, body)


async def scout_issues(runtime: Runtime) -> list[tuple[int, datetime]]:
    """The issues a tick could take, oldest first, with their age: the rules that need
    no request beyond the two listings (`static_refusal`); the slot that gets one checks
    the rest under its own run."""
    finder = IssueFinder(
        runtime.github, runtime.settings, await runtime.claimer.agent_login(), runtime.clock()
    )
    return [(issue.number, issue.created_at) for issue in await finder.possible()]


async def _tick(
    scope: RunScope,
    target: int | None,
    write: Writer,
    *,
    retry_now: bool,
    among: Sequence[int] | None,
) -> None:
    rt = scope.runtime
    finder = IssueFinder(rt.github, rt.settings, await rt.claimer.agent_login(), rt.clock())
    finder.retry_now = target if retry_now else None
    candidates = finder.eligible(among) if target is None else _requested(finder, target)
    races = _CLAIM_RACES if among is None else len(among)
    for _ in range(races):
        async with scope.stage("select"):
            issue = await anext(candidates, None)
        if issue is None:
            break
        async with scope.stage("claim"):
            claim = await scope.claim(TargetKind.ISSUE, issue.number, title=issue.title)
        if claim is None:
            finder.refused[issue.number] = Refusal(
                RefusalCode.CLAIMED, f"#{issue.number} was claimed by another run first"
            )
            continue
        scope.target = Target(
            kind=TargetKind.ISSUE,
            number=issue.number,
            title=issue.title,
            url=issue.html_url,
            created_at=issue.created_at,
        )
        async with scope.resting_on_failure(claim.target):
            await _build(HeldIssue(scope, finder, issue, claim), write)
        return
    if target is not None and scope.target is None:
        refusal = finder.refused.get(target)
        reason = str(refusal) if refusal else f"#{target} was not worked on"
        # No title: the issue may be untrusted, and records reach the distiller's model.
        scope.target = Target(kind=TargetKind.ISSUE, number=target)
        code = refusal.code if refusal is not None else None
        outcome = _REFUSED_OUTCOMES.get(code, Outcome.SKIPPED) if code else Outcome.SKIPPED
        scope.finish(outcome, reason)
    for refusal in finder.refused.values():
        if refusal.timed:  # an idle decision that holds only until the clock lifts it
            rt.depends_on_time(refusal.until)
    _log.info(
        "builder.idle" if scope.target is None else "builder.refused",
        refused={n: r.code.value for n, r in finder.refused.items()},
    )


async def _requested(finder: IssueFinder, number: int) -> AsyncIterator[Issue]:
    issue, refusal = await finder.target(number)
    if issue is not None and refusal is None:
        yield issue


async def _build(held: HeldIssue, write: Writer) -> None:
    """The claimed part of a tick: read the base and the comments, build, conclude."""
    scope, issue = held.scope, held.issue
    rt = scope.runtime
    base = await rt.github.default_branch()  # its name and head in one request
    branch = base.name
    snapshot = RepoSnapshot(
        rt.github,
        base.sha,
        branch,
        label=f"base branch {branch}",
        tree_sha=base.tree_sha,
        disk_usage_kb=base.disk_usage_kb,
    )
    comments = await _trusted_comments(held)
    ask = BuildAsk(
        number=issue.number,
        issue_text=render_issue(issue, comments),
        request=f"Title: {issue.title}\n\n{issue.body}",
        background="\n\n".join(f"Comment by @{c.user.login}:\n{c.body}" for c in comments),
        labels=tuple(issue.labels),
        may_decompose=held.depth < rt.settings.max_decomposition_depth,
        private=base.private,
    )
    result = await build(scope, ask, snapshot)
    await conclude(held, result, snapshot, scope.guarded(write), repository_id=base.repository_id)


async def _trusted_comments(held: HeldIssue) -> list[Comment]:
    """Comments a model may see: by trusted people, minus the agents' marker comments and
    minus any whose last edit someone below the trust rule made (the reviewer's rule)."""
    trust = held.finder.trust
    out: list[Comment] = []
    for comment in await held.finder.comments(held.issue.number):
        if "agent-loop:dibs" in comment.body or "agent-loop:backoff" in comment.body:
            continue
        if await trust.trusted(comment.user.login):
            out.append(comment)
    people = [c for c in out if not trust.is_agent(c.user.login)]
    tainted = await comments_edited_by_untrusted(held.scope.runtime.github, trust, people)
    return [c for c in out if c.id not in tainted]
