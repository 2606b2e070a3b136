"""Recognising the agents' own pull requests and who applied a label (pure).

A pull request is the agents' only when their identity opened it *and* its branch is
under their prefix, never "same user as the token": a person sharing the token's
account, or another tool using it, keeps their pull requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from agent_loop_common.github import IssueEvent, PullRequest

__all__ = ["LabelApplied", "is_agent_pull", "label_applied", "label_applier"]


def is_agent_pull(pull: PullRequest, *, agent_login: str, branch_prefix: str) -> bool:
    """Whether the agents opened `pull`: their identity and their branch prefix."""
    return pull.user.login.casefold() == agent_login.casefold() and pull.head_ref.startswith(
        branch_prefix
    )


@dataclass(frozen=True, slots=True)
class LabelApplied:
    """The last time a label was applied: by whom (`None`: a deleted account) and when."""

    actor: str | None
    at: datetime


def label_applied(events: Sequence[IssueEvent], label: str) -> LabelApplied | None:
    """The last `labeled` event of `label`, or `None` when it was never applied."""
    found: LabelApplied | None = None
    for event in events:
        if event.event == "labeled" and (event.label or "").casefold() == label.casefold():
            actor = event.actor.login if event.actor is not None else None
            found = LabelApplied(actor, event.created_at)
    return found


def label_applier(events: Sequence[IssueEvent], label: str) -> str | None:
    """Login of whoever applied `label` last (the `labeled` event), or `None`."""
    applied = label_applied(events, label)
    return applied.actor if applied is not None else None
