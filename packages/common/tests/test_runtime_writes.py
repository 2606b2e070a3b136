"""Durable writes: declared once, run direct or as tasks; a receipt carries its own
facade's requests, and the tick adds them up."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agent_loop_common.github import GitHub, RequestStats
from agent_loop_common.runtime import (
    DirectWriter,
    Receipt,
    TaskWrites,
    WriteBook,
    write_with_receipt,
)
from agent_loop_testing import GitHubEmulator, emulator_client


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


async def test_task_writes_merge_receipts_that_crossed_a_task_boundary() -> None:
    run = RequestStats()
    run.record("GET", "/repos/{owner}/{repo}/issues", 200)
    made = RequestStats()
    made.record("POST", "/repos/{owner}/{repo}/pulls", 201)
    made.record("GET", "/repos/{owner}/{repo}/issues", 304)
    sent = Titled(title="x", requests_by_route=made.by_route())
    # A task output travels as JSON: the status keys come back as strings.
    back = Titled.model_validate(json.loads(sent.model_dump_json()))
    seen: list[dict[str, object]] = []

    async def retitle(github: GitHub, title: str) -> Titled:
        raise AssertionError("the task runs, not the function")

    async def task(**inputs: object) -> Titled:
        seen.append(inputs)
        return back

    write = TaskWrites({"retitle": task}).writer(run)
    assert await write(retitle, "x") is back
    assert seen == [{"title": "x", "on_repo": ""}]  # the repository written to travels too
    assert run.by_route() == {
        "GET /repos/{owner}/{repo}/issues": {200: 1, 304: 1},
        "POST /repos/{owner}/{repo}/pulls": {201: 1},
    }
    assert Titled(title="y").requests_by_route == {}
    with pytest.raises(ValidationError):
        back.title = "changed"  # receipts are frozen


async def test_a_write_is_declared_once_and_runs_in_process_on_the_runs_facade() -> None:
    book = WriteBook()
    emulator = GitHubEmulator()
    number = emulator.add_issue("first")

    @book.write
    async def read_title(github: GitHub, issue: int) -> Titled:
        return Titled(title=(await github.get_issue(issue)).title)

    assert book.names == ("read_title",)
    with pytest.raises(ValueError, match="declared twice"):
        book.write(read_title)
    async with emulator_client(emulator) as github:
        receipt = await DirectWriter(github)(read_title, number)
        assert github.stats.total == 1  # counted on the run's own facade
    assert receipt == Titled(title="first")


def test_durable_writes_become_tasks_of_the_env_with_the_writes_inputs() -> None:
    import sys
    import types

    import flyte

    book = WriteBook()

    @book.write
    async def post_it(github: GitHub, issue: int, body: str) -> Titled:
        return Titled(title=body)

    module = types.ModuleType("agent_loop_test_env")
    sys.modules[module.__name__] = module
    try:
        env = flyte.TaskEnvironment(name="writes-test")
        book.durable(env, module=module.__name__)
        task = module.post_it
        assert set(env.tasks) == {"writes-test.post_it"}
        assert list(task.interface.inputs) == ["issue", "body", "on_repo"]
        assert task.func.__module__ == module.__name__
    finally:
        del sys.modules[module.__name__]
