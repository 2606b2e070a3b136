"""Rebase merges, and a pull request opened right after a merge, as GitHub makes them.

`PUT /pulls/{n}/merge` with `merge_method: rebase` replays the PR's commits on the base
branch, each keeping its author and message (GitHub commits them), and answers the last
one: GitHub's `merge_commit_sha` for a rebase. A branch made from the base branch in the
same second as the merge before it still has that merge as its merge base (the best
common ancestor is decided by the graph, not by commit times, which tie).
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from agent_loop_testing import GitHubEmulator, emulator_client


async def _merge(emulator: GitHubEmulator, number: int, method: str) -> httpx.Response:
    """`PUT /pulls/{n}/merge` as the owner, over HTTP as any client sends it."""
    token = emulator.token_for(emulator.owner)
    async with httpx.AsyncClient(
        transport=emulator.transport(), base_url="https://api.github.com"
    ) as client:
        return await client.put(
            f"/repos/{emulator.full_name}/pulls/{number}/merge",
            json={"merge_method": method},
            headers={"Authorization": f"token {token}"},
        )


async def test_a_rebase_merge_replays_each_commit_on_the_base_branch() -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"calc.py": "v1\n", "README.md": "# c\n"})
    emulator.push("other", {"README.md": "# calc\n"}, author="acme", message="Readme")
    moved = emulator.merge_pull(emulator.open_pull("other", title="Readme"))
    emulator.push("topic", {"calc.py": "v2\n"}, message="Fix calc", author="acme")
    emulator.push("topic", {"tests/test_calc.py": "t\n"}, message="Test calc", author="acme")
    number = emulator.open_pull("topic", title="Fix calc")
    async with emulator_client(emulator) as gh:
        head = (await gh.get_pull(number)).head_sha
        merged = await _merge(emulator, number, "rebase")
        assert merged.status_code == 200, merged.text
        answer = merged.json()["sha"]
        last = await gh.get_commit(answer)
        first = await gh.get_commit(last.parents[0])
        assert first.parents == (moved,)  # replayed on the base branch as it is now
        assert [first.message, last.message] == ["Fix calc", "Test calc"]
        assert answer != head  # new commits, GitHub their committer
        assert (await gh.pull_links(number)).merge_commit_sha == answer
        assert (await gh.get_ref("heads/main")) == answer
        assert (await gh.get_pull(number)).merged
        assert await gh.get_file("calc.py", answer) == b"v2\n"
        assert await gh.get_file("README.md", answer) == b"# calc\n"


async def test_a_branch_made_in_the_second_of_squashes_diffs_against_the_last() -> None:
    emulator = GitHubEmulator(start=datetime(2026, 1, 1, tzinfo=UTC))
    emulator.seed_files({"calc.py": "v1\n", "README.md": "# c\n"})
    with emulator.same_second():
        for n in range(2, 8):
            emulator.push(f"v{n}", {"calc.py": f"v{n}\n"}, author="acme", message=f"v{n}")
            emulator.merge_pull(emulator.open_pull(f"v{n}", title=f"v{n}"), method="squash")
        emulator.push("readme", {"README.md": "# calc\n"}, author="acme", message="Readme")
        number = emulator.open_pull("readme", title="Readme")
    async with emulator_client(emulator) as gh:
        assert [f.filename for f in await gh.list_pull_files(number)] == ["README.md"]


async def test_an_unknown_merge_method_is_refused() -> None:
    emulator = GitHubEmulator()
    emulator.seed_files({"calc.py": "v1\n"})
    emulator.push("topic", {"calc.py": "v2\n"}, author="acme", message="Fix")
    number = emulator.open_pull("topic", title="Fix")
    answer = await _merge(emulator, number, "octopus")
    assert answer.status_code == 422
    assert not emulator.pull(number).merged
