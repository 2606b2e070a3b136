"""An issue's text as it was when its fix's pull request was opened (`text_when_opened`).

The edge cases of the rule `eval mine` applies (its end-to-end test is
`tests/test_eval_mine_issue_text.py`): a change in the same second as the opening counts
as after it, an issue filed after the opening shows its text as filed, a history that
cannot tell the earlier text (cut short, not kept from the creation, a revision deleted)
makes the text unknown, and without GraphQL the body is today's while the title is still
read from the `renamed` events.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.github import BodyHistory, BodyRevision, Issue, IssueEvent, User
from agent_loop_eval._issues import text_when_opened

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
OPENED = T0 + timedelta(hours=1)
ALICE = User(login="alice", id=1, type="User")
WENDY = User(login="wendy", id=2, type="User")


def _issue(title: str = "add() subtracts", body: str = "now", created: datetime = T0) -> Issue:
    return Issue(
        number=3,
        title=title,
        body=body,
        state="closed",
        user=ALICE,
        labels=(),
        created_at=created,
        updated_at=OPENED + timedelta(days=1),
        closed_at=OPENED + timedelta(days=1),
        is_pull_request=False,
        html_url="https://github.com/acme/calc/issues/3",
        author_association="OWNER",
    )


def _rename(at: datetime, old: str | None, by: User = WENDY) -> IssueEvent:
    return IssueEvent(
        id=int(at.timestamp()),
        event="renamed",
        actor=by,
        label=None,
        created_at=at,
        rename_from=old,
    )


def _history(*revisions: tuple[datetime, str | None, str | None], **kw: bool) -> BodyHistory:
    revs = tuple(BodyRevision(edited_at=at, editor=who, body=body) for at, who, body in revisions)
    return BodyHistory(
        last_edited_at=revs[-1].edited_at if revs else None,
        revisions=revs,
        includes_creation=kw.get("includes_creation", True),
        complete=kw.get("complete", True),
    )


def test_a_text_never_changed_after_the_opening_is_todays() -> None:
    never = text_when_opened(_issue(), [], _history(), OPENED)
    assert (never.title, never.body, never.writers, never.unknown) == (
        "add() subtracts",
        "now",
        (),
        "",
    )
    before = _history((T0, "alice", "v1"), (OPENED - timedelta(seconds=1), "alice", "now"))
    assert text_when_opened(_issue(), [], before, OPENED).body == "now"


@pytest.mark.parametrize("after", [timedelta(0), timedelta(days=2)])
def test_a_later_or_same_second_edit_gives_the_revision_before_and_who_wrote_it(
    after: timedelta,
) -> None:
    history = _history(
        (T0, "alice", "v1"),
        (T0 + timedelta(minutes=5), "wendy", "v2"),
        (OPENED + after, "wendy", "v3: fixed by using +"),
    )
    text = text_when_opened(_issue(body="v3: fixed by using +\r\n"), [], history, OPENED)
    assert (text.body, text.writers, text.unknown) == ("v2", ("wendy",), "")


def test_a_later_rename_gives_the_title_before_it_and_its_setter() -> None:
    events = [
        _rename(T0 + timedelta(minutes=1), "add is wrong", by=ALICE),
        _rename(OPENED + timedelta(minutes=1), "add() subtracts"),
        _rename(OPENED + timedelta(minutes=2), "add() subtracts (fixed)"),
    ]
    text = text_when_opened(_issue(title="add() subtracts: fixed with +"), events, None, OPENED)
    assert (text.title, text.body, text.writers) == ("add() subtracts", "now", ("alice",))
    unnamed = [_rename(OPENED + timedelta(minutes=1), None)]
    assert "names no earlier title" in text_when_opened(_issue(), unnamed, None, OPENED).unknown


def test_an_issue_filed_after_the_opening_shows_its_text_as_filed() -> None:
    filed = OPENED + timedelta(minutes=3)
    history = _history((filed, "alice", "as filed"), (filed + timedelta(days=1), "wendy", "hint"))
    events = [_rename(filed + timedelta(days=1), "as titled")]
    text = text_when_opened(_issue(body="hint", created=filed), events, history, OPENED)
    assert (text.title, text.body, text.writers) == ("as titled", "as filed", ("alice", "alice"))


@pytest.mark.parametrize(
    ("history", "said"),
    [
        (
            _history((T0, "alice", "v1"), (OPENED, "wendy", "now"), complete=False),
            "does not keep the text before",
        ),
        (
            _history((OPENED, "wendy", "now"), includes_creation=False),
            "does not keep the text before",
        ),
        (
            _history((T0, "alice", None), (OPENED, "wendy", "now")),
            "deleted from its history",
        ),
        (
            # A `diff` that is not the whole body (GitHub's schema calls it a summary).
            _history((T0, "alice", "v1"), (OPENED, "wendy", "@@ -1 +1 @@ now")),
            "does not hold whole texts",
        ),
    ],
)
def test_a_text_the_history_cannot_tell_is_unknown(history: BodyHistory, said: str) -> None:
    assert said in text_when_opened(_issue(), [], history, OPENED).unknown


def test_a_history_from_before_github_kept_the_creation_still_tells_a_later_revision() -> None:
    history = _history(
        (T0 + timedelta(minutes=5), "alice", "v2"),
        (OPENED + timedelta(minutes=5), "wendy", "now"),
        includes_creation=False,
    )
    assert text_when_opened(_issue(), [], history, OPENED).body == "v2"
