"""`merged_onto`: the base of an instance for each way GitHub merges a pull request,
read through the facade from the emulator (merge, squash and rebase merges made on the
server, a fast-forward made by moving the branch)."""

from __future__ import annotations

import pytest

from agent_loop_eval._onto import merged_onto
from agent_loop_testing import GitHubEmulator, emulator_client

COMMITS = [
    {"src/calc.py": "def add(a, b):\n    return a + b\n"},
    {"tests/test_calc.py": "from calc import add\n"},
    {"README.md": "# calc, fixed\n"},
]


def _repo() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files({"src/calc.py": "def add(a, b):\n    return a - b\n", "README.md": "#\n"})
    return emulator


def _pull(emulator: GitHubEmulator, *, moved: bool) -> tuple[int, str]:
    """A three-commit pull request; with `moved`, another one lands on main after it was
    branched. Returns its number and the base branch's head just before it merges."""
    for n, change in enumerate(COMMITS, start=1):
        emulator.push("fix", change, author="acme", message=f"Fix add, part {n}")
    number = emulator.open_pull("fix", title="Fix add()")
    if moved:
        emulator.push("other", {"docs/x.md": "x\n"}, author="acme", message="Docs")
        emulator.merge_pull(emulator.open_pull("other", title="Docs"))
    before = emulator.ref_sha("heads/main")
    assert before is not None
    return number, before


@pytest.mark.parametrize("method", ["merge", "squash", "rebase"])
@pytest.mark.parametrize("moved", [False, True], ids=["base-unmoved", "base-moved"])
async def test_the_base_is_the_branch_as_it_was_before_the_merge(method: str, moved: bool) -> None:
    emulator = _repo()
    number, before = _pull(emulator, moved=moved)
    merged = emulator.merge_pull(number, method=method)
    async with emulator_client(emulator) as gh:
        pull = await gh.get_pull(number)
        merge = await gh.get_commit(merged)
        onto = await merged_onto(gh, merge, head_sha=pull.head_sha, base_sha=pull.base_sha)
        assert onto == before
        # The base and the merge differ by the pull request's whole change.
        assert await gh.get_file("tests/test_calc.py", onto) is None
        assert await gh.get_file("tests/test_calc.py", merged) == b"from calc import add\n"


async def test_a_fast_forward_has_the_pull_requests_recorded_base() -> None:
    emulator = _repo()
    number, before = _pull(emulator, moved=False)
    async with emulator_client(emulator) as gh:
        pull = await gh.get_pull(number)
        head = await gh.get_commit(pull.head_sha)
        onto = await merged_onto(gh, head, head_sha=pull.head_sha, base_sha=pull.base_sha)
        assert onto == before


async def test_a_squash_of_one_commit_with_its_message_is_still_a_squash() -> None:
    emulator = _repo()
    emulator.push("one", COMMITS[0], author="acme", message="Fix add()")
    number = emulator.open_pull("one", title="Fix add()")
    emulator.push("other", {"docs/x.md": "x\n"}, author="acme", message="Fix add()")
    before = emulator.merge_pull(emulator.open_pull("other", title="Docs"), method="squash")
    merged = emulator.merge_pull(number, method="squash")
    async with emulator_client(emulator) as gh:
        pull = await gh.get_pull(number)
        merge = await gh.get_commit(merged)
        onto = await merged_onto(gh, merge, head_sha=pull.head_sha, base_sha=pull.base_sha)
        assert onto == before


async def test_a_head_commit_the_server_no_longer_has_leaves_the_parent() -> None:
    emulator = _repo()
    number, before = _pull(emulator, moved=True)
    merged = emulator.merge_pull(number, method="squash")
    async with emulator_client(emulator) as gh:
        pull = await gh.get_pull(number)
        merge = await gh.get_commit(merged)
        emulator.inject_fault("GET", rf"/git/commits/{pull.head_sha}", status=404, times=1)
        onto = await merged_onto(gh, merge, head_sha=pull.head_sha, base_sha=pull.base_sha)
        assert onto == before
