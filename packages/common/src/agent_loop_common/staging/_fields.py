"""Shared pieces of the staging tools: refusal text, argument checks, the decline tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Protocol

from pydantic import Field

from agent_loop_common.staging._errors import PolicyViolation, StagingError
from agent_loop_common.staging._policy import StagingPolicy

__all__ = [
    "REFUSAL_PREFIX",
    "REOPENED_NOTE",
    "StagingTool",
    "checked_text",
    "decline_tool",
    "refused",
]

REFUSAL_PREFIX = "Refused: "
"""Start of every tool result that refused a call, so traces can mark the step failed."""

REOPENED_NOTE = (
    " Note: this edit withdrew your earlier submission because the staged content "
    "changed; submit again when you are done."
)

StagingTool = Callable[..., Awaitable[str]]
"""An async tool function the Agent can register."""

Reason = Annotated[str, Field(description="Why, in a few sentences a maintainer can act on.")]

_DECLINE_DOCS = {
    "skip_issue": (
        "Decline to work on this issue and say why (unclear, already done, out of scope, "
        "needs a human decision). Nothing is changed in the repository."
    ),
    "no_changes": (
        "Finish without changing code and say why (the change is correct and every "
        "feedback point is already handled or answered). Nothing is pushed."
    ),
}


class _Declinable(Protocol):
    def decline(self, reason: str) -> None: ...


def refused(exc: StagingError) -> str:
    """The tool result for a refused call."""
    return f"{REFUSAL_PREFIX}{exc}"


def checked_text(
    name: str, value: object, limit: int, *, required: bool = True, single_line: bool = False
) -> str:
    """Return `value` stripped, refusing a non-string, an empty required or an oversize value.

    `single_line` folds line breaks into spaces (a title with a stray newline is still a
    good title) instead of refusing it.
    """
    if not isinstance(value, str):
        raise PolicyViolation(f"{name} must be a string, got {type(value).__name__}.")
    text = value.strip()
    if single_line:
        text = " ".join(text.split())
    if required and not text:
        raise PolicyViolation(f"{name} is empty: write a {name}.")
    if len(text) > limit:
        raise PolicyViolation(
            f"{name} is {len(text)} characters; the limit is {limit}. Shorten it."
        )
    return text


def decline_tool(stage: _Declinable, policy: StagingPolicy, name: str) -> StagingTool:
    """`skip_issue(reason)` (builder) or `no_changes(reason)` (reviewer) over `stage`."""

    async def decline(reason: Reason) -> str:
        try:
            text = checked_text("reason", reason, policy.max_body_chars)
        except StagingError as exc:
            return refused(exc)
        stage.decline(text)
        return "Recorded. Reply with a short final message; do not call more tools."

    decline.__name__ = decline.__qualname__ = name
    decline.__doc__ = _DECLINE_DOCS[name]
    return decline
