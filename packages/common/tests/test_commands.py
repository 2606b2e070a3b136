"""Maintainer commands: what counts as a command, and what a thread's commands add up to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from agent_loop_common.claims import DibsMarker, render_dibs
from agent_loop_common.commands import (
    Command,
    command_authors,
    command_state,
    parse_commands,
    render_help,
    render_status,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BOT = "agent-loop[bot]"
TRUSTED = {"alice", "bob"}


@dataclass(frozen=True)
class User:
    login: str


@dataclass(frozen=True)
class Comment:
    id: int
    body: str
    user: User
    created_at: datetime
    updated_at: datetime
    html_url: str = ""


def thread(*items: tuple[str, str]) -> list[Comment]:
    """Comments one minute apart: `(author, body)`."""
    return [
        Comment(
            i + 1,
            body,
            User(author),
            T0 + timedelta(minutes=i),
            T0 + timedelta(minutes=i),
            f"https://github.test/acme/widgets/issues/1#issuecomment-{i + 1}",
        )
        for i, (author, body) in enumerate(items)
    ]


def words(body: str) -> list[str]:
    return [c.word for c in parse_commands(body)]


# ------------------------------------------------------------------ parsing


def test_a_command_at_the_start_of_a_line() -> None:
    assert parse_commands("/agent-loop build") == (Command("build", "", 0),)
    assert words("Thanks!\n\n   /agent-loop Review please\n") == ["review"]
    assert parse_commands("/agent-loop stop now.")[0].rest == "now."
    assert words("/agent-loop status.") == ["status"]
    assert words("/AGENT-LOOP resume") == ["resume"]


def test_unknown_words_are_kept_so_they_can_be_answered() -> None:
    found = parse_commands("/agent-loop deploy\n/agent-loop")
    assert [(c.word, c.known) for c in found] == [("deploy", False), ("", False)]


@pytest.mark.parametrize(
    "body",
    [
        "please /agent-loop build",  # not at the start of the line
        "`/agent-loop build`",  # inline code
        "/agent-loopy build",  # another word
        "> /agent-loop build",  # a quoted reply
        "   > /agent-loop stop",
        ">> /agent-loop stop",
        "    /agent-loop build",  # an indented code block
        "\t/agent-loop build",
        "```\n/agent-loop build\n```",  # a fenced block
        "~~~sh\n/agent-loop build\n~~~",
        "````\n```\n/agent-loop build\n```\n````",  # a longer fence holds a shorter one
        "```\nunclosed fence\n/agent-loop build",
        "<!-- /agent-loop build -->",  # hidden when rendered
        "<!--\n/agent-loop build\n-->",
        "text <!-- unclosed\n/agent-loop build",
        "- /agent-loop build",  # a list item
    ],
)
def test_commands_in_code_quotes_and_hidden_text_do_not_count(body: str) -> None:
    assert parse_commands(body) == ()


def test_a_command_after_a_closed_block_counts() -> None:
    body = "```\n/agent-loop stop\n```\n> /agent-loop stop\n<!-- x -->\n/agent-loop build"
    assert parse_commands(body) == (Command("build", "", 5),)


def test_windows_line_endings() -> None:
    assert words("hi\r\n/agent-loop stop\r\n") == ["stop"]


# ------------------------------------------------------------------ state


def trusted(login: str) -> bool:
    return login in TRUSTED


def test_the_latest_trusted_stop_or_resume_wins() -> None:
    comments = thread(
        ("alice", "/agent-loop stop"),
        ("mallory", "/agent-loop resume"),
        ("bob", "nice"),
    )
    state = command_state(comments, trusted=trusted, agent_login=BOT, kind="issue")
    assert (state.stopped, state.stopped_by, state.stopped_at) == (True, "alice", T0)
    assert [(i.author, i.word) for i in state.ignored] == [("mallory", "resume")]
    resumed = command_state(
        [*comments, *thread(*[("x", "")] * 3, ("bob", "/agent-loop resume"))[3:]],
        trusted=trusted,
        agent_login=BOT,
    )
    assert not resumed.stopped


def test_build_asks_for_a_retry_and_does_not_lift_a_stop() -> None:
    comments = thread(("alice", "/agent-loop stop"), ("bob", "/agent-loop build"))
    state = command_state(comments, trusted=trusted, agent_login=BOT, kind="issue")
    assert state.stopped
    assert (state.retry_requested_at, state.retry_requested_by) == (
        T0 + timedelta(minutes=1),
        "bob",
    )
    assert state.retry_requested_after(T0)
    assert not state.retry_requested_after(T0 + timedelta(minutes=2))
    assert not state.wants_run  # stopped


def test_retry_words_depend_on_the_thread_kind() -> None:
    comments = thread(("alice", "/agent-loop review"))
    on_issue = command_state(comments, trusted=trusted, agent_login=BOT, kind="issue")
    assert on_issue.retry_requested_at is None
    assert [(p.reaction, p.reply) for p in on_issue.pending] == [("confused", "help")]
    on_pr = command_state(comments, trusted=trusted, agent_login=BOT, kind="pr")
    assert on_pr.retry_requested_at == T0
    assert [(p.reaction, p.reply, p.starts_run) for p in on_pr.pending] == [("rocket", None, True)]
    either = command_state(comments, trusted=trusted, agent_login=BOT)
    assert either.retry_requested_at == T0


def test_pending_acknowledgements() -> None:
    comments = thread(
        ("alice", "/agent-loop status"),
        ("alice", "/agent-loop frobnicate"),
        ("bob", "/agent-loop stop"),
        ("bob", "/agent-loop resume\n/agent-loop build"),
        (BOT, "/agent-loop build"),  # the agents' own comments never count
    )
    state = command_state(
        comments, trusted=trusted, agent_login=BOT, kind="issue", acknowledged={3}
    )
    assert [
        (p.comment_id, p.command.word, p.reaction, p.reply, p.starts_run) for p in state.pending
    ] == [
        (1, "status", "eyes", "status", False),
        (2, "frobnicate", "confused", "help", False),
        (4, "resume", "+1", None, True),
        (4, "build", "rocket", None, True),
    ]
    assert not state.stopped
    assert state.wants_run


def test_untrusted_commands_have_no_effect_and_need_no_acknowledgement() -> None:
    comments = thread(("mallory", "/agent-loop stop"), ("mallory", "/agent-loop status"))
    state = command_state(comments, trusted=trusted, agent_login=BOT)
    assert not state.stopped
    assert state.pending == ()
    assert len(state.ignored) == 2


def test_comments_are_read_in_time_order() -> None:
    early, late = thread(("alice", "/agent-loop stop"), ("bob", "/agent-loop resume"))
    state = command_state([late, early], trusted=trusted, agent_login=BOT)
    assert not state.stopped


def test_command_authors_are_the_only_logins_to_look_up() -> None:
    comments = thread(("alice", "hi"), ("carol", "/agent-loop build"), (BOT, "/agent-loop x"))
    assert command_authors(comments, agent_login=BOT) == {"carol"}


# ------------------------------------------------------------------ replies


def test_help_lists_every_command_and_is_never_a_command_itself() -> None:
    text = render_help("frobnicate")
    assert "`frobnicate`" in text
    for word in ("build", "review", "stop", "resume", "status"):
        assert f"`/agent-loop {word}`" in text
    assert parse_commands(text) == ()


def test_status_tells_the_last_run_the_stop_and_the_retry() -> None:
    run = "20260301T120000Z-0000abcd"
    claim = DibsMarker("claim", "issue", "default", "builder", run, T0 + timedelta(minutes=30))
    release = DibsMarker("release", "issue", "default", "builder", run, T0 + timedelta(minutes=2))
    released = (
        f"✅ agent-loop **builder** (run `{run}`) released this: opened PR #5\n\n"
        f"{render_dibs(claim)}\n{render_dibs(release)}"
    )
    comments = thread(
        ("alice", "/agent-loop stop"),
        (BOT, released),
        ("bob", "/agent-loop build"),
    )
    state = command_state(comments, trusted=trusted, agent_login=BOT, kind="issue")
    text = render_status(
        comments, kind="issue", agent_login=BOT, state=state, now=T0 + timedelta(hours=1)
    )
    assert "released this" in text
    assert "opened PR #5" in text
    assert "issuecomment-2" in text
    assert "Now: free" in text
    assert "Stopped by @alice" in text
    assert "requested by @bob" in text
    assert parse_commands(text) == ()


def test_status_of_a_fresh_thread() -> None:
    state = command_state([], trusted=trusted, agent_login=BOT)
    text = render_status([], kind="pr", agent_login=BOT, state=state, now=T0)
    assert "pull request" in text
    assert "none yet" in text
    assert "Stopped" not in text
