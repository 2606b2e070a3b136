"""Backoff math, the marker-backed state, and the reset by a human touch."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.claims import (
    BackoffMarker,
    BackoffPolicy,
    backoff_state,
    is_backed_off,
    render_backoff,
)

BOT = "agent-loop[bot]"
T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
RUN = "20261202T100000Z-aaaaaaaa"


@dataclass(frozen=True)
class User:
    login: str


@dataclass(frozen=True)
class Comment:
    body: str
    user: User
    created_at: datetime
    updated_at: datetime


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def backoff_comment(minute: float, attempts: int, rest: float, author: str = BOT) -> Comment:
    body = "failed\n" + render_backoff(BackoffMarker(attempts, at(minute + rest), RUN))
    return Comment(body, User(author), at(minute), at(minute))


def human(minute: float, edited: float | None = None) -> Comment:
    return Comment(
        "any news?", User("alice"), at(minute), at(edited if edited is not None else minute)
    )


def test_delay_doubles_and_caps() -> None:
    policy = BackoffPolicy(base=timedelta(minutes=10), cap=timedelta(hours=2))
    delays = [policy.delay(n) for n in range(1, 8)]
    assert delays == [timedelta(minutes=m) for m in (10, 20, 40, 80, 120, 120, 120)]
    assert policy.delay(10_000) == timedelta(hours=2)


def test_policy_validation() -> None:
    with pytest.raises(ValueError, match="attempts"):
        BackoffPolicy().delay(0)
    with pytest.raises(ValueError, match="base"):
        BackoffPolicy(base=timedelta(0))
    with pytest.raises(ValueError, match="cap"):
        BackoffPolicy(base=timedelta(hours=2), cap=timedelta(hours=1))


def test_next_counts_up_from_the_current_state() -> None:
    policy = BackoffPolicy(base=timedelta(minutes=10), cap=timedelta(hours=2))
    first = policy.next(None, now=T0, run=RUN)
    assert (first.attempts, first.until) == (1, at(10))
    current = backoff_state([backoff_comment(0, 3, 40)], issue_updated_at=at(0), agent_login=BOT)
    assert current is not None
    fourth = policy.next(current, now=at(50), run=RUN)
    assert (fourth.attempts, fourth.until) == (4, at(130))


def test_no_marker_no_backoff() -> None:
    assert backoff_state([human(0)], issue_updated_at=at(0), agent_login=BOT) is None
    assert not is_backed_off([], at(0), BOT, at(0))


def test_latest_marker_wins_and_expires() -> None:
    comments = [backoff_comment(0, 1, 10), backoff_comment(20, 2, 20)]
    state = backoff_state(comments, issue_updated_at=at(20), agent_login=BOT)
    assert state is not None
    assert (state.attempts, state.until, state.recorded_at) == (2, at(40), at(20))
    assert is_backed_off(comments, at(20), BOT, at(39))
    assert not is_backed_off(comments, at(20), BOT, at(40))


def test_forged_backoff_markers_do_not_count() -> None:
    comments = [backoff_comment(0, 9, 600, author="mallory")]
    assert backoff_state(comments, issue_updated_at=at(0), agent_login=BOT) is None


def test_a_human_comment_after_the_marker_resets() -> None:
    comments = [backoff_comment(0, 4, 100), human(5)]
    assert backoff_state(comments, issue_updated_at=at(5), agent_login=BOT) is None
    assert not is_backed_off(comments, at(5), BOT, at(6))


def test_a_human_comment_before_the_marker_does_not_reset() -> None:
    comments = [human(0), backoff_comment(5, 4, 100)]
    assert is_backed_off(comments, at(5), BOT, at(6))


def test_editing_an_old_human_comment_resets() -> None:
    comments = [human(0, edited=10), backoff_comment(5, 4, 100)]
    assert not is_backed_off(comments, at(10), BOT, at(11))


def test_a_human_edit_of_the_issue_resets() -> None:
    comments = [backoff_comment(5, 4, 100)]
    assert is_backed_off(comments, at(5), BOT, at(6))
    assert is_backed_off(comments, at(5) + timedelta(seconds=4), BOT, at(6))  # within slack
    assert not is_backed_off(comments, at(7), BOT, at(8))


def test_later_agent_activity_is_not_mistaken_for_a_human_edit() -> None:
    later_agent = Comment("claim comment, edited on release", User(BOT), at(6), at(9))
    comments = [backoff_comment(5, 4, 100), later_agent]
    assert is_backed_off(comments, at(9), BOT, at(10))
