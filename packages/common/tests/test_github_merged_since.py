"""`merged_pulls(since=...)` stops listing early only where the server sorts as asked.

GitHub lists pull requests by `updated_at`, newest first, when asked (`sort=updated`), so
the listing can stop at the first one last updated before `since`. A GitHub-like server
that ignores `sort` (numbers ascending, say) must still give every pull request merged
since then: the early stop waits for proof that the order is newest first.
"""

from __future__ import annotations

from datetime import timedelta

import httpx

from agent_loop_testing import GitHubEmulator, HistoryPull, emulator_client


def _history() -> tuple[GitHubEmulator, list[int]]:
    emulator = GitHubEmulator()
    emulator.seed_files({"a.py": "0\n"})
    steps = [
        HistoryPull(f"p{n}", f"Change {n}", {"a.py": f"{n}\n"}, wait=timedelta(days=10))
        for n in range(1, 5)
    ]
    history = emulator.seed_history(steps)
    return emulator, [history.numbers[f"p{n}"] for n in range(1, 5)]


async def test_since_on_a_server_that_sorts() -> None:
    emulator, numbers = _history()
    async with emulator_client(emulator) as gh:
        third = (await gh.get_pull(numbers[2])).merged_at
        assert third is not None
        found = await gh.merged_pulls(since=third)
    assert sorted(p.number for p in found) == numbers[2:]


async def test_since_on_a_server_that_ignores_sort() -> None:
    emulator, numbers = _history()
    async with httpx.AsyncClient(transport=emulator.transport(), base_url="http://e") as http:
        ascending = (
            await http.get(
                f"/repos/{emulator.full_name}/pulls",
                params={"state": "closed", "direction": "asc", "per_page": 100},
                headers={"Authorization": f"token {emulator.bot_token}"},
            )
        ).json()
    assert [p["number"] for p in ascending] == numbers
    emulator.inject_fault("GET", r"/pulls$", status=200, body=ascending, times=10)
    async with emulator_client(emulator) as gh:
        third = (await gh.get_pull(numbers[2])).merged_at
        assert third is not None
        found = await gh.merged_pulls(since=third)
    assert sorted(p.number for p in found) == numbers[2:]
