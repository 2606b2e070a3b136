"""The run spine: every exit path releases what was claimed and leaves the right trace
in memory (a record when something was claimed, only the idle counter otherwise)."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncGenerator

import flyte
import pytest

from agent_loop_common.llm import BudgetExceeded
from agent_loop_common.records import Outcome, Role, Target, TargetKind
from agent_loop_common.runtime import (
    RunScope,
    Runtime,
    local_memory,
    local_raw_data_path,
    run_scoped,
    run_task,
)
from agent_loop_common.settings import Settings
from agent_loop_testing import GitHubEmulator, stored_record
from agent_loop_testing.pytest_plugin import AgentRuntime


@pytest.fixture
async def runtime(agent_runtime: AgentRuntime) -> AsyncGenerator[Runtime]:
    async with agent_runtime(Role.BUILDER) as rt:
        yield rt


async def _claim_issue(scope: RunScope, number: int) -> None:
    claim = await scope.runtime.claimer.claim("issue", number)
    assert claim is not None
    scope.target = Target(kind=TargetKind.ISSUE, number=number, title="t")


async def test_success_writes_one_record_and_releases(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Add a widget", "please")

    async def body(scope: RunScope) -> None:
        await _claim_issue(scope, number)
        async with scope.stage("build"):
            assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is not None
        scope.finish(Outcome.OPENED_PR)

    record = await run_scoped(runtime, body)
    assert record is not None
    assert record.outcome is Outcome.OPENED_PR
    assert "build" in record.stage_seconds
    assert record.github.requests > 0
    assert stored_record(runtime.memory, record.run_id, finished_at=record.finished_at) == record
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None
    assert runtime.claimer.held() == ()


async def test_an_error_after_claiming_is_recorded_and_released(
    runtime: Runtime, emulator: GitHubEmulator
) -> None:
    number = emulator.add_issue("Broken", "")

    async def body(scope: RunScope) -> None:
        await _claim_issue(scope, number)
        raise RuntimeError("the model said something odd")

    record = await run_scoped(runtime, body)
    assert record is not None
    assert record.outcome is Outcome.ERROR
    assert record.error == "RuntimeError: the model said something odd"
    assert emulator.ref_sha(f"agent-loop/claims/issue-{number}") is None


async def test_budget_stop_is_its_own_outcome(runtime: Runtime, emulator: GitHubEmulator) -> None:
    number = emulator.add_issue("Big", "")

    async def body(scope: RunScope) -> None:
        await _claim_issue(scope, number)
        raise BudgetExceeded("token budget of 10 reached")

    record = await run_scoped(runtime, body)
    assert record is not None
    assert record.outcome is Outcome.BUDGET_EXCEEDED


async def test_a_run_that_claimed_nothing_leaves_no_record(runtime: Runtime) -> None:
    async def body(scope: RunScope) -> None:
        scope.finish(Outcome.SKIPPED)

    assert await run_scoped(runtime, body) is None
    runs_root = pathlib.Path(runtime.memory.remote_path("x")).parent
    assert not list(runs_root.glob("*-runs-*"))


async def test_etag_cache_survives_to_the_next_run(
    emulator: GitHubEmulator, agent_runtime: AgentRuntime
) -> None:
    emulator.add_issue("One", "")
    requests_per_run: list[tuple[int, int]] = []
    for _ in range(2):
        async with agent_runtime(Role.BUILDER) as rt:
            await rt.github.list_issues()
            requests_per_run.append((rt.github.stats.total, rt.github.stats.not_modified))
    assert requests_per_run == [(1, 0), (1, 1)]


_probe_env = flyte.TaskEnvironment(name="runtime-probe")


@_probe_env.task
async def _probe(x: int) -> dict[str, int]:
    return {"x": x * 2}


def test_run_task_runs_in_local_mode_under_the_home(settings: Settings) -> None:
    assert run_task(settings, _probe, x=21) == {"x": 42}
    assert local_raw_data_path(settings).is_dir()
    assert local_memory(settings).root == str(local_raw_data_path(settings))


async def test_an_offline_runtime_sends_github_nothing(
    settings: Settings, memory_root: str
) -> None:
    """`open_runtime(offline=True)` (the benchmark's replay): every request its facade
    would send is refused in process and counted with no status; no ETag state is kept."""
    from agent_loop_common.github import GitHubOffline
    from agent_loop_common.runtime import open_runtime

    async with open_runtime(settings, Role.BUILDER, memory_root=memory_root, offline=True) as rt:
        with pytest.raises(GitHubOffline, match=r"GET /repos/.*/issues was refused"):
            await rt.github.list_issues()
        with pytest.raises(GitHubOffline):
            await rt.claimer.claim("issue", 1)
        assert rt.github.stats.total == 2
        assert all(statuses == {0: 1} for statuses in rt.github.stats.by_route().values())
