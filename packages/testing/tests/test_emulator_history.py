"""A seeded history reads back through the facade as GitHub reports merged work: merge
commits and their parents, a merged PR's files, the issues it closes (closing keywords
and hand links, GraphQL `closingIssuesReferences`), closed by the merge."""

from __future__ import annotations

from datetime import timedelta

from agent_loop_common.github import NotFound
from agent_loop_testing import (
    GitHubEmulator,
    HistoryIssue,
    HistoryMerge,
    HistoryPull,
    HistoryPush,
    emulator_client,
    seed_cachetools_history,
)


def _emulator() -> GitHubEmulator:
    emulator = GitHubEmulator()
    emulator.seed_files({"calc.py": "def add(a, b):\n    return a - b\n", "README.md": "# c\n"})
    emulator.add_user("carol", permission="write")
    return emulator


async def test_a_history_reads_back_as_merged_work() -> None:
    emulator = _emulator()
    history = emulator.seed_history(
        [
            HistoryIssue("bug", "add() subtracts", "It should add."),
            HistoryIssue("manual", "Typo in README"),
            HistoryPull(
                "late",
                "Slow change",
                {"README.md": "# calc\n"},
                merge=False,
                links=("manual",),
                author="carol",
            ),
            HistoryPull(
                "fix",
                "Fix add()",
                {"calc.py": "def add(a, b):\n    return a + b\n", "tests/test_calc.py": "x\n"},
                body="See also other/repo#9, fixes #999.",
                closes=("bug",),
                wait=timedelta(days=2),
            ),
            HistoryMerge("late", method="squash", merged_by="carol"),
        ]
    )
    fix, late = history.numbers["fix"], history.numbers["late"]
    assert emulator.issue(history.numbers["bug"]).state == "closed"
    assert emulator.issue(history.numbers["manual"]).state == "closed"

    async with emulator_client(emulator) as gh:
        links = await gh.pull_links(fix)
        assert links.merge_commit_sha == history.merges["fix"]
        assert links.closing_issues == (history.numbers["bug"],)  # not #999, not other/repo
        assert (await gh.pull_links(late)).closing_issues == (history.numbers["manual"],)
        merge = await gh.get_commit(history.merges["fix"])
        assert len(merge.parents) == 2
        squash = await gh.get_commit(history.merges["late"])
        assert squash.parents == (history.merges["fix"],)
        # A merged PR keeps listing its own files, not an empty diff against the base.
        files = {f.filename for f in await gh.list_pull_files(fix)}
        assert files == {"calc.py", "tests/test_calc.py"}
        assert {f.filename for f in await gh.list_pull_files(late)} == {"README.md"}
        # The base the fix was merged onto still has the bug; the tarball at it says so.
        assert (await gh.get_file("calc.py", merge.parents[0])) == (
            b"def add(a, b):\n    return a - b\n"
        )
        assert await gh.download_archive(merge.parents[0])
        merged = await gh.merged_pulls()
        assert [p.number for p in merged] == [late, fix]
        after_fix = merged[1].merged_at
        assert after_fix is not None
        since = after_fix + timedelta(seconds=1)
        assert [p.number for p in await gh.merged_pulls(since=since)] == [late]
        try:
            await gh.pull_links(history.numbers["bug"])
        except NotFound:
            pass
        else:
            raise AssertionError("an issue is not a pull request")
        events = await gh.list_issue_events(history.numbers["manual"])
        assert [(e.event, e.actor and e.actor.login) for e in events] == [("closed", "carol")]


async def test_a_push_lands_between_pull_requests_and_the_vendored_history_plays() -> None:
    emulator = _emulator()
    history = emulator.seed_history(
        [HistoryPush("release", "Release 1.0", {"CHANGES": "1.0\n"}, author="carol")]
    )
    (head, *_) = emulator.log("main")
    assert head.sha == history.merges["release"]
    assert emulator.file_at("main", "CHANGES") == b"1.0\n"

    real = GitHubEmulator("tkem", "cachetools", default_branch="master")
    seeded = seed_cachetools_history(real)
    assert sorted(seeded.issues) == [218, 260, 356, 357, 387]
    steps = seeded.manifest["steps"]
    last = steps[-1]
    async with emulator_client(real) as gh:
        files = {f.filename for f in await gh.list_pull_files(seeded.pulls["18e5930"])}
        assert files == set(last["changed"])
        issue = await gh.get_issue(seeded.issues[387])
        assert issue.user.login == "mdecuir"
        assert issue.state == "closed"  # closed by the fix's merge
    assert real.file_at("master", "LICENSE") is None  # only src/ and tests/ are vendored
    assert real.file_at("master", "src/cachetools/__init__.py")
