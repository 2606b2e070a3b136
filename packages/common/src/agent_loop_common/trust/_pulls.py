"""Recognising the agents' own pull requests and who applied a label (pure).

A pull request is the agents' only when their identity opened it *and* its branch is
under their prefix, never "same user as the token": a person sharing the token's
account, or another tool using it, keeps their pull requests.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_common.github import IssueEvent, PullRequest

__all__ = ["is_agent_pull", "label_applier"]


def is_agent_pull(pull: PullRequest, *, agent_login: str, branch_prefix: str) -> bool:
    """Whether the agents opened `pull`: their identity and their branch prefix."""
    return pull.user.login.casefold() == agent_login.casefold() and pull.head_ref.startswith(
        branch_prefix
    )


def label_applier(events: Sequence[IssueEvent], label: str) -> str | None:
    """Login of whoever applied `label` last (the `labeled` event), or `None`."""
    actor: str | None = None
    for event in events:
        if event.event == "labeled" and (event.label or "").casefold() == label.casefold():
            actor = event.actor.login if event.actor is not None else None
    return actor
