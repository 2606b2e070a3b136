"""Failures mid-run: recorded, claim released, issue rested, nothing half-written."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest
from flyte.ai.agents import LLMMessage

from agent_loop_builder._candidates import IssueFinder
from agent_loop_common.records import Outcome
from agent_loop_common.verify import VERIFIER_MARKER
from agent_loop_testing import (
    GitHubEmulator,
    ScriptedModel,
    Turn,
    call,
    emulator_client,
    emulator_settings,
    turn,
)
from agent_loop_testing.pytest_plugin import Install, Stored

CONTENT = "def make_widget(name):\n    return {'name': name, 'ok': True}\n"


def _change() -> list[Turn]:
    return [
        turn(tool_calls=[call("stage_file", path="src/widgets/core.py", content=CONTENT)]),
        turn(
            tool_calls=[
                call("submit_implementation", title="Mark widgets ok", body="b", summary="s")
            ]
        ),
        turn("Done."),
    ]


def _passes() -> dict[str, list[Turn]]:
    return {VERIFIER_MARKER: [turn('{"verified": true, "notes": "fine"}')]}


def _assert_released_and_rested(emulator: GitHubEmulator, number: int) -> None:
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    assert emulator.refs("refs/heads/agent-loop/") == {}
    assert any("agent-loop:backoff v1 attempts=1" in c.body for c in emulator.comments(number))


def _assert_released_and_left_alone(emulator: GitHubEmulator, number: int) -> None:
    """An operator's fault (credentials, an outage): no back-off, and no trace on the thread."""
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    assert emulator.refs("refs/heads/agent-loop/") == {}
    assert emulator.comments(number) == []


async def test_a_failed_pull_request_create_is_recorded_and_cleaned_up(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
    stored: Stored,
) -> None:
    number = emulator.add_issue("Mark widgets ok", "Widgets should say they are ok.")
    emulator.inject_fault("POST", r"/pulls$", status=500, times=10)
    model = install(ScriptedModel(_change(), routes=_passes()))

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.ERROR
    assert record.error.startswith("GitHubUnavailable")
    assert [a.verified for a in record.attempts] == [True]
    assert record.trace
    assert record.links.pr_url == ""
    assert record.fault == "operator"  # GitHub kept failing: not the issue's fault
    assert record.backoff_until is None
    assert stored(record) == record
    _assert_released_and_left_alone(emulator, number)
    assert all(not i.is_pull_request for i in map(emulator.issue, range(1, number + 1)))


async def test_a_builder_model_error_is_a_failed_run(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
) -> None:
    number = emulator.add_issue("Mark widgets ok", "")
    model = install(ScriptedModel([turn(error=RuntimeError("provider is down"))]))

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.ERROR
    assert "provider is down" in record.error
    assert record.attempts == []
    assert any(not step.ok for step in record.trace)
    _assert_released_and_rested(emulator, number)


async def test_a_verifier_model_error_is_not_a_verdict(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
) -> None:
    number = emulator.add_issue("Mark widgets ok", "")
    model = install(
        ScriptedModel(_change(), routes={VERIFIER_MARKER: [turn(error=RuntimeError("overloaded"))]})
    )

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.ERROR
    assert record.error.startswith("VerifierError")
    assert [(a.verified, "overloaded" in a.notes) for a in record.attempts] == [(False, True)]
    bodies = [c.body for c in emulator.comments(number)]
    assert not any("verification" in b for b in bodies)
    _assert_released_and_rested(emulator, number)


async def test_the_budget_stops_a_run(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
) -> None:
    number = emulator.add_issue("Mark widgets ok", "")
    (first,) = script = _change()[:1]
    install(ScriptedModel(script))

    record = await tick(max_tokens_per_run=100)

    assert record is not None
    assert record.outcome is Outcome.BUDGET_EXCEEDED
    # The first call's usage (a scripted turn's default 100 in + 20 out) is over the budget
    # of 100 tokens, so the run stops before a second call.
    one_call = first.prompt_tokens + first.completion_tokens
    assert record.usage.tokens == one_call
    _assert_released_and_rested(emulator, number)


async def test_skip_issue_comments_and_rests(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
) -> None:
    number = emulator.add_issue("Make it better", "Somehow.")
    model = install(
        ScriptedModel(
            [turn(tool_calls=[call("skip_issue", reason="Too vague: which part?")]), turn("ok")]
        )
    )

    record = await tick()

    model.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.SKIPPED
    assert record.error == "declined by the builder: Too vague: which part?"
    assert any("Too vague: which part?" in c.body for c in emulator.comments(number))
    _assert_released_and_rested(emulator, number)
    emulator.add_comment(number, "The colour part.", author="acme")
    again = install(ScriptedModel([turn(tool_calls=[call("skip_issue", reason="x")]), turn("ok")]))
    assert (await tick()) is not None
    again.assert_finished()


