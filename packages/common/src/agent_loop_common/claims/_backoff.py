"""Bounded re-work: exponential backoff per target, stored as marker comments.

A target whose attempt failed must not consume a run on every scheduled tick. Each failure
posts a comment with a backoff marker (`attempts=N until=...`) on the issue or PR: every
run reads it from there, and a human sees why the agents stopped trying and until when.

A trusted person resets the count by touching the target: a comment after the latest
backoff marker, an edit of their comment after it, or an edit of the issue itself (seen
as `issue.updated_at` later than every agent comment; the agents' own comments also
bump `updated_at`, hence the comparison with agent activity and a small `slack` for
GitHub setting the two timestamps a moment apart). When a `trusted` predicate is given,
comments by anyone else neither reset the count nor, through the `updated_at` they
bump, pass for an edit: a stranger cannot buy a run with a comment. An edit that is
followed by a later agent comment is not seen; a label change also bumps `updated_at`;
both are documented limits.

Everything here is pure: comments and `now` in, values out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from agent_loop_common.claims._marker import BackoffMarker, format_time, parse_backoff
from agent_loop_common.claims._state import CommentLike

if TYPE_CHECKING:
    from agent_loop_common.settings import Settings

__all__ = ["Backoff", "BackoffPolicy", "backoff_resetters", "backoff_state", "is_backed_off"]


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """How long a target rests after its N-th consecutive failure: `min(cap, base * 2**(N-1))`."""

    base: timedelta = timedelta(minutes=15)
    """Rest after the first failure."""
    cap: timedelta = timedelta(hours=24)
    """Longest rest; failing targets are still retried this often until a human steps in."""

    def __post_init__(self) -> None:
        if self.base <= timedelta(0) or self.cap < self.base:
            raise ValueError(f"backoff needs 0 < base <= cap, got base={self.base} cap={self.cap}")

    @classmethod
    def from_settings(cls, settings: Settings) -> BackoffPolicy:
        """How long a failing issue or PR rests, from `AGENT_LOOP_BACKOFF_*`."""
        return cls(
            base=timedelta(minutes=settings.backoff_base_minutes),
            cap=timedelta(minutes=settings.backoff_cap_minutes),
        )

    def delay(self, attempts: int) -> timedelta:
        """Rest after `attempts` consecutive failures (`attempts >= 1`)."""
        if attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {attempts}")
        delay = self.base
        for _ in range(attempts - 1):  # stops doubling at the cap: at most log2(cap/base) steps
            if delay >= self.cap:
                break
            delay *= 2
        return min(delay, self.cap)

    def next(self, current: Backoff | None, *, now: datetime, run: str) -> BackoffMarker:
        """The marker to record for one more failure at `now` after `current`."""
        attempts = 1 if current is None else current.attempts + 1
        return BackoffMarker(attempts=attempts, until=now + self.delay(attempts), run=run)


@dataclass(frozen=True, slots=True)
class Backoff:
    """The backoff in force on a target: consecutive failures and when it is eligible again."""

    attempts: int
    """Consecutive failed attempts since the last human touch."""
    until: datetime
    """Not eligible before this time."""
    run: str
    """The run that recorded the latest failure."""
    recorded_at: datetime
    """When the latest backoff comment was posted."""

    def active(self, now: datetime) -> bool:
        """Tell whether the target is still resting at `now`."""
        return now < self.until

    def describe(self) -> str:
        """One line for logs and reasons."""
        return f"{self.attempts} failed attempt(s), next try after {format_time(self.until)}"


def backoff_resetters(comments: Iterable[CommentLike], *, agent_login: str) -> set[str]:
    """Logins whose comments touched the target after the agents' latest comment.

    Only these can have reset a backoff, so only their trust needs looking up.
    """
    agent = agent_login.casefold()
    listed = list(comments)
    last_agent = max(
        (max(c.created_at, c.updated_at) for c in listed if c.user.login.casefold() == agent),
        default=None,
    )
    return {
        c.user.login
        for c in listed
        if c.user.login.casefold() != agent
        and (last_agent is None or max(c.created_at, c.updated_at) > last_agent)
    }


def backoff_state(
    comments: Iterable[CommentLike],
    *,
    issue_updated_at: datetime,
    agent_login: str,
    slack: timedelta = timedelta(seconds=5),
    trusted: Callable[[str], bool] | None = None,
) -> Backoff | None:
    """Return the backoff recorded on a target, or `None` (never failed, or reset by a human).

    Args:
        comments: all of the target's comments.
        issue_updated_at: the issue's (or PR's) `updated_at`.
        agent_login: the agents' own identity; only its backoff markers count.
        slack: how far `issue_updated_at` may trail the latest agent comment and still be
            attributed to it rather than to a human edit.
        trusted: whose comments may reset it (`None`: anyone's, the behavior before
            trust mattered; pipelines always pass one).
    """
    agent = agent_login.casefold()
    latest: tuple[datetime, BackoffMarker] | None = None
    agent_activity: datetime | None = None
    human_activity: datetime | None = None
    for index, comment in enumerate(comments):
        touched = max(comment.created_at, comment.updated_at)
        if comment.user.login.casefold() != agent:
            if trusted is not None and not trusted(comment.user.login):
                # A stranger's comment: no reset, and the updated_at it bumps is explained.
                agent_activity = touched if agent_activity is None else max(agent_activity, touched)
                continue
            human_activity = touched if human_activity is None else max(human_activity, touched)
            continue
        agent_activity = touched if agent_activity is None else max(agent_activity, touched)
        for marker in parse_backoff(comment.body, where=f"comment {index}"):
            if latest is None or comment.created_at >= latest[0]:
                latest = (comment.created_at, marker)
    if latest is None or agent_activity is None:
        return None
    recorded_at, marker = latest
    if human_activity is not None and human_activity > recorded_at:
        return None
    if issue_updated_at > max(agent_activity, recorded_at) + slack:
        return None
    return Backoff(
        attempts=marker.attempts, until=marker.until, run=marker.run, recorded_at=recorded_at
    )


def is_backed_off(
    comments: Iterable[CommentLike],
    issue_updated_at: datetime,
    agent_login: str,
    now: datetime,
    *,
    slack: timedelta = timedelta(seconds=5),
) -> bool:
    """Tell whether a target is resting after failures at `now` (see `backoff_state`)."""
    state = backoff_state(
        comments, issue_updated_at=issue_updated_at, agent_login=agent_login, slack=slack
    )
    return state is not None and state.active(now)
