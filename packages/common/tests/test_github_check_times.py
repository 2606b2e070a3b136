"""Check runs and statuses carry GitHub's timestamps, so a reader can tell a failure that
arrived after a given moment (the reviewer's last pass) from one it has already seen."""

from __future__ import annotations

from agent_loop_testing import GitHubEmulator, emulator_client


async def test_check_runs_and_statuses_carry_their_times() -> None:
    emu = GitHubEmulator()
    sha = emu.seed_files({"README.md": "hi\n"})
    emu.set_check_run(sha, "tests", conclusion="failure")
    emu.set_status(sha, "ci/build", "failure", "broken")
    emu.set_check_run(sha, "lint", status="in_progress", conclusion=None)
    gh = emulator_client(emu)
    runs = {r.name: r for r in await gh.list_check_runs(sha)}
    (status,) = await gh.list_statuses(sha)

    tests, lint = runs["tests"], runs["lint"]
    assert tests.started_at is not None
    assert tests.completed_at is not None
    assert lint.started_at is not None
    assert lint.completed_at is None
    assert status.updated_at is not None
    # The emulator's clock moves one second per write: the order of the writes shows.
    assert tests.completed_at < status.updated_at < lint.started_at