def _open_agent_pull(emulator: GitHubEmulator, number: int) -> None:
    branch = f"agent-loop/issue-{number}-other-run"
    emulator.push(branch, {"z.txt": "z\n"}, author=emulator.bot, message="z")
    emulator.open_pull(branch, title="From another deployment", author=emulator.bot)


def _close(emulator: GitHubEmulator, number: int) -> None:
    emulator.close_issue(number)


def _edit_agent_pull(emulator: GitHubEmulator, number: int) -> None:
    """An agent PR opened before the run (for another issue) now says it fixes this one:
    no new pull number appears, only the pull request's update time moves."""
    (pull,) = emulator.pulls()
    emulator.edit_issue(pull.number, body=f"Fixes #{number}", by=emulator.owner)


def _with_agent_pull_for_another_issue(emulator: GitHubEmulator) -> None:
    branch = "agent-loop/issue-99-elsewhere"
    emulator.push(branch, {"y.txt": "y\n"}, author=emulator.bot, message="y")
    emulator.open_pull(branch, title="Elsewhere", body="Implements #99.", author=emulator.bot)


@pytest.mark.parametrize(
    ("meanwhile", "reason"),
    [
        (_open_agent_pull, "an agent pull request for #1 appeared during the run"),
        (_close, "#1 was closed during the run"),
        (_edit_agent_pull, "an agent pull request for #1 appeared during the run"),
    ],
)
async def test_work_overtaken_during_the_run_is_not_applied(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
    meanwhile: Callable[[GitHubEmulator, int], None],
    reason: str,
) -> None:
    number = emulator.add_issue("Mark widgets ok", "")
    if meanwhile is _edit_agent_pull:
        _with_agent_pull_for_another_issue(emulator)
    scripted = ScriptedModel(_change(), routes=_passes())
    happened: list[bool] = []

    async def racing(
        model: str, system: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> LLMMessage:
        if VERIFIER_MARKER in system and not happened:
            meanwhile(emulator, number)  # while the verifier thinks
            happened.append(True)
        return await scripted(model, system, messages, tools)

    install(scripted, via=racing)
    record = await tick()

    scripted.assert_finished()
    assert record is not None
    assert record.outcome is Outcome.SKIPPED
    assert record.error == reason
    assert not any("issue-1-mark" in ref for ref in emulator.refs("refs/heads/"))
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    assert not any("backoff" in c.body for c in emulator.comments(number))


@pytest.mark.parametrize("per_page", [100, 2])
async def test_the_pre_write_check_reads_one_listing_unless_it_spans_pages(
    emulator: GitHubEmulator, tmp_path: pathlib.Path, per_page: int
) -> None:
    """One page of open issues: the check is that listing again (the closed issue is
    missing from it, no pull request changed, so the pulls are not asked). Several
    pages: the issue itself and the open pulls, two requests instead of every page."""
    for title in ("One", "Two", "Three"):
        emulator.add_issue(title, "")
    async with emulator_client(emulator, per_page=per_page) as github:
        finder = IssueFinder(
            github,
            emulator_settings(emulator, tmp_path),
            agent_login=emulator.bot,
            now=datetime.now(UTC),
        )
        await finder.open_issues()
        assert await finder.overtaken(2, check_pulls=True) == ""
        emulator.close_issue(2)
        before = github.stats.by_route()
        assert await finder.overtaken(2, check_pulls=True) == "#2 was closed during the run"
        after = github.stats.by_route()
    asked = {r for r in after if after[r] != before.get(r)}
    if per_page == 100:
        assert asked == {"GET /repos/{owner}/{repo}/issues"}
    else:
        assert asked == {"GET /repos/{owner}/{repo}/issues/{issue_number}"}


async def test_a_change_identical_to_the_base_opens_no_empty_pull_request(
    emulator: GitHubEmulator,
    tick: Callable[..., Any],
    install: Install,
) -> None:
    """The issue is already done on the base and the model re-stages a file as it is:
    before, the verifier passed it and the builder opened a pull request with no changed
    files. Now the submission is refused, and the model declines."""
    number = emulator.add_issue("Make widgets", "We need make_widget(name).")
    unchanged = "def make_widget(name):\n    return {'name': name}\n"
    model = install(
        ScriptedModel(
            [
                turn(
                    tool_calls=[call("stage_file", path="src/widgets/core.py", content=unchanged)]
                ),
                turn(
                    tool_calls=[
                        call("submit_implementation", title="Make widgets", body="b", summary="s")
                    ]
                ),
                turn(
                    tool_calls=[call("skip_issue", reason="make_widget(name) exists already.")],
                    expect_tool_result_contains="identical to the base branch",
                ),
                turn("Skipped."),
            ]
        )
    )

    record = await tick()

    assert record is not None
    assert record.outcome is Outcome.SKIPPED
    assert emulator.pulls() == []
    assert emulator.refs("refs/heads/agent-loop/") == {}
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    model.assert_finished()
