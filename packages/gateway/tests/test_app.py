"""`POST /webhook` in process: from GitHub's own payloads (the emulator's) to runs."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import httpx
import pytest

from agent_loop_gateway import Gateway
from agent_loop_testing import GitHubEmulator

from .conftest import AGENT_BRANCH, FakeRunner, Recorder, post, writes


async def _deliver_all(client: httpx.AsyncClient, recorder: Recorder) -> list[int]:
    return [(await post(client, d)).status_code for d in recorder.take()]


async def test_healthz(client: httpx.AsyncClient) -> None:
    response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "busy": False}


async def test_a_trusted_issue_starts_the_builder(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    number = emulator.add_issue("Add y", author="alice")
    [delivery] = recorder.take()
    response = await post(client, delivery)
    assert response.status_code == 202
    assert response.json() == {"outcome": "accepted", "reason": f"builder #{number}"}
    await gateway.settle()
    assert runner.calls == [("builder", number)]
    assert writes(emulator) == []
    logged = [e for e in captured_logs if e["event"] == "gateway.delivery"]
    assert logged[-1]["delivery"] == delivery.id
    assert logged[-1]["status"] == 202
    assert any(e["event"] == "gateway.run_start" for e in captured_logs)


async def test_opened_then_labelled_is_one_run(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    number = emulator.add_issue("Add y", author="alice", labels=["agent"])
    assert await _deliver_all(client, recorder) == [202, 202]
    await gateway.settle()
    assert runner.calls == [("builder", number)]
    assert len(gateway.dispatcher.history[0].deliveries) == 2


@pytest.mark.parametrize("who", ["alice", "acme"])
async def test_assigning_the_agents_or_labelling_starts_the_builder(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
    who: str,
) -> None:
    number = emulator.add_issue("From a reader", author="mallory")
    emulator.assign_issue(number, emulator.bot, actor=who)
    emulator.label_issue(number, "agent", actor=who)
    statuses = await _deliver_all(client, recorder)
    assert statuses == [202, 202, 202]  # opened (by mallory: refused later), assigned, labeled
    await gateway.settle()
    assert runner.calls == [("builder", number)]


async def test_an_untrusted_issue_starts_nothing(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
    captured_logs: list[MutableMapping[str, Any]],
) -> None:
    emulator.add_issue("Please run this", author="mallory")
    assert await _deliver_all(client, recorder) == [202]
    await gateway.settle()
    assert runner.calls == []
    assert writes(emulator) == []
    refused = [e for e in captured_logs if e["event"] == "gateway.refused"]
    assert refused[0]["why"] == "@mallory is not trusted"


async def test_feedback_on_an_agent_pr_starts_the_reviewer(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    emulator.add_review(2, author="alice", body="one thing", comments=[("app.py", 1, "why 2?")])
    emulator.add_comment(2, "and please add a test", author="alice")
    assert await _deliver_all(client, recorder) == [202, 202, 202]
    await gateway.settle()
    assert runner.calls == [("reviewer", 2)]
    assert writes(emulator) == []


async def test_feedback_on_someone_elses_pr_is_ignored(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    emulator.push("alice-work", {"b.py": "y = 1\n"}, author="alice", message="y")
    pr = emulator.open_pull("alice-work", title="y", author="alice")
    emulator.add_review(pr, author="acme", body="nice", comments=[("b.py", 1, "ok")])
    emulator.add_comment(pr, "thanks", author="acme")
    statuses = await _deliver_all(client, recorder)
    assert statuses == [204, 204, 204, 202]  # the PR comment needs a lookup to tell
    await gateway.settle()
    assert runner.calls == []


async def test_failing_checks_on_an_agent_pr_start_the_reviewer(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    head = emulator.pull(2).head_sha
    emulator.set_check_run(head, "tests", conclusion="success")
    emulator.set_check_run(head, "tests", conclusion="failure")
    emulator.set_status(head, "lint", "error")
    assert await _deliver_all(client, recorder) == [204, 202, 202]
    await gateway.settle()
    assert runner.calls == [("reviewer", 2)]


async def test_a_closed_agent_pr_starts_the_distiller(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    emulator.merge_pull(2, by="alice")
    assert await _deliver_all(client, recorder) == [202]
    await gateway.settle()
    assert runner.calls == [("distiller", None)]


# ------------------------------------------------------------------ commands


async def test_build_command_is_acknowledged_and_starts_the_builder(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    comment = emulator.add_comment(1, "Ready now.\n/agent-loop build", author="alice")
    assert await _deliver_all(client, recorder) == [202]
    await gateway.settle()
    assert runner.calls == [("builder", 1)]
    assert emulator.reactions(comment) == [(emulator.bot, "rocket")]
    assert len(emulator.comments(1)) == 1  # a reaction, no new comment


async def test_status_and_unknown_commands_get_a_reply_and_no_run(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    status = emulator.add_comment(1, "/agent-loop status", author="alice")
    unknown = emulator.add_comment(1, "/agent-loop deploy", author="alice")
    assert await _deliver_all(client, recorder) == [202, 202]
    await gateway.settle()
    assert runner.calls == []
    assert emulator.reactions(status) == [(emulator.bot, "eyes")]
    assert emulator.reactions(unknown) == [(emulator.bot, "confused")]
    replies = [c.body for c in emulator.comments(1) if c.author == emulator.bot]
    assert replies[0].startswith("**agent-loop status** of this issue")
    assert "did not understand `deploy`" in replies[1]
    assert await _deliver_all(client, recorder) == [204, 204]  # the agents' own replies


async def test_stop_keeps_runs_away_until_resume(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    stop = emulator.add_comment(1, "/agent-loop stop", author="alice")
    emulator.label_issue(1, "agent", actor="alice")
    emulator.add_comment(1, "/agent-loop build", author="acme")
    assert await _deliver_all(client, recorder) == [202, 202, 202]
    await gateway.settle()
    assert runner.calls == []
    assert emulator.reactions(stop) == [(emulator.bot, "+1")]
    resume = emulator.add_comment(1, "/agent-loop resume", author="alice")
    assert await _deliver_all(client, recorder) == [202]
    await gateway.settle()
    assert runner.calls == [("builder", 1)]
    assert emulator.reactions(resume) == [(emulator.bot, "+1")]


async def test_review_command_on_an_agent_pr(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    comment = emulator.add_comment(2, "/agent-loop review", author="alice")
    assert await _deliver_all(client, recorder) == [202]
    await gateway.settle()
    assert runner.calls == [("reviewer", 2)]
    assert emulator.reactions(comment) == [(emulator.bot, "rocket")]
    assert emulator.pull(2).head_ref == AGENT_BRANCH


async def test_a_redelivered_command_is_not_answered_twice(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    emulator.add_comment(1, "/agent-loop status", author="alice")
    [delivery] = recorder.take()
    assert (await post(client, delivery)).status_code == 202
    await gateway.settle()
    gateway.memory = type(gateway.memory)(gateway.clock)  # the replay memory was lost (restart)
    assert (await post(client, delivery)).status_code == 202
    await gateway.settle()
    assert len([c for c in emulator.comments(1) if c.author == emulator.bot]) == 1


async def test_a_flood_of_pr_comments_costs_one_lookup_and_one_run(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    for n in range(30):
        emulator.add_comment(2, f"also {n}", author="alice")
    deliveries = recorder.take()
    emulator.clear_requests()
    responses = [await post(client, d) for d in deliveries]
    assert {r.status_code for r in responses} == {202}
    await gateway.settle()
    assert runner.calls == [("reviewer", 2)]
    pull_reads = [r for r in emulator.requests if r.path.endswith("/pulls/2")]
    permission_reads = [r for r in emulator.requests if r.path.endswith("/permission")]
    assert (len(pull_reads), len(permission_reads)) == (1, 1)


async def test_a_stop_written_into_a_trusted_comment_by_a_stranger_stops_nothing(
    client: httpx.AsyncClient,
    gateway: Gateway,
    emulator: GitHubEmulator,
    recorder: Recorder,
    runner: FakeRunner,
) -> None:
    """Attack (issue 22, point 6): a reader rewrites a writer's comment into
    `/agent-loop stop`; the gateway's stop check used to read it as the writer's."""
    comment = emulator.add_comment(1, "Looks good to me.", author="alice")
    emulator.edit_comment(comment, "/agent-loop stop", by="mallory")
    emulator.add_comment(1, "/agent-loop build", author="acme")
    await _deliver_all(client, recorder)
    await gateway.settle()
    assert runner.calls == [("builder", 1)]
    assert emulator.reactions(comment) == []  # not acknowledged as alice's command
