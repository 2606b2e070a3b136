"""The pure claim state machine: expiry, release, re-entrancy, forgery, malformed input."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest
from structlog.testing import capture_logs

from agent_loop_common.claims import (
    DibsMarker,
    RefDecision,
    claim_state,
    decide_ref,
    render_dibs,
)

BOT = "agent-loop[bot]"
T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
RUN_A = "20261202T100000Z-aaaaaaaa"
RUN_B = "20261202T100100Z-bbbbbbbb"
TTL = timedelta(minutes=30)


@dataclass(frozen=True)
class User:
    login: str


@dataclass(frozen=True)
class Comment:
    body: str
    user: User
    created_at: datetime
    updated_at: datetime = field(default=T0)


def marker(op: str, run: str, until: datetime, kind: str = "issue") -> str:
    return render_dibs(DibsMarker(op, kind, "prod", "builder", run, until))  # type: ignore[arg-type]


def say(
    minute: float,
    op: str,
    run: str,
    *,
    ttl: timedelta = TTL,
    author: str = BOT,
    kind: str = "issue",
) -> Comment:
    at = T0 + timedelta(minutes=minute)
    until = at if op == "release" else at + ttl
    return Comment(f"text\n{marker(op, run, until, kind)}", User(author), at, at)


def owner(comments: list[Comment], minute: float, **kwargs: object) -> str | None:
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=minute), **kwargs)  # type: ignore[arg-type]
    return state.owner.run if state.owner else None


def test_no_markers_means_free() -> None:
    state = claim_state([Comment("please fix", User("alice"), T0)], agent_login=BOT, now=T0)
    assert state.free
    assert state.last is None
    assert state.reasons == ("free: no valid claim",)


def test_claim_holds_until_expiry_then_frees() -> None:
    comments = [say(0, "claim", RUN_A)]
    assert owner(comments, 0) == RUN_A
    assert owner(comments, 29.9) == RUN_A
    assert owner(comments, 30) is None  # until is exclusive
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(hours=1))
    assert state.last is not None
    assert state.last.run == RUN_A
    assert "expired" in state.reasons[-1]


def test_a_second_run_cannot_claim_a_live_target() -> None:
    comments = [say(0, "claim", RUN_A), say(5, "claim", RUN_B)]
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=10))
    assert state.owner is not None
    assert state.owner.run == RUN_A
    assert any("ignored claim by run " + RUN_B in reason for reason in state.reasons)


def test_another_run_takes_over_after_expiry() -> None:
    comments = [say(0, "claim", RUN_A), say(31, "claim", RUN_B)]
    assert owner(comments, 32) == RUN_B
    assert owner(comments, 62) is None


def test_release_by_owner_frees() -> None:
    comments = [say(0, "claim", RUN_A), say(3, "release", RUN_A)]
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=4))
    assert state.free
    assert state.last is not None
    assert state.last.released_at == T0 + timedelta(minutes=3)
    assert "released by run" in state.reasons[-1]


def test_release_by_non_owner_is_ignored() -> None:
    comments = [say(0, "claim", RUN_A), say(3, "release", RUN_B)]
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=4))
    assert state.owner is not None
    assert state.owner.run == RUN_A
    assert any("ignored release by run " + RUN_B in reason for reason in state.reasons)


def test_claim_after_release_by_another_run() -> None:
    comments = [say(0, "claim", RUN_A), say(3, "release", RUN_A), say(4, "claim", RUN_B)]
    assert owner(comments, 5) == RUN_B


def test_reentrant_for_the_same_run_only_and_keeps_first_claim_time() -> None:
    comments = [say(0, "claim", RUN_A), say(20, "claim", RUN_A)]
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=45))
    assert state.owner is not None
    assert state.owner.claimed_at == T0
    assert state.owner.until == T0 + timedelta(minutes=50)


def test_extend_moves_until_for_the_holder_only() -> None:
    comments = [say(0, "claim", RUN_A), say(20, "extend", RUN_A), say(25, "extend", RUN_B)]
    assert owner(comments, 45) == RUN_A
    assert owner(comments, 50) is None
    state = claim_state(comments, agent_login=BOT, now=T0)
    assert any("ignored extend by run " + RUN_B in reason for reason in state.reasons)


def test_late_extend_by_the_holder_revives_an_unclaimed_target() -> None:
    comments = [say(0, "claim", RUN_A), say(40, "extend", RUN_A)]
    assert owner(comments, 41) == RUN_A


def test_extend_after_takeover_is_ignored() -> None:
    comments = [say(0, "claim", RUN_A), say(31, "claim", RUN_B), say(32, "extend", RUN_A)]
    assert owner(comments, 33) == RUN_B


def test_extend_or_release_without_claim_is_ignored() -> None:
    comments = [say(0, "extend", RUN_A), say(1, "release", RUN_A)]
    state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=2))
    assert state.free
    assert state.last is None


def test_forged_markers_from_other_identities_do_not_count() -> None:
    comments = [say(0, "claim", RUN_A, author="mallory"), say(1, "release", RUN_B, author="alice")]
    with capture_logs() as logs:
        state = claim_state(comments, agent_login=BOT, now=T0 + timedelta(minutes=2))
    assert state.free
    assert sum("not the agents' identity" in reason for reason in state.reasons) == 2
    assert {entry["event"] for entry in logs} == {"claims.marker_forged"}


def test_forged_release_cannot_free_a_real_claim() -> None:
    comments = [say(0, "claim", RUN_A), say(1, "release", RUN_A, author="mallory")]
    assert owner(comments, 2) == RUN_A


def test_identity_comparison_ignores_case() -> None:
    comments = [say(0, "claim", RUN_A, author="Agent-Loop[bot]")]
    assert owner(comments, 1) == RUN_A


def test_malformed_and_unknown_versions_are_skipped_not_fatal() -> None:
    broken = Comment(marker("claim", RUN_B, T0 + TTL).replace(" v1 ", " v2 "), User(BOT), T0)
    garbage = Comment("<!-- agent-loop:dibs v1 op=claim run=??? -->", User(BOT), T0)
    comments = [broken, garbage, say(1, "claim", RUN_A)]
    with capture_logs() as logs:
        assert owner(comments, 2) == RUN_A
    assert [entry["event"] for entry in logs] == ["claims.marker_ignored"] * 2


def test_order_is_by_creation_time_not_input_order() -> None:
    comments = [say(31, "claim", RUN_B), say(0, "claim", RUN_A)]
    assert owner(comments, 32) == RUN_B
    comments = [say(5, "claim", RUN_B), say(0, "claim", RUN_A)]
    assert owner(comments, 6) == RUN_A


def test_release_edited_into_the_claim_comment_counts() -> None:
    at = T0
    body = (
        marker("claim", RUN_A, at + TTL)
        + "\n"
        + marker("release", RUN_A, at + timedelta(minutes=9))
    )
    comments = [Comment(body, User(BOT), at, at + timedelta(minutes=9))]
    assert owner(comments, 1) is None


def test_kind_filter() -> None:
    comments = [say(0, "claim", RUN_A, kind="pr")]
    assert owner(comments, 1, kind="pr") == RUN_A
    assert owner(comments, 1, kind="issue") is None


@pytest.mark.parametrize(
    ("head", "exists", "minute", "expected"),
    [
        (None, False, 0, RefDecision.CREATE),
        (None, True, 0, RefDecision.TAKEOVER),  # unreadable head
        (("claim", RUN_B), True, 10, RefDecision.HELD),
        (("claim", RUN_B), True, 30.5, RefDecision.HELD),  # expired, but within the skew margin
        (("claim", RUN_B), True, 31, RefDecision.TAKEOVER),
        (("extend", RUN_B), True, 10, RefDecision.HELD),
        (("release", RUN_B), True, 1, RefDecision.TAKEOVER),
        (("claim", RUN_A), True, 10, RefDecision.REENTER),
        (("claim", RUN_A), True, 99, RefDecision.REENTER),
        (("release", RUN_A), True, 10, RefDecision.TAKEOVER),
    ],
)
def test_decide_ref(
    head: tuple[str, str] | None, exists: bool, minute: float, expected: RefDecision
) -> None:
    parsed = None
    if head is not None:
        parsed = DibsMarker(head[0], "issue", "prod", "builder", head[1], T0 + TTL)  # type: ignore[arg-type]
    decision = decide_ref(
        parsed,
        exists=exists,
        run=RUN_A,
        now=T0 + timedelta(minutes=minute),
        skew=timedelta(minutes=1),
    )
    assert decision is expected
