"""The pure claim state machine: who owns a target, computed from its markers.

No I/O and no clock: callers pass the comments (or the claim ref's head commit) and an
explicit `now`, so every rule below is a unit test away.

Rules, applied to markers in `created_at` order (ties keep input order):

1. Only markers authored by the agents' own GitHub identity count; anyone can type a
   marker into a comment (`forged`). Malformed markers and unknown versions were already
   dropped (and logged) by the parser.
2. `claim` by run R is accepted when there is no holder, the holder's claim has expired
   or was released at that moment, or the holder is R itself (re-entrant: only the same
   run id). A claim by another run while the holder is live is ignored.
3. `extend` by the holder's run moves `until`; an extend by anyone else is ignored. A
   late extend (after `until` but before anyone else claimed) is accepted, mirroring the
   claim ref, where such a heartbeat still fast-forwards because nobody moved the ref.
4. `release` by the holder's run frees the target; a release by anyone else is ignored.
5. At `now` the holder owns the target iff it is not released and `now < until`.

The comments are the human-visible record; when runs race, the claim ref decides (see
`decide_ref` and `docs/claims.md`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Protocol

import structlog

from agent_loop_common.claims._marker import DibsMarker, format_time, parse_dibs
from agent_loop_common.records import TargetKind

__all__ = [
    "ClaimState",
    "CommentLike",
    "Holder",
    "RefDecision",
    "UserLike",
    "claim_state",
    "decide_ref",
]

_log = structlog.get_logger(__name__)


class UserLike(Protocol):
    """The part of a GitHub user the claim protocol reads."""

    @property
    def login(self) -> str: ...


class CommentLike(Protocol):
    """The part of a GitHub comment the claim protocol reads (`github.Comment` fits)."""

    @property
    def body(self) -> str: ...
    @property
    def user(self) -> UserLike: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def updated_at(self) -> datetime: ...


@dataclass(frozen=True, slots=True)
class Holder:
    """The run that last took a target, as the markers tell it."""

    run: str
    """Run id of the holder."""
    agent: str
    """Deployment that wrote the claim."""
    role: str
    """Role of the holder (builder, reviewer, distiller)."""
    kind: TargetKind
    """TargetKind of the target."""
    claimed_at: datetime
    """When this run's claim was accepted (re-entrant claims keep the first time)."""
    until: datetime
    """When the claim expires, after the latest accepted claim or extend."""
    released_at: datetime | None = None
    """When the holder released it; `None` while not released."""

    def live(self, now: datetime) -> bool:
        """Tell whether this holder owns the target at `now`."""
        return self.released_at is None and now < self.until


@dataclass(frozen=True, slots=True)
class ClaimState:
    """The verdict: the live owner at `now` (`None`: free) and why."""

    owner: Holder | None
    """The run that owns the target now, or `None` when the target is free."""
    last: Holder | None
    """The latest accepted holder, live or not (who released or let it expire)."""
    reasons: tuple[str, ...]
    """Human-readable trail: ignored markers and the final verdict, in order."""

    @property
    def free(self) -> bool:
        """Tell whether nobody owns the target now."""
        return self.owner is None


def _same_login(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()  # GitHub logins are case-insensitive


def claim_state(
    comments: Iterable[CommentLike],
    *,
    agent_login: str,
    now: datetime,
    kind: TargetKind | None = None,
) -> ClaimState:
    """Compute who owns a target from its comments (all pages, any order).

    Args:
        comments: the target's comments; only markers by `agent_login` count.
        agent_login: the agents' own GitHub identity (e.g. `agent-loop[bot]`).
        now: the moment to evaluate expiry at (timezone-aware).
        kind: when given, markers for another kind of target are ignored.
    """
    events: list[tuple[datetime, int, DibsMarker]] = []
    reasons: list[str] = []
    for index, comment in enumerate(comments):
        author = comment.user.login
        where = f"comment {index} by {author}"
        for marker in parse_dibs(comment.body, where=where):
            if not _same_login(author, agent_login):
                _log.info("claims.marker_forged", author=author, op=marker.op, run=marker.run)
                reasons.append(f"ignored {marker.op} by {author}: not the agents' identity")
            elif kind is not None and marker.kind != kind:
                reasons.append(f"ignored {marker.op} for kind {marker.kind}: expected {kind}")
            else:
                events.append((comment.created_at, len(events), marker))
    events.sort(key=lambda event: (event[0], event[1]))
    last: Holder | None = None
    for at, _, marker in events:
        last = _apply(last, marker, at, reasons)
    return _verdict(last, now, reasons)


def _apply(
    last: Holder | None, marker: DibsMarker, at: datetime, reasons: list[str]
) -> Holder | None:
    """Apply one authentic marker written at `at` to the holder so far."""
    mine = last is not None and last.run == marker.run
    if marker.op == "claim":
        if last is None or not last.live(at) or mine:
            first = last.claimed_at if last is not None and mine and last.live(at) else at
            return Holder(marker.run, marker.agent, marker.role, marker.kind, first, marker.until)
        reasons.append(
            f"ignored claim by run {marker.run}: held by run {last.run} until {format_time(last.until)}"
        )
        return last
    if last is not None and mine and last.released_at is None:
        if marker.op == "extend":
            return dataclasses.replace(last, until=marker.until)
        return dataclasses.replace(last, released_at=at)
    reasons.append(f"ignored {marker.op} by run {marker.run}: not the holder")
    return last


def _verdict(last: Holder | None, now: datetime, reasons: list[str]) -> ClaimState:
    if last is None:
        reasons.append("free: no valid claim")
    elif last.released_at is not None:
        reasons.append(f"free: released by run {last.run} at {format_time(last.released_at)}")
    elif not last.live(now):
        reasons.append(f"free: claim of run {last.run} expired at {format_time(last.until)}")
    else:
        reasons.append(f"held by run {last.run} ({last.role}) until {format_time(last.until)}")
    owner = last if last is not None and last.live(now) else None
    return ClaimState(owner=owner, last=last, reasons=tuple(reasons))


class RefDecision(StrEnum):
    """What a run may do with a target's claim ref, given the ref's head marker."""

    CREATE = "create"
    """No ref: create it (422 RefExists means another run won)."""
    REENTER = "reenter"
    """The head is this run's own unreleased claim: extend it in place."""
    TAKEOVER = "takeover"
    """Released, expired (past the skew margin) or unreadable: fast-forward a new claim."""
    HELD = "held"
    """Another run holds it: leave it alone."""


def decide_ref(
    head: DibsMarker | None,
    *,
    exists: bool,
    run: str,
    now: datetime,
    skew: timedelta,
) -> RefDecision:
    """Decide how to claim a target from its claim ref (the ref decides ownership).

    Args:
        head: the marker in the ref's head commit message (`None` if unreadable).
        exists: whether the ref exists at all.
        run: the deciding run's id.
        now: the decider's clock.
        skew: tolerated clock difference between runs; an expired claim is only taken
            over once `now >= until + skew`, so a holder whose clock runs behind is not
            robbed while it still believes it holds the target.
    """
    if not exists:
        return RefDecision.CREATE
    if head is None or head.op == "release":
        return RefDecision.TAKEOVER
    if head.run == run:
        return RefDecision.REENTER
    if now >= head.until + skew:
        return RefDecision.TAKEOVER
    return RefDecision.HELD
