"""The thin fetch around `select`: what GitHub says about the open issues, asked lazily.

One listing of open issues and one of open pull requests per tick (both conditional, so
an unchanged repository answers 304 for free); then, per candidate in age order, only
what the next rule needs: the author's permission (cached per login), the label's
events when the opt-in label decides, and the comments for claims and back-off. Last,
for the one issue that passed everything, who last edited its title and body: a trusted
author's words rewritten by someone below the trust rule are not trusted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from agent_loop_builder._select import (
    Refusal,
    RefusalCode,
    agent_pull_issues,
    oldest_first,
    static_refusal,
    thread_refusal,
    trust_refusal,
)
from agent_loop_common.claims import backoff_resetters
from agent_loop_common.commands import honour_commands
from agent_loop_common.github import Comment, GitHub, Issue, IssueEvent, NotFound
from agent_loop_common.settings import Settings
from agent_loop_common.trust import (
    LabelApplied,
    Trust,
    as_their_authors_left_them,
    label_applied,
    untrusted_issue_editor,
)

__all__ = ["IssueFinder"]


@dataclass
class IssueFinder:
    """Finds eligible issues for one tick; every answer is cached for the tick."""

    github: GitHub
    settings: Settings
    agent_login: str
    now: datetime
    retry_now: int | None = None
    """The issue the operator asked to retry now (its back-off is ignored)."""
    refused: dict[int, Refusal] = field(default_factory=dict[int, Refusal])
    """Every issue looked at and left alone this tick, with the reason."""
    trust: Trust = field(init=False)
    """Who counts as trusted (permissions asked once per login and tick)."""
    _open: list[Issue] | None = None
    _agent_prs: frozenset[int] | None = None
    _comments: dict[int, list[Comment]] = field(default_factory=dict[int, list[Comment]])
    _label_approved: dict[int, bool] = field(default_factory=dict[int, bool])
    """Issues trusted through the opt-in label (their edits were judged since it)."""

    def __post_init__(self) -> None:
        self.trust = Trust(
            self.github,
            minimum=self.settings.trusted_min_permission,
            agent_login=self.agent_login,
        )

    async def open_issues(self) -> list[Issue]:
        """Every open issue and pull request (one paginated, conditional listing)."""
        if self._open is None:
            self._open = await self.github.list_issues(state="open")
        return self._open

    async def agent_pr_issues(self, *, fresh: bool = False) -> frozenset[int]:
        """Issues with an open agent pull request; `fresh` asks GitHub again."""
        if self._agent_prs is None or fresh:
            pulls = await self.github.list_pulls(state="open")
            self._agent_prs = agent_pull_issues(
                pulls, agent_login=self.agent_login, branch_prefix=self.settings.branch_prefix
            )
        return self._agent_prs

    async def overtaken(self, number: int, *, check_pulls: bool) -> str:
        """Right before writing: why issue `number` is no longer wanted ('' when it is).

        It is closed, or (with `check_pulls`) an open agent pull request works on it.
        One conditional listing of the open issues answers both, since pull requests are
        in it too: the issue missing from it is closed (or gone), and the open pulls are
        asked again only when a pull request in it is new or changed since the selection
        (opened, reopened or edited: its `Fixes #N` may now name this issue). A listing
        of several pages would cost more than the two direct reads, so it keeps them.
        """
        before = {i.number: i for i in await self.open_issues()}
        if len(before) >= self.github.per_page:
            if (await self.github.get_issue(number)).state != "open":
                return f"#{number} was closed during the run"
            pulls_changed = True
        else:
            self._open = None
            now = await self.open_issues()
            if not any(i.number == number and i.state == "open" for i in now):
                return f"#{number} was closed during the run"
            pulls_changed = any(
                i.is_pull_request
                and (i.number not in before or before[i.number].updated_at != i.updated_at)
                for i in now
            )
        if check_pulls and pulls_changed and number in await self.agent_pr_issues(fresh=True):
            return f"an agent pull request for #{number} appeared during the run"
        return ""

    async def comments(self, number: int) -> list[Comment]:
        """The issue's comments, every page (asked once per tick)."""
        if number not in self._comments:
            self._comments[number] = await self.github.list_issue_comments(number)
        return self._comments[number]

    async def check(self, issue: Issue) -> Refusal | None:
        """Every rule of `select`, cheapest first; the refusal is also kept in `refused`."""
        refusal = await self._check(issue)
        if refusal is not None:
            self.refused[issue.number] = refusal
        return refusal

    async def _check(self, issue: Issue) -> Refusal | None:
        open_numbers = frozenset(i.number for i in await self.open_issues())
        refusal = static_refusal(
            issue, open_numbers=open_numbers, agent_pr_issues=await self.agent_pr_issues()
        )
        if refusal is not None:
            return refusal
        refusal = await self._trust(issue)
        if refusal is not None:
            return refusal
        comments = await self.comments(issue.number)
        commands = await honour_commands(
            self.github,
            issue.number,
            comments,
            kind="issue",
            trust=self.trust,
            now=self.now,
            updated_at=issue.updated_at,
        )
        if commands.stopped:
            return Refusal(
                RefusalCode.STOPPED,
                f"#{issue.number} was stopped by @{commands.stopped_by} with /agent-loop stop; "
                "a trusted /agent-loop resume lets the agents work on it again",
            )
        resetters = backoff_resetters(comments, agent_login=self.agent_login)
        await self.trust.resolve(resetters)
        as_left = await as_their_authors_left_them(
            self.github, self.trust, comments, authors={r for r in resetters if self.trust(r)}
        )
        refusal = thread_refusal(
            issue,
            as_left,
            agent_login=self.agent_login,
            now=self.now,
            trusted=self.trust,
            retry_now=issue.number == self.retry_now,
            retry_requested_at=commands.retry_requested_at,
        )
        if refusal is not None or self._label_approved.get(issue.number, False):
            return refusal
        return await self._edited_by_untrusted(issue)

    async def _trust(self, issue: Issue) -> Refusal | None:
        minimum = self.settings.trusted_min_permission
        author_permission = await self.trust.permission(issue.user.login)
        refusal = trust_refusal(
            issue,
            author_permission=author_permission,
            minimum=minimum,
            agent_login=self.agent_login,
        )
        label = self.settings.trusted_label
        if refusal is None or label is None:
            return refusal
        if label.casefold() not in (x.casefold() for x in issue.labels):
            return trust_refusal(
                issue,
                author_permission=author_permission,
                minimum=minimum,
                agent_login=self.agent_login,
                label=label,
            )
        events = await self.github.list_issue_events(issue.number)
        applied = label_applied(events, label)
        actor = applied.actor if applied is not None else None
        refusal = trust_refusal(
            issue,
            author_permission=author_permission,
            minimum=minimum,
            agent_login=self.agent_login,
            label=label,
            label_actor=actor,
            label_actor_permission=await self.trust.permission(actor) if actor else None,
        )
        if refusal is not None or applied is None:
            return refusal
        self._label_approved[issue.number] = True
        return await self._edited_since(issue, events, applied, label)

    async def _edited_since(
        self, issue: Issue, events: Sequence[IssueEvent], applied: LabelApplied, label: str
    ) -> Refusal | None:
        """The label approves the issue as it was when applied: an edit of its title or
        body since then (the same second included) by anyone below the trust rule
        withdraws the approval."""
        who = await self._untrusted_editor(issue, events, since=applied.at)
        if who is None:
            return None
        return Refusal(
            RefusalCode.UNTRUSTED,
            f"#{issue.number} was edited by {who} after the '{label}' label was applied "
            f"by @{applied.actor}; a trusted person must apply the label again (or "
            "edit the issue) for the agents to work on it",
        )

    async def _edited_by_untrusted(self, issue: Issue) -> Refusal | None:
        """A trusted author's issue whose title or body someone below the trust rule
        changed last no longer says what its author wrote: refused, like the reviewer
        leaves out such comments. Asked only of an issue that passed every other rule
        and was touched since it was written (one GraphQL request and one event listing)."""
        if issue.updated_at <= issue.created_at:
            return None
        events = await self.github.list_issue_events(issue.number)
        who = await self._untrusted_editor(issue, events, since=None)
        if who is None:
            return None
        return Refusal(
            RefusalCode.UNTRUSTED,
            f"#{issue.number} was last edited by {who}, who is below the trust rule "
            f"(needs {self.settings.trusted_min_permission}); a trusted person must edit it "
            "again for the agents to work on it",
        )

    async def _untrusted_editor(
        self, issue: Issue, events: Sequence[IssueEvent], *, since: datetime | None
    ) -> str | None:
        """Who (`@login`, or "a deleted account") below the trust rule made the last body
        edit or a title change (`renamed`) at or after `since` (any time when `None`)."""
        return await untrusted_issue_editor(
            self.github, self.trust, issue.number, events, since=since
        )

    async def possible(self) -> list[Issue]:
        """Open issues that pass the rules needing no further request, oldest first."""
        issues = await self.open_issues()
        open_numbers = frozenset(i.number for i in issues)
        agent_prs = await self.agent_pr_issues()
        return [
            issue
            for issue in oldest_first(issues)
            if static_refusal(issue, open_numbers=open_numbers, agent_pr_issues=agent_prs) is None
        ]

    async def eligible(self, among: Sequence[int] | None = None) -> AsyncIterator[Issue]:
        """Eligible issues, oldest first (or in the order of `among`, only those),
        checked one at a time as the caller asks."""
        issues = oldest_first(await self.open_issues())
        if among is not None:
            by_number = {i.number: i for i in issues}
            issues = [by_number[n] for n in among if n in by_number]
        for issue in issues:
            if await self.check(issue) is None:
                yield issue

    async def target(self, number: int) -> tuple[Issue | None, Refusal | None]:
        """One requested issue, checked by the same rules as the scheduled path."""
        issue = next((i for i in await self.open_issues() if i.number == number), None)
        if issue is None:
            try:
                issue = await self.github.get_issue(number)
            except NotFound:
                refusal = Refusal(
                    RefusalCode.MISSING, f"issue #{number} does not exist in {self.settings.repo}"
                )
                self.refused[number] = refusal
                return None, refusal
        return issue, await self.check(issue)
