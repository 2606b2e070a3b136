"""What a thread's commands add up to: stopped or not, retry asked, what to acknowledge.

Both ways the agents notice a command use this one function, so they agree: the
gateway, when a comment arrives by webhook, and each agent's scheduled poll, when it
reads the thread of a target. The rules:

- Only comments by trusted people count (the caller's predicate, the same trust rule
  as for issues); the agents' own comments never count. Commands from anyone else are
  listed in `ignored` for the logs and otherwise have no effect.
- `stop` and `resume`: the latest one wins. A stopped target gets no run, from a
  webhook or from cron, until a trusted `resume`.
- `build` (on an issue) and `review` (on a pull request) ask for a run now. The time of
  the latest one is `retry_requested_at`: a back-off recorded before it no longer holds.
  They do not lift a stop.
- `status` asks for a reply; an unknown word (or `build` on a PR, `review` on an issue)
  gets the list of commands.
- Each trusted command comment is acknowledged once, with a reaction by the agents'
  identity (plus the reply above, if any). The caller passes the ids of comments the
  agents already reacted to; the others are `pending`.

Pure: comments and a trust predicate in, a `CommandState` out.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, Protocol

from agent_loop_common.commands._parse import Command, parse_commands

__all__ = [
    "REACTIONS",
    "CommandComment",
    "CommandState",
    "IgnoredCommand",
    "PendingCommand",
    "Reaction",
    "Reply",
    "ThreadKind",
    "command_authors",
    "command_state",
]

ThreadKind = Literal["issue", "pr"]
"""Where a command was written: an issue, or a pull request's conversation."""

Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]
"""GitHub's reaction contents."""

Reply = Literal["status", "help"]
"""A command answered with a comment, not only a reaction."""

REACTIONS: Final[dict[str, Reaction]] = {
    "build": "rocket",
    "review": "rocket",
    "stop": "+1",
    "resume": "+1",
    "status": "eyes",
}
"""The acknowledgement of each known command; anything else gets `confused` and help."""

_RETRY_WORD: Final[dict[ThreadKind, str]] = {"issue": "build", "pr": "review"}


class _User(Protocol):
    @property
    def login(self) -> str: ...


class CommandComment(Protocol):
    """The part of a comment this module reads (`agent_loop_common.github.Comment` fits)."""

    @property
    def id(self) -> int: ...
    @property
    def body(self) -> str: ...
    @property
    def user(self) -> _User: ...
    @property
    def created_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class PendingCommand:
    """A trusted command the agents have not acknowledged yet."""

    comment_id: int
    author: str
    at: datetime
    """When the comment was written."""
    command: Command
    reaction: Reaction
    """The reaction that acknowledges it."""
    reply: Reply | None
    """The comment it also needs, if any."""
    starts_run: bool
    """Whether it asks for a run now (`build`, `review`, `resume`)."""


@dataclass(frozen=True, slots=True)
class IgnoredCommand:
    """A command by someone who is not trusted: no effect, no reply, only a log line."""

    comment_id: int
    author: str
    word: str


@dataclass(frozen=True, slots=True)
class CommandState:
    """What the commands in one thread add up to (see the module docstring)."""

    stopped: bool = False
    """A trusted `stop` is in force: no run of any agent on this target."""
    stopped_by: str | None = None
    stopped_at: datetime | None = None
    retry_requested_at: datetime | None = None
    """Time of the latest trusted `build` (issue) or `review` (PR)."""
    retry_requested_by: str | None = None
    pending: tuple[PendingCommand, ...] = ()
    """Trusted commands still to acknowledge, oldest first."""
    ignored: tuple[IgnoredCommand, ...] = ()
    """Commands by untrusted authors, for the logs."""

    def retry_requested_after(self, moment: datetime | None) -> bool:
        """Whether a trusted person asked for a run after `moment`.

        Give it a back-off's `recorded_at`: True means the back-off no longer holds.
        """
        if self.retry_requested_at is None:
            return False
        return moment is None or self.retry_requested_at > moment

    @property
    def wants_run(self) -> bool:
        """A pending command asks for a run, and the target is not stopped."""
        return not self.stopped and any(p.starts_run for p in self.pending)


def _same(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def command_authors(comments: Iterable[CommandComment], *, agent_login: str) -> frozenset[str]:
    """Logins that wrote at least one command: the only ones whose trust must be looked up."""
    return frozenset(
        c.user.login
        for c in comments
        if not _same(c.user.login, agent_login) and parse_commands(c.body)
    )


def _acknowledgement(command: Command, kind: ThreadKind | None) -> tuple[Reaction, Reply | None]:
    word = command.word
    wrong_place = kind is not None and word in _RETRY_WORD.values() and word != _RETRY_WORD[kind]
    if not command.known or wrong_place:
        return "confused", "help"
    return REACTIONS[word], ("status" if word == "status" else None)


def command_state(
    comments: Iterable[CommandComment],
    *,
    trusted: Callable[[str], bool],
    agent_login: str,
    kind: ThreadKind | None = None,
    acknowledged: Collection[int] = (),
) -> CommandState:
    """Fold a thread's commands into a `CommandState`.

    Args:
        comments: The thread's comments (any order; read oldest first).
        trusted: Whether a login's commands count (look up only `command_authors`).
        agent_login: The agents' identity; its own comments never count.
        kind: `issue` or `pr`; `None` accepts both `build` and `review` as a retry.
        acknowledged: Ids of command comments the agents already reacted to.

    Returns:
        The state; `pending` lists what still needs a reaction (and maybe a reply).
    """
    ordered = sorted(comments, key=lambda c: (c.created_at, c.id))
    stopped, stopped_by, stopped_at = False, None, None
    retry_at, retry_by = None, None
    pending: list[PendingCommand] = []
    ignored: list[IgnoredCommand] = []
    retry_words = set(_RETRY_WORD.values()) if kind is None else {_RETRY_WORD[kind]}
    done = set(acknowledged)
    for comment in ordered:
        author = comment.user.login
        if _same(author, agent_login):
            continue
        commands = parse_commands(comment.body)
        if not commands:
            continue
        if not trusted(author):
            ignored += [IgnoredCommand(comment.id, author, c.word) for c in commands]
            continue
        for command in commands:
            if command.word == "stop":
                stopped, stopped_by, stopped_at = True, author, comment.created_at
            elif command.word == "resume":
                stopped, stopped_by, stopped_at = False, None, None
            elif command.word in retry_words:
                retry_at, retry_by = comment.created_at, author
        if comment.id in done:
            continue
        for command in commands:
            reaction, reply = _acknowledgement(command, kind)
            starts = reply is None and command.word in (*retry_words, "resume")
            pending.append(
                PendingCommand(
                    comment.id, author, comment.created_at, command, reaction, reply, starts
                )
            )
    return CommandState(
        stopped=stopped,
        stopped_by=stopped_by,
        stopped_at=stopped_at,
        retry_requested_at=retry_at,
        retry_requested_by=retry_by,
        pending=tuple(pending),
        ignored=tuple(ignored),
    )
