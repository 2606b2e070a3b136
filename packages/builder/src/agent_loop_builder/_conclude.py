"""Ending a claimed build: write what the attempt loop's result calls for, then release.

The order matters. Right before any write the claim is renewed (unless it is fresh) and
the open issues listed again (`IssueFinder.overtaken`): the build can take many minutes, and
meanwhile a person may close the issue or another deployment may open an agent PR for it
(the run then ends as skipped). A verified change
becomes one commit and a pull request, a verified decomposition the sub-issues (both
durable writes); a decline or a rejection is answered on the issue and rests it in
back-off. The release comment says what came of the run.

The pull request body shows the tests' evidence (command, result on the base and after,
fail-to-pass tests, tampering flags). A change the tests gave no verdict on is opened as
a draft whose body says why: no tests ran (the sandbox is off, no test command was
found), or they ran and prove nothing (the same failure on the base, zero tests, a
runner or setup error on the base).
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog

from agent_loop_builder._candidates import IssueFinder
from agent_loop_builder._texts import (
    branch_name,
    commit_message,
    parse_sub_issue_marker,
    pr_body,
    rejection_comment,
    skip_comment,
)
from agent_loop_builder._writes import (
    PullRequestSpec,
    SubIssuesSpec,
    file_sub_issues,
    open_pull_request,
    post_feedback,
)
from agent_loop_common.attempts import AttemptResult, Declined, Rejected, Verified
from agent_loop_common.checks import CheckReport
from agent_loop_common.claims import Claim
from agent_loop_common.github import Issue
from agent_loop_common.records import Links, Outcome
from agent_loop_common.repo import RepoSnapshot
from agent_loop_common.runtime import RunScope, Writer
from agent_loop_common.staging import ChangePlan, DecompositionPlan, StagingPolicy
from agent_loop_common.texts import public_text

__all__ = ["HeldIssue", "conclude"]

_log = structlog.get_logger(__name__)


@dataclass
class HeldIssue:
    """The issue a run holds a claim on, and how to keep that claim alive."""

    scope: RunScope
    finder: IssueFinder
    issue: Issue
    claim: Claim

    @property
    def depth(self) -> int:
        """How many decompositions deep the issue is: 0 for a person's issue, the marker's
        depth for a sub-issue the agents filed (a copied marker counts for nothing)."""
        if not self.finder.trust.is_agent(self.issue.user.login):
            return 0
        marker = parse_sub_issue_marker(self.issue.body)
        return marker.depth if marker is not None else 0

    async def renew(self) -> None:
        """Renew the claim right before writing, unless it is fresh (`Claimer.renew`; the
        run's heartbeat renews it on its own while the run works)."""
        self.claim = await self.scope.runtime.claimer.renew(self.claim)

    async def release(self, note: str, *, ok: bool = True) -> None:
        """Release with a note saying what came of the run; a failure here changes no outcome."""
        try:
            await self.scope.runtime.claimer.release(self.claim, note, ok=ok)
        except Exception as exc:  # the claim expires by itself
            _log.warning("builder.release_failed", issue=self.issue.number, error=repr(exc))

    async def overtaken(self, *, check_pulls: bool) -> bool:
        """Right before writing: renew the claim, then make sure the work is still wanted."""
        await self.renew()
        reason = await self.finder.overtaken(self.issue.number, check_pulls=check_pulls)
        if not reason:
            return False
        self.scope.finish(Outcome.SKIPPED, reason)
        await self.release("skipped: " + reason, ok=False)
        return True


async def conclude(
    held: HeldIssue,
    result: AttemptResult,
    snapshot: RepoSnapshot,
    write: Writer,
    *,
    repository_id: str = "",
) -> None:
    """Write what `result` calls for on GitHub and set the run's outcome.

    `repository_id` (the repository's GraphQL node id, read with the base) lets a pull
    request's branch and commit be created in one request."""
    match result:
        case Verified(plan=ChangePlan() as plan):
            await _open_pull(held, plan, result.notes, snapshot, write, result.tests, repository_id)
        case Verified(plan=DecompositionPlan() as plan):
            await _file_issues(held, plan, write)
        case Declined(reason=reason):
            await _answer(
                held, write, Outcome.SKIPPED, f"declined by the builder: {reason}",
                comment=_skip_body(held, reason), rest="the builder declined the issue",
                note="skipped",
            )  # fmt: skip
        case Rejected(notes=notes):
            tries = held.scope.runtime.settings.max_tries
            await _answer(
                held, write, Outcome.REJECTED, f"not verified after {tries} tries",
                comment=_rejection_body(held, notes), rest=f"not verified after {tries} tries",
                note="rejected by the verifier",
            )  # fmt: skip
        case _:
            raise TypeError(f"unexpected attempt result {result!r}")


def _tests_section(report: CheckReport | None) -> str:
    if report is None:
        return "## Tests\n**No tests ran**: this run checked no tests.\nRun them before merging."
    return report.markdown()


async def _open_pull(
    held: HeldIssue,
    plan: ChangePlan,
    notes: str,
    snapshot: RepoSnapshot,
    write: Writer,
    tests: CheckReport | None = None,
    repository_id: str = "",
) -> None:
    scope, issue = held.scope, held.issue
    rt = scope.runtime
    async with scope.stage("apply"):
        StagingPolicy.from_settings(rt.settings).check_files(plan.files)
        if await held.overtaken(check_pulls=True):
            return
        spec = PullRequestSpec(
            issue=issue.number,
            branch=branch_name(rt.settings.branch_prefix, issue.number, issue.title),
            base_branch=snapshot.branch,
            base_sha=snapshot.sha,
            repository_id=repository_id,
            base_tree=(await snapshot.tree()).around(plan.files),
            title=public_text(plan.title, limit=200) or f"Resolve #{issue.number}",
            body=pr_body(
                issue=issue.number,
                plan=plan,
                notes=notes,
                run_id=rt.run_id,
                deployment=rt.settings.deployment_id,
                base_sha=snapshot.sha,
                tests=_tests_section(tests),
            ),
            commit_message=commit_message(issue.number, plan, rt.run_id),
            files=dict(plan.files),
            agent_login=held.finder.agent_login,
            draft=tests is None or not tests.judged,
        )
        opened = await write(open_pull_request, spec)
    scope.links = Links(pr_url=opened.url)
    scope.finish(Outcome.OPENED_PR)
    async with scope.stage("record"):
        await held.release(f"opened pull request #{opened.number}")


async def _file_issues(held: HeldIssue, plan: DecompositionPlan, write: Writer) -> None:
    scope, rt = held.scope, held.scope.runtime
    async with scope.stage("apply"):
        if await held.overtaken(check_pulls=False):
            return
        spec = SubIssuesSpec(
            spec_issue=held.issue.number,
            items=plan.items,
            summary=plan.summary,
            run_id=rt.run_id,
            deployment=rt.settings.deployment_id,
            agent_login=held.finder.agent_login,
            depth=held.depth + 1,
        )
        filed = await write(file_sub_issues, spec)
    scope.links = Links(issue_urls=list(filed.urls))
    scope.finish(Outcome.OPENED_ISSUES)
    async with scope.stage("record"):
        await held.release("split into " + ", ".join(f"#{n}" for n in filed.numbers))


def _skip_body(held: HeldIssue, reason: str) -> str:
    rt = held.scope.runtime
    return skip_comment(reason=reason, run_id=rt.run_id, deployment=rt.settings.deployment_id)


def _rejection_body(held: HeldIssue, notes: str) -> str:
    rt = held.scope.runtime
    return rejection_comment(
        tries=rt.settings.max_tries,
        notes=notes,
        run_id=rt.run_id,
        deployment=rt.settings.deployment_id,
    )


async def _answer(
    held: HeldIssue,
    write: Writer,
    outcome: Outcome,
    error: str,
    *,
    comment: str,
    rest: str,
    note: str,
) -> None:
    """End without a change: say why on the issue, rest it in back-off, release."""
    scope = held.scope
    scope.finish(outcome, error)
    async with scope.stage("record"):
        await write(post_feedback, held.issue.number, comment)
        await scope.rest(held.claim.target, rest)
        await held.release(note, ok=False)
