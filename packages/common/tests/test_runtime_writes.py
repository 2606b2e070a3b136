"""Durable writes: a receipt carries its own facade's requests, and the tick adds them up."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agent_loop_common.github import GitHub, RequestStats
from agent_loop_common.runtime import CountedWrites, Receipt, write_with_receipt
from agent_loop_common.testing import GitHubEmulator


class Titled(Receipt):
    title: str


async def test_a_write_brings_its_facades_requests_on_the_receipt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emulator = GitHubEmulator()
    number = emulator.add_issue("first")

    async def read_title(github: GitHub) -> Titled:
        return Titled(title=(await github.get_issue(number)).title)

    with emulator.serve() as url:
        monkeypatch.setenv("GITHUB_API_URL", url)
        monkeypatch.setenv("GITHUB_TOKEN", emulator.bot_token)
        monkeypatch.setenv("AGENT_LOOP_REPO", emulator.full_name)
        monkeypatch.delenv("GITHUB_APP_ID", raising=False)
        receipt = await write_with_receipt(read_title)

    assert receipt.title == "first"
    ((route, statuses),) = receipt.requests_by_route.items()
    assert route == "GET /repos/{owner}/{repo}/issues/{issue_number}"
    assert statuses == {200: 1}


def test_counted_writes_merge_receipts_that_crossed_a_task_boundary() -> None:
    run = RequestStats()
    run.record("GET", "/repos/{owner}/{repo}/issues", 200)
    made = RequestStats()
    made.record("POST", "/repos/{owner}/{repo}/pulls", 201)
    made.record("GET", "/repos/{owner}/{repo}/issues", 304)
    sent = Titled(title="x", requests_by_route=made.by_route())
    # A task output travels as JSON: the status keys come back as strings.
    back = Titled.model_validate(json.loads(sent.model_dump_json()))

    assert CountedWrites(run).counted(back) is back
    assert run.by_route() == {
        "GET /repos/{owner}/{repo}/issues": {200: 1, 304: 1},
        "POST /repos/{owner}/{repo}/pulls": {201: 1},
    }
    assert Titled(title="y").requests_by_route == {}
    with pytest.raises(ValidationError):
        back.title = "changed"  # receipts are frozen
