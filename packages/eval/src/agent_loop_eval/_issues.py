"""The issues a merged pull request closed, held to the rule live work is held to, and
their text as it was when the pull request was opened.

An instance's problem statement is shown to a model, so it must pass the builder's own
trust rule (`agent_loop_builder.trust_refusal`: an author with at least
`AGENT_LOOP_TRUSTED_MIN_PERMISSION`, the agents' identity, or the opt-in label applied by
someone trusted) and the last-editor rule (`agent_loop_common.trust.untrusted_issue_editor`:
a title or body last changed by someone below the rule, or since the label was applied,
is not the trusted author's text any more).

And it must not hint at the fix. An issue's text can change after its fix's pull
request was opened ("fixed in #12 by moving the check into `parse()`"), so the text
shown is the one it had then (`text_when_opened`): the title before any later `renamed`
event, the body of the last revision of its edit history before that moment (GraphQL
`userContentEdits`; an issue filed after the pull request was opened: its text as
filed). When that text cannot be told (a revision deleted from the history, a history
GitHub did not keep from the creation, a rename whose old title is unknown), the pull
request is skipped (`edited_after_fix`) rather than shown a text that may leak the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agent_loop_builder import trust_refusal
from agent_loop_common.github import BodyHistory, GitHub, Issue, IssueEvent
from agent_loop_common.settings import Settings
from agent_loop_common.trust import Trust, label_applied, untrusted_issue_editor

__all__ = ["IssueText", "issue_refusal", "problem_statement", "text_when_opened"]


@dataclass(frozen=True)
class IssueText:
    """An issue's title and body at one moment, and whose words they are."""

    title: str
    body: str
    writers: tuple[str | None, ...] = ()
    """Who wrote the parts that differ from the text today (the last rename's actor, the
    revision's editor; `None`: an account GitHub no longer knows): the text today passed
    the trust rule already, these must pass it too."""
    unknown: str = ""
    """Why the text at that moment cannot be told (`""` when it can)."""


async def issue_refusal(
    github: GitHub,
    trust: Trust,
    settings: Settings,
    issue: Issue,
    *,
    edits: bool = True,
    events: Sequence[IssueEvent] | None = None,
) -> str:
    """Why `issue`'s text may not be shown to a model, or `""` when it may; with `edits`
    False, who last changed its body is not asked (GitHub tells it through GraphQL
    only) and its title's changes are still checked. `events`: the issue's events, when
    the caller read them already."""
    minimum = settings.trusted_min_permission
    agent = trust.agent_login
    permission = await trust.permission(issue.user.login)
    refusal = trust_refusal(issue, author_permission=permission, minimum=minimum, agent_login=agent)
    since = None
    label = settings.trusted_label
    if events is None:
        events = await github.list_issue_events(issue.number)
    if refusal is not None:
        if label is None or label.casefold() not in (x.casefold() for x in issue.labels):
            labelled = trust_refusal(
                issue, author_permission=permission, minimum=minimum, agent_login=agent, label=label
            )
            return (labelled or refusal).reason
        applied = label_applied(events, label)
        actor = applied.actor if applied is not None else None
        refusal = trust_refusal(
            issue,
            author_permission=permission,
            minimum=minimum,
            agent_login=agent,
            label=label,
            label_actor=actor,
            label_actor_permission=await trust.permission(actor) if actor else None,
        )
        if refusal is not None or applied is None:
            return refusal.reason if refusal is not None else ""
        since = applied.at
    who = await untrusted_issue_editor(github, trust, issue.number, events, since=since, body=edits)
    if who is None:
        return ""
    return (
        f"#{issue.number} was last edited by {who}, who is below the trust rule (needs {minimum})"
    )


def problem_statement(issues: Sequence[Issue | IssueText]) -> str:
    """The issues' titles and bodies as SWE-bench writes a problem statement (title, a
    line break, the body), one issue after another."""
    parts = [f"{issue.title}\n{issue.body}".rstrip() + "\n" for issue in issues]
    return "\n".join(parts)


def text_when_opened(
    issue: Issue, events: Sequence[IssueEvent], history: BodyHistory | None, opened: datetime
) -> IssueText:
    """`issue`'s title and body as they were when its fix's pull request was `opened`.

    A change in the same second as `opened` counts as after it (GitHub's timestamps are
    whole seconds), the side that shows the older text. An issue filed after `opened`
    shows its text as filed. With `history` `None` (GitHub's GraphQL API cannot tell
    it) the body is today's.

    Args:
        issue: The issue as it is now (REST).
        events: Its events (its `renamed` events carry each title change).
        history: Its body's edit history (`GitHub.body_history`).
        opened: When the pull request was opened.
    """
    writers: list[str | None] = []
    title = issue.title
    renames = sorted((e for e in events if e.event == "renamed"), key=lambda e: e.created_at)
    later = [e for e in renames if e.created_at >= opened]
    if later and issue.created_at < opened:
        if later[0].rename_from is None:
            return IssueText(
                title,
                "",
                unknown="its title was changed after that and GitHub names no earlier title",
            )
        title = later[0].rename_from
        earlier = [e for e in renames if e.created_at < opened]
        writers.append(_login(earlier[-1]) if earlier else issue.user.login)
    elif renames and issue.created_at >= opened:
        first = renames[0]
        if first.rename_from is None:
            return IssueText(
                title, "", unknown="its title was changed and GitHub names no earlier one"
            )
        title = first.rename_from
        writers.append(issue.user.login)
    body = issue.body
    last = history.last_edited_at if history is not None else None
    if history is not None and last is not None and last >= opened:
        newest = history.revisions[-1].body if history.revisions else None
        if newest is None or _same_text(newest) != _same_text(body):
            # GitHub documents `diff` as "a summary of the changes"; it answers the whole
            # body. A history whose newest revision is not today's body is not read.
            return IssueText(
                title,
                "",
                unknown="its body was edited after that and its history does not hold "
                "whole texts (its newest revision is not its body)",
            )
        if issue.created_at >= opened:
            kept = history.revisions and history.includes_creation and history.complete
            found = history.revisions[0] if kept else None
        else:
            found = history.text_before(opened)
        if found is None:
            return IssueText(
                title,
                "",
                unknown="its body was edited after that and its history does not keep the "
                "text before",
            )
        if found.body is None:
            return IssueText(
                title,
                "",
                unknown="its body was edited after that and the text before was deleted "
                "from its history",
            )
        body = found.body
        writers.append(found.editor)
    return IssueText(title, body, tuple(writers))


def _same_text(text: str) -> str:
    return text.replace("\r\n", "\n").strip()


def _login(event: IssueEvent) -> str | None:
    return event.actor.login if event.actor is not None else None
