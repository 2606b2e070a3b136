"""The issues a merged pull request closed, held to the rule live work is held to.

An instance's problem statement is shown to a model, so it must pass the builder's own
trust rule (`agent_loop_builder.trust_refusal`: an author with at least
`AGENT_LOOP_TRUSTED_MIN_PERMISSION`, the agents' identity, or the opt-in label applied by
someone trusted) and the last-editor rule (`agent_loop_common.trust.untrusted_issue_editor`:
a title or body last changed by someone below the rule, or since the label was applied,
is not the trusted author's text any more).
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_builder import trust_refusal
from agent_loop_common.github import GitHub, Issue
from agent_loop_common.settings import Settings
from agent_loop_common.trust import Trust, label_applied, untrusted_issue_editor

__all__ = ["issue_refusal", "problem_statement"]


async def issue_refusal(
    github: GitHub, trust: Trust, settings: Settings, issue: Issue, *, edits: bool = True
) -> str:
    """Why `issue`'s text may not be shown to a model, or `""` when it may; with `edits`
    False, who last changed its body is not asked (GitHub tells it through GraphQL
    only) and its title's changes are still checked."""
    minimum = settings.trusted_min_permission
    agent = trust.agent_login
    permission = await trust.permission(issue.user.login)
    refusal = trust_refusal(issue, author_permission=permission, minimum=minimum, agent_login=agent)
    since = None
    label = settings.trusted_label
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


def problem_statement(issues: Sequence[Issue]) -> str:
    """The issues' titles and bodies as SWE-bench writes a problem statement (title, a
    line break, the body), one issue after another."""
    parts = [f"{issue.title}\n{issue.body}".rstrip() + "\n" for issue in issues]
    return "\n".join(parts)
