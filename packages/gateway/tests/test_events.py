"""Routing, one event type at a time, on GitHub's own payloads (the emulator's deliveries)."""

from __future__ import annotations

from typing import Any

import pytest

from agent_loop_gateway import CommandRef, Intent, RouteContext, Routed, route_event
from agent_loop_testing import GitHubEmulator

from .conftest import Recorder


@pytest.fixture
def ctx(emulator: GitHubEmulator) -> RouteContext:
    return RouteContext(
        repo="acme/widgets",
        agent_login=emulator.bot,
        branch_prefix="agent-loop/",
        trusted_label="agent",
    )


def routed(recorder: Recorder, ctx: RouteContext) -> list[Routed]:
    return [route_event(d.event, d.payload, ctx) for d in recorder.take()]


def intents(recorder: Recorder, ctx: RouteContext) -> list[tuple[Intent, ...]]:
    return [r.intents for r in routed(recorder, ctx)]


def test_issues_opened_labelled_assigned(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    n = emulator.add_issue("t", author="alice", labels=["bug", "agent"])
    emulator.assign_issue(n, emulator.bot, actor="acme")
    emulator.assign_issue(n, "alice", actor="acme")
    found = routed(recorder, ctx)
    assert [r.intents for r in found] == [
        (Intent("builder", n, "issues.opened", "alice"),),
        (),
        (Intent("builder", n, "issues.labeled", "alice"),),
        (Intent("builder", n, "issues.assigned", "acme"),),
        (),
    ]
    assert found[1].reason == "label 'bug' is not the trusted label"
    assert found[4].reason == "assigned to someone else"


def test_without_a_trusted_label_no_label_starts_a_run(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.add_issue("t", author="alice", labels=["agent"])
    no_label = RouteContext(ctx.repo, ctx.agent_login, ctx.branch_prefix, None)
    assert [r.intents != () for r in routed(recorder, no_label)] == [True, False]


def test_closed_issues_and_other_issue_actions_are_ignored(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.close_issue(1)
    emulator.add_comment(1, "/agent-loop build", author="alice")
    found = routed(recorder, ctx)
    assert [r.intents for r in found] == [(), ()]
    assert found[1].reason == "issue #1 is not open"


def test_comments_on_issues_need_a_command(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    plain = emulator.add_comment(1, "any news?", author="alice")
    command = emulator.add_comment(1, "/agent-loop build\n/agent-loop status", author="alice")
    emulator.edit_comment(plain, "/agent-loop build")
    found = routed(recorder, ctx)
    assert found[0].intents == ()
    assert found[1].intents == (
        Intent(
            "builder",
            1,
            "issue_comment.created with a command",
            "alice",
            command=CommandRef(command, "issue", ("build", "status")),
        ),
    )
    assert found[2].intents == ()
    assert "edits never replay commands" in found[2].reason


@pytest.mark.parametrize(
    "body",
    [
        "```\n/agent-loop build\n```",
        "> /agent-loop build",
        "    /agent-loop build",
        "`/agent-loop build`",
    ],
)
def test_commands_in_code_or_quotes_are_not_commands(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext, body: str
) -> None:
    emulator.add_comment(1, body, author="alice")
    assert intents(recorder, ctx) == [()]


def test_comments_on_a_pr_go_to_the_reviewer_after_a_lookup(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.add_comment(2, "please add a test", author="alice")
    command = emulator.add_comment(2, "/agent-loop review", author="alice")
    assert intents(recorder, ctx) == [
        (Intent("reviewer", 2, "issue_comment.created on a PR", "alice", agent_pr="lookup"),),
        (
            Intent(
                "reviewer",
                2,
                "issue_comment.created on a PR with a command",
                "alice",
                agent_pr="lookup",
                command=CommandRef(command, "pr", ("review",)),
            ),
        ),
    ]


def test_reviews_and_review_comments_on_agent_prs_only(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.add_review(2, author="alice", body="hm", comments=[("app.py", 1, "why?")])
    emulator.push("alice-work", {"b.py": "1\n"}, author="alice", message="b")
    pr = emulator.open_pull("alice-work", title="b", author="alice")
    emulator.add_review(pr, author="acme", body="ok", comments=[("b.py", 1, "fine")])
    found = routed(recorder, ctx)
    assert [r.intents for r in found[:2]] == [
        (
            Intent(
                "reviewer", 2, "pull_request_review_comment.created", "alice", agent_pr="payload"
            ),
        ),
        (Intent("reviewer", 2, "pull_request_review.submitted", "alice", agent_pr="payload"),),
    ]
    assert [r.intents for r in found[2:]] == [(), (), ()]  # opened; comment and review on #3
    assert found[3].reason == f"PR #{pr} is not an agent PR"


def test_failing_check_runs_and_statuses(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    head = emulator.pull(2).head_sha
    emulator.set_check_run(head, "tests", status="in_progress", conclusion=None)
    emulator.set_check_run(head, "tests", conclusion="success")
    emulator.set_check_run(head, "tests", conclusion="timed_out")
    emulator.set_status(head, "lint", "pending")
    emulator.set_status(head, "lint", "failure")
    assert intents(recorder, ctx) == [
        (),
        (),
        (Intent("reviewer", 2, "check_run.completed: timed_out", "acme", "ci", "lookup", head),),
        (),
        (Intent("reviewer", None, "status: failure", "acme", "ci", "head_sha", head),),
    ]


def _suite(conclusion: str, pulls: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "action": "completed",
        "check_suite": {"head_sha": "a" * 40, "conclusion": conclusion, "pull_requests": pulls},
        "repository": {"full_name": "acme/widgets"},
        "sender": {"login": "github-actions[bot]"},
    }


def test_check_suites(ctx: RouteContext) -> None:
    at_head = {"number": 2, "head": {"sha": "a" * 40}}
    elsewhere = {"number": 5, "head": {"sha": "b" * 40}}
    assert route_event("check_suite", _suite("failure", [at_head, elsewhere]), ctx).intents == (
        Intent(
            "reviewer",
            2,
            "check_suite.completed: failure",
            "github-actions[bot]",
            "ci",
            "lookup",
            "a" * 40,
        ),
    )
    assert route_event("check_suite", _suite("failure", []), ctx).intents[0].agent_pr == "head_sha"
    assert route_event("check_suite", _suite("success", [at_head]), ctx).intents == ()


def test_closed_agent_prs_start_the_distiller(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.close_pull(2, by="alice")
    assert intents(recorder, ctx) == [
        (
            Intent(
                "distiller",
                None,
                "pull_request.closed: #2 closed unmerged",
                "alice",
                agent_pr="payload",
            ),
        )
    ]


def test_refusals_that_concern_every_event(
    emulator: GitHubEmulator, recorder: Recorder, ctx: RouteContext
) -> None:
    emulator.add_comment(1, "/agent-loop build", author=emulator.bot)
    emulator.add_comment(1, "/agent-loop build", author="alice")
    own, theirs = recorder.take()
    assert route_event(own.event, own.payload, ctx).reason == "the agents' own action"
    elsewhere = RouteContext("acme/other", ctx.agent_login, ctx.branch_prefix)
    assert route_event(theirs.event, theirs.payload, elsewhere).reason.startswith(
        "another repository"
    )
    assert (
        route_event("issues", {"repository": {"full_name": "acme/widgets"}}, ctx).reason
        == "no sender"
    )
    unknown = route_event("ping", {**theirs.payload, "zen": "Keep it simple."}, ctx)
    assert unknown.reason == "event 'ping' is not acted on"
    assert route_event("issues", {}, ctx).intents == ()
