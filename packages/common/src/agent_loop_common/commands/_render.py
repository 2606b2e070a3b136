"""The two replies a command can get: the list of commands, and the target's status.

Both are built from what the thread itself holds (claim and back-off comments carry the
last run's outcome in words and in markers), so whichever side answers (the gateway on
a webhook, or an agent's scheduled poll) writes the same reply with no memory access.
Replies never start a line with the command prefix, so they can never be read as a
command (and the agents' own comments are ignored anyway).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from agent_loop_common.claims import (
    backoff_state,
    claim_state,
    format_time,
    parse_backoff,
    parse_dibs,
)
from agent_loop_common.commands._state import CommandState, ThreadKind

__all__ = ["StatusComment", "render_help", "render_status"]

_HELP_ROWS = (
    ("build", "on an issue: start the builder now (a new try also ends a back-off)"),
    ("review", "on an agent pull request: start a reviewer pass now"),
    ("stop", "leave this issue or pull request alone (webhooks and the schedule)"),
    ("resume", "lift a stop"),
    ("status", "reply with the last run's outcome and links"),
)


class _User(Protocol):
    @property
    def login(self) -> str: ...


class StatusComment(Protocol):
    """A comment as the status reply reads it (`agent_loop_common.github.Comment` fits)."""

    @property
    def id(self) -> int: ...
    @property
    def body(self) -> str: ...
    @property
    def user(self) -> _User: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime: ...
    @property
    def html_url(self) -> str: ...


def render_help(word: str | None = None) -> str:
    """The list of commands, opened by what was not understood (`word`), if given."""
    lines: list[str] = []
    if word is not None:
        shown = f"`{word}`" if word else "a command without a word"
        lines += [f"agent-loop did not understand {shown} here. It understands:", ""]
    else:
        lines += ["agent-loop understands these commands:", ""]
    lines += ["| Command | What it does |", "|---|---|"]
    lines += [f"| `/agent-loop {w}` | {text} |" for w, text in _HELP_ROWS]
    lines += [
        "",
        "Write one at the start of a line of a comment (not in a quote or a code block). "
        "Only commands from people the agents trust count; the agents answer with a reaction.",
    ]
    return "\n".join(lines)


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip() and not line.lstrip().startswith("<!--"):
            return line.strip()
    return ""


def _is_agent(comment: StatusComment, agent_login: str) -> bool:
    return comment.user.login.casefold() == agent_login.casefold()


def render_status(
    comments: Sequence[StatusComment],
    *,
    kind: ThreadKind,
    agent_login: str,
    state: CommandState,
    now: datetime,
    updated_at: datetime | None = None,
) -> str:
    """The reply to `/agent-loop status`: last run, who holds the target, stop, retry.

    Args:
        comments: The thread's comments.
        kind: `issue` or `pr`.
        agent_login: The agents' identity (only its markers count).
        state: `command_state` of the same thread.
        now: The current time (claims expire).
        updated_at: The issue's or PR's `updated_at` (a human edit resets a back-off).
    """
    what = "issue" if kind == "issue" else "pull request"
    lines = [f"**agent-loop status** of this {what}", ""]
    runs = [
        c
        for c in comments
        if _is_agent(c, agent_login) and (parse_dibs(c.body) or parse_backoff(c.body))
    ]
    if runs:
        last = max(runs, key=lambda c: (c.updated_at, c.id))
        lines.append(f"- Last run: {_first_line(last.body)} ([comment]({last.html_url}))")
    else:
        lines.append("- Last run: none yet on this thread.")
    claims = claim_state(comments, agent_login=agent_login, now=now, kind=kind)
    backoff = backoff_state(
        comments,
        issue_updated_at=updated_at or datetime.min.replace(tzinfo=now.tzinfo),
        agent_login=agent_login,
    )
    if claims.owner is not None:
        owner = claims.owner
        lines.append(
            f"- Now: run `{owner.run}` ({owner.role}) is working on it, "
            f"claim until {format_time(owner.until)}."
        )
    elif (
        backoff is not None
        and backoff.active(now)
        and not state.retry_requested_after(backoff.recorded_at)
    ):
        lines.append(f"- Now: resting after {backoff.describe()}.")
    else:
        lines.append("- Now: free.")
    if state.stopped:
        since = f" at {format_time(state.stopped_at)}" if state.stopped_at else ""
        lines.append(f"- Stopped by @{state.stopped_by}{since}: no runs until a `resume` command.")
    if state.retry_requested_at is not None:
        lines.append(
            f"- Last run requested by @{state.retry_requested_by} "
            f"at {format_time(state.retry_requested_at)}."
        )
    return "\n".join(lines)
