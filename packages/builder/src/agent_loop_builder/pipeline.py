"""One builder tick: select -> claim -> build -> verify -> apply -> record.

Flyte-free, so plain async tests run it against the emulator; the scheduled task in
`env.py` runs the same function with the durable `@env.task` writes. `run_scoped`
guarantees the outer shape (claims released and a `RunRecord` written on every exit
path, errors never escaping); this module fills in the body. The `record` stage is the
outcome's trace on GitHub: the feedback comment and back-off marker of a failed run and
the release of the claim with a note saying what came of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import structlog

from agent_loop_builder.apply import BuilderWrites, DirectWrites, PullRequestSpec, SubIssuesSpec
from agent_loop_builder.build import BuildJob, BuildResult, build_and_verify
from agent_loop_builder.candidates import IssueFinder
from agent_loop_builder.prompts import build_prompt, render_context, render_issue
from agent_loop_builder.select import Refusal, RefusalCode
from agent_loop_builder.snapshot import BaseSnapshot
from agent_loop_builder.texts import (
    branch_name,
    commit_message,
    pr_body,
    rejection_comment,
    skip_comment,
)
from agent_loop_common.claims import Claim, ClaimLost
from agent_loop_common.claims import Target as ClaimTarget
from agent_loop_common.github import Comment, Issue
from agent_loop_common.memory import read_context
from agent_loop_common.records import Links, Outcome, RunRecord, Target, TargetKind
from agent_loop_common.runtime import RunScope, Runtime, run_scoped

__all__ = ["run_builder_tick"]

_log = structlog.get_logger(__name__)

_CLAIM_RACES = 3
"""Eligible issues tried per tick when other runs win the claim race."""


async def run_builder_tick(
    runtime: Runtime, issue: int | None = None, *, writes: BuilderWrites | None = None
) -> RunRecord | None:
    """Run one builder tick; the record, or `None` for an idle tick.

    Args:
        runtime: The run's effects (`open_runtime(settings, Role.BUILDER, ...)`).
        issue: Work on this issue only, if it is eligible and trusted; otherwise the
            run records why it was refused and changes nothing on GitHub.
        writes: The durable writes (`env.py` passes the Flyte tasks); direct calls on
            the runtime's facade by default.
    """
    effects = writes if writes is not None else DirectWrites(runtime.github)

    async def body(scope: RunScope) -> None:
        await _tick(scope, issue, effects)

    return await run_scoped(runtime, body)


async def _tick(scope: RunScope, target: int | None, writes: BuilderWrites) -> None:
    rt = scope.runtime
    finder = IssueFinder(rt.github, rt.settings, await rt.claimer.agent_login(), rt.clock())
    candidates = finder.eligible() if target is None else _requested(finder, target)
    for _ in range(_CLAIM_RACES):
        async with scope.stage("select"):
            issue = await anext(candidates, None)
        if issue is None:
            break
        async with scope.stage("claim"):
            claim = await rt.claimer.claim("issue", issue.number)
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
        try:
            await _Work(scope, finder, issue, claim, writes).run()
        except ClaimLost:
            raise
        except Exception as exc:
            await _back_off_quietly(rt, issue.number, exc)
            raise
        return
    if target is not None and scope.target is None:
        refusal = finder.refused.get(target)
        reason = str(refusal) if refusal else f"#{target} was not worked on"
        # No title: the issue may be untrusted, and records reach the distiller's model.
        scope.target = Target(kind=TargetKind.ISSUE, number=target)
        backed_off = refusal is not None and refusal.code is RefusalCode.BACKED_OFF
        scope.finish(Outcome.BACKED_OFF if backed_off else Outcome.SKIPPED, reason)
    _log.info(
        "builder.idle" if scope.target is None else "builder.refused",
        refused={n: r.code.value for n, r in finder.refused.items()},
    )


async def _requested(finder: IssueFinder, number: int) -> AsyncIterator[Issue]:
    issue, refusal = await finder.target(number)
    if issue is not None and refusal is None:
        yield issue


async def _back_off_quietly(rt: Runtime, number: int, exc: Exception) -> None:
    """A failed run rests its issue too, so a persistent failure cannot burn every tick."""
    try:
        await rt.claimer.record_failure(
            ClaimTarget.of("issue", number), f"the run stopped with {type(exc).__name__}"
        )
    except Exception as nested:
        _log.warning("builder.backoff_failed", issue=number, error=repr(nested))


@dataclass
class _Work:
    """The claimed part of a tick."""

    scope: RunScope
    finder: IssueFinder
    issue: Issue
    claim: Claim
    writes: BuilderWrites

    async def heartbeat(self, *, force: bool = False) -> None:
        """Renew the claim when half its time is gone, or always (`force`, before a write)."""
        rt = self.scope.runtime
        if force or self.claim.until - rt.clock() < rt.settings.claim_ttl / 2:
            self.claim = await rt.claimer.extend(self.claim)

    async def _release(self, note: str) -> None:
        """Release with a note saying what came of the run; a failure here changes no outcome."""
        try:
            await self.scope.runtime.claimer.release(self.claim, note)
        except Exception as exc:  # the claim expires by itself
            _log.warning("builder.release_failed", issue=self.issue.number, error=repr(exc))

    async def run(self) -> None:
        rt, issue = self.scope.runtime, self.issue
        repo = await rt.github.repository()
        base_sha = await rt.github.get_ref(f"heads/{repo.default_branch}")
        if base_sha is None:
            raise LookupError(f"the default branch {repo.default_branch!r} has no commit")
        snapshot = BaseSnapshot(rt.github, base_sha, repo.default_branch)
        comments = await self._trusted_comments()
        context_block = await self._context()
        issue_text = render_issue(issue, comments)
        job = BuildJob(
            number=issue.number,
            prompt=build_prompt(
                issue_block=issue_text,
                context_block=context_block,
                number=issue.number,
                tries=rt.settings.max_tries,
            ),
            issue_text=issue_text,
            request=f"Title: {issue.title}\n\n{issue.body}",
            background="\n\n".join(f"Comment by @{c.user.login}:\n{c.body}" for c in comments),
            snapshot=snapshot,
            heartbeat=self.heartbeat,
        )
        result = await build_and_verify(self.scope, job)
        if result.kind == "change":
            await self._open_pull(result, snapshot)
        elif result.kind == "decomposition":
            await self._file_issues(result)
        elif result.kind == "skipped":
            await self._skip(result.notes)
        else:
            await self._reject(result.notes)

    async def _trusted_comments(self) -> list[Comment]:
        """Comments a model may see: by trusted people, minus the agents' marker comments."""
        out: list[Comment] = []
        for comment in await self.finder.comments(self.issue.number):
            if "agent-loop:dibs" in comment.body or "agent-loop:backoff" in comment.body:
                continue
            if await self.finder.is_trusted(comment.user.login):
                out.append(comment)
        return out

    async def _context(self) -> str:
        """The budgeted digest and lessons; a memory failure costs the context, not the run."""
        rt = self.scope.runtime
        try:
            view = await read_context(rt.memory)
        except Exception as exc:
            _log.warning("builder.context_unavailable", error=repr(exc))
            return ""
        block, ids = render_context(view, token_budget=rt.settings.digest_token_budget)
        self.scope.lesson_ids.extend(ids)
        return block

    async def _overtaken(self, *, check_pulls: bool) -> bool:
        """Right before writing: renew the claim, then make sure the work is still wanted.

        The build can take many minutes; meanwhile a person may close the issue, or
        another deployment may open an agent PR for it. Either ends the run as skipped.
        """
        await self.heartbeat(force=True)
        number = self.issue.number
        reason = ""
        if (await self.scope.runtime.github.get_issue(number)).state != "open":
            reason = f"#{number} was closed during the run"
        elif check_pulls and number in await self.finder.agent_pr_issues(fresh=True):
            reason = f"an agent pull request for #{number} appeared during the run"
        if not reason:
            return False
        self.scope.finish(Outcome.SKIPPED, reason)
        await self._release("skipped: " + reason)
        return True

    async def _open_pull(self, result: BuildResult, snapshot: BaseSnapshot) -> None:
        rt, issue = self.scope.runtime, self.issue
        plan = result.change
        assert plan is not None
        async with self.scope.stage("apply"):
            rt.settings.staging_policy().check_files(plan.files)
            if await self._overtaken(check_pulls=True):
                return
            spec = PullRequestSpec(
                issue=issue.number,
                branch=branch_name(rt.settings.branch_prefix, issue.number, issue.title),
                base_branch=snapshot.branch,
                base_sha=snapshot.sha,
                title=plan.title,
                body=pr_body(
                    issue=issue.number,
                    plan=plan,
                    notes=result.notes,
                    run_id=rt.run_id,
                    deployment=rt.settings.deployment_id,
                    base_sha=snapshot.sha,
                ),
                commit_message=commit_message(issue.number, plan, rt.run_id),
                files=dict(plan.files),
            )
            opened = await self.writes.open_pull_request(spec)
        self.scope.links = Links(pr_url=opened.url)
        self.scope.finish(Outcome.OPENED_PR)
        async with self.scope.stage("record"):
            await self._release(f"opened pull request #{opened.number}")

    async def _file_issues(self, result: BuildResult) -> None:
        rt, issue = self.scope.runtime, self.issue
        plan = result.decomposition
        assert plan is not None
        async with self.scope.stage("apply"):
            if await self._overtaken(check_pulls=False):
                return
            spec = SubIssuesSpec(
                spec_issue=issue.number,
                items=plan.items,
                summary=plan.summary,
                run_id=rt.run_id,
                deployment=rt.settings.deployment_id,
            )
            filed = await self.writes.file_sub_issues(spec)
        self.scope.links = Links(issue_urls=list(filed.urls))
        self.scope.finish(Outcome.OPENED_ISSUES)
        async with self.scope.stage("record"):
            numbers = ", ".join(f"#{n}" for n in filed.numbers)
            await self._release(f"split into {numbers}")

    async def _skip(self, reason: str) -> None:
        rt = self.scope.runtime
        self.scope.finish(Outcome.SKIPPED, f"declined by the builder: {reason}")
        async with self.scope.stage("record"):
            body = skip_comment(
                reason=reason, run_id=rt.run_id, deployment=rt.settings.deployment_id
            )
            await self.writes.post_feedback(self.issue.number, body)
            await rt.claimer.record_failure(self.claim.target, "the builder declined the issue")
            await self._release("skipped")

    async def _reject(self, notes: str) -> None:
        rt = self.scope.runtime
        tries = rt.settings.max_tries
        self.scope.finish(Outcome.REJECTED, f"not verified after {tries} tries")
        async with self.scope.stage("record"):
            body = rejection_comment(
                tries=tries, notes=notes, run_id=rt.run_id, deployment=rt.settings.deployment_id
            )
            await self.writes.post_feedback(self.issue.number, body)
            await rt.claimer.record_failure(self.claim.target, f"not verified after {tries} tries")
            await self._release("rejected by the verifier")
