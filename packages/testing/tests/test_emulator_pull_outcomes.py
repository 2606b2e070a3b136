"""What the distiller grades a decided PR from, served like GitHub: review threads and
their resolution, a PR's first commit and merge commit (GraphQL), and the commits of a
branch since a time (REST `since`), all through the real facade."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agent_loop_common.github import NotFound, PullHistory
from agent_loop_testing import GitHubEmulator, emulator_client


@pytest.fixture
def emu() -> GitHubEmulator:
    em = GitHubEmulator()
    em.add_user("rita", permission="write")
    em.seed_files({"README.md": "hello\n", "src/app.py": "A = 1\n"})
    return em


def _agent_pr(emu: GitHubEmulator) -> tuple[int, str]:
    first = emu.push("agent-loop/issue-1", {"src/app.py": "A = 2\n"}, author=emu.bot, message="fix")
    return emu.open_pull("agent-loop/issue-1", title="Fix A", author=emu.bot), first


async def test_threads_first_commit_and_merge_commit_in_one_request(emu: GitHubEmulator) -> None:
    pr, first = _agent_pr(emu)
    review = emu.add_review(
        pr,
        author="rita",
        state="CHANGES_REQUESTED",
        comments=[("src/app.py", 1, "Why 2?"), ("src/app.py", 1, "Add a test.")],
    )
    assert review
    gh = emulator_client(emu)
    comments = sorted(c.id for c in await gh.list_review_comments(pr))
    reply = emu.add_review_comment_reply(pr, comments[0], "Because.", author=emu.bot)
    emu.resolve_review_thread(comments[0], by="rita")
    # A reviewer's fix commit comes after the builder's head: the first commit stays.
    emu.push("agent-loop/issue-1", {"src/app.py": "A = 3\n"}, author=emu.bot, message="review fix")
    assert await gh.pull_history(pr) == PullHistory(
        threads=2, unresolved_threads=1, first_commit_sha=first, merge_commit_sha=""
    )
    merge = emu.merge_pull(pr, by="rita")
    after = await gh.pull_history(pr)
    assert (after.first_commit_sha, after.merge_commit_sha) == (first, merge)
    assert gh.stats.by_route()["POST /graphql"] == {200: 2}
    with pytest.raises(NotFound, match="99"):
        await gh.pull_history(99)
    with pytest.raises(ValueError, match="replies to a thread"):
        emu.resolve_review_thread(reply, by="rita")


async def test_commits_since_filters_by_commit_time_and_polls_for_free(
    emu: GitHubEmulator,
) -> None:
    gh = emulator_client(emu)
    start = emu.advance_clock(timedelta(days=1))
    later = emu.push("main", {"src/app.py": "A = 5\n"}, author="rita", message="later")
    listed = await gh.commits_since(None, start)
    assert [c.sha for c in listed] == [later]
    assert listed[0].committed_at is not None
    assert listed[0].committed_at >= start
    before = gh.stats.not_modified
    assert [c.sha for c in await gh.commits_since(None, start)] == [later]
    assert gh.stats.not_modified == before + 1  # unchanged branch: a free 304
    emu.advance_clock(timedelta(days=3))
    newest = emu.push("main", {"src/app.py": "A = 6\n"}, author="rita", message="newer")
    assert [c.sha for c in await gh.commits_since(None, start)] == [newest, later]
    assert len(await gh.commits_since("main", emu.now)) == 1
    with pytest.raises(ValueError, match="forward"):
        emu.advance_clock(timedelta(seconds=-1))
