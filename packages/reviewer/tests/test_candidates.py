"""Re-reading a PR once claimed: only what another run's pass would have moved."""

from __future__ import annotations

from typing import Any

from agent_loop_reviewer._candidates import read_snapshot, reread_after_claim
from agent_loop_testing import GitHubEmulator, emulator_client


async def test_an_unchanged_pr_keeps_the_selection_snapshot(
    emulator: GitHubEmulator, open_pr: Any
) -> None:
    number = await open_pr()
    async with emulator_client(emulator) as gh:
        seen = await read_snapshot(gh, await gh.get_pull(number))
        claim_comment = await gh.create_issue_comment(number, "claim")  # the run's own
        before = gh.stats.total

        again = await reread_after_claim(
            gh, seen, await gh.get_pull(number), own_comment=claim_comment.id
        )

        assert again is seen
        assert gh.stats.total - before == 2  # the pull and its conversation


async def test_a_new_comment_or_a_moved_head_reads_everything_again(
    emulator: GitHubEmulator, open_pr: Any, pr_branch: str
) -> None:
    number = await open_pr()
    async with emulator_client(emulator) as gh:
        seen = await read_snapshot(gh, await gh.get_pull(number))
        emulator.add_comment(number, "Fixed in another pass.", author=emulator.bot)
        emulator.add_review(number, author="alice", body="More.", state="COMMENTED")

        again = await reread_after_claim(gh, seen, await gh.get_pull(number), own_comment=None)

        assert [c.body for c in again.comments] == ["Fixed in another pass."]
        assert [r.body for r in again.reviews] == ["More."]
        emulator.push(pr_branch, {"src/calc.py": "x = 1\n"}, author="alice", message="mine")
        moved = await gh.get_pull(number)
        latest = await reread_after_claim(gh, again, moved, own_comment=None)
        assert latest.pull.head_sha == moved.head_sha != again.pull.head_sha
