"""The reviewer's idle proof: an agent PR already reviewed is proven idle without Flyte,
and new feedback, a pushed head or a finished check makes the next tick a full one.

A real full tick in process (githubkit over HTTP to the served emulator, the real
selection, the reviewer's marks in the real memory) leaves its `IdleProof` as the
scheduled task does; `fast_idle_tick`, the lean path of `agent-loop run reviewer`,
re-checks it with plain conditional requests.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agent_loop_common.claims import BackoffMarker, new_run_id, render_backoff
from agent_loop_common.memory import ReviewedMark, mark_reviewed
from agent_loop_common.records import Role, RunRecord
from agent_loop_common.runtime import (
    IdleProof,
    fast_idle_tick,
    leave_idle_proof,
    local_memory,
    local_raw_data_path,
    open_runtime,
)
from agent_loop_common.settings import Settings
from agent_loop_reviewer import run_reviewer_tick
from agent_loop_testing import GitHubEmulator, emulator_client, emulator_settings

NOTE = "no agent pull request needed a pass"
BRANCH = "agent-loop/issue-1-add"


@pytest.fixture
def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Generator[tuple[GitHubEmulator, Settings, str]]:
    """An agent PR (#1) whose head the reviewer already reviewed; its head sha."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-key")
    emulator = GitHubEmulator()
    emulator.seed_files({"README.md": "# widgets\n", "src/calc.py": "def add(a, b):\n    pass\n"})
    emulator.add_user("alice", permission="write")
    head = emulator.push(
        BRANCH,
        {"src/calc.py": "def add(a, b):\n    return a + b\n"},
        author=emulator.bot,
        message="Add",
    )
    with emulator.serve() as url:
        yield emulator, emulator_settings(emulator, tmp_path, github_api_url=url), head


async def open_reviewed_pull(emulator: GitHubEmulator, settings: Settings, head: str) -> int:
    async with emulator_client(emulator) as gh:
        pull = await gh.create_pull(title="Add", body="Fixes #1.", head=BRANCH, base="main")
    mark = ReviewedMark(pr=pull.number, head_sha=head, reviewed_at=datetime.now(UTC))
    await mark_reviewed(local_memory(settings), mark)
    return pull.number


async def full_tick(settings: Settings) -> tuple[RunRecord | None, IdleProof | None]:
    """One full untargeted reviewer tick, leaving its proof as the scheduled task does."""
    async with open_runtime(
        settings, Role.REVIEWER, memory_root=str(local_raw_data_path(settings))
    ) as runtime:
        record = await run_reviewer_tick(runtime)
        proof = await leave_idle_proof(runtime, record, note=NOTE)
    return record, proof


def proven(settings: Settings) -> bool:
    return fast_idle_tick(settings, Role.REVIEWER) is not None


async def test_a_reviewed_pull_request_is_proven_idle(
    served: tuple[GitHubEmulator, Settings, str],
) -> None:
    emulator, settings, head = served
    await open_reviewed_pull(emulator, settings, head)
    assert not proven(settings)  # no stored state: the first tick is the full one
    record, proof = await full_tick(settings)
    assert record is None
    assert proof is not None
    routes = {r.url.split("/repos/acme/widgets/")[-1].split("?")[0] for r in proof.reads}
    assert {"pulls", "issues/1/comments", "pulls/1/reviews", "pulls/1/comments"} <= routes
    assert any(route.endswith("/check-runs") for route in routes)
    used = emulator.rate_limit_remaining(emulator.bot)
    summary = fast_idle_tick(settings, Role.REVIEWER)
    assert summary is not None
    assert (summary.outcome, summary.note) == ("idle", NOTE)
    assert emulator.rate_limit_remaining(emulator.bot) == used


CHANGES: dict[str, Callable[[GitHubEmulator, int, str], object]] = {
    "a comment": lambda e, pr, _: e.add_comment(pr, "Please rename it.", author="alice"),
    "a review comment": lambda e, pr, _: e.add_review(
        pr, author="alice", comments=[("src/calc.py", 2, "Why plus?")]
    ),
    "a pushed head": lambda e, _, __: e.push(
        BRANCH, {"src/calc.py": "def add(a, b):\n    return b + a\n"}, author="alice", message="x"
    ),
    "a check finishing": lambda e, _, head: e.set_check_run(head, "tests", conclusion="failure"),
    "a status reported": lambda e, _, head: e.set_status(head, "ci", "failure"),
}


@pytest.mark.parametrize("change", list(CHANGES))
async def test_new_feedback_makes_the_next_tick_a_full_one(
    served: tuple[GitHubEmulator, Settings, str], change: str
) -> None:
    emulator, settings, head = served
    pr = await open_reviewed_pull(emulator, settings, head)
    await full_tick(settings)
    assert proven(settings)
    CHANGES[change](emulator, pr, head)
    assert not proven(settings)


async def test_a_back_off_bounds_the_proof_by_its_end(
    served: tuple[GitHubEmulator, Settings, str],
) -> None:
    emulator, settings, head = served
    pr = await open_reviewed_pull(emulator, settings, head)
    until = (datetime.now(UTC) + timedelta(minutes=10)).replace(microsecond=0)
    marker = render_backoff(BackoffMarker(attempts=1, until=until, run=new_run_id()))
    emulator.add_comment(pr, f"Resting.\n{marker}", author=emulator.bot)
    record, proof = await full_tick(settings)
    assert record is None
    assert proof is not None
    assert proof.recheck_at == until  # not the hour a proof lasts otherwise
    assert fast_idle_tick(settings, Role.REVIEWER, now=until - timedelta(seconds=1))
    assert fast_idle_tick(settings, Role.REVIEWER, now=until) is None
