"""The durable writes are safe to run again: a retried action never duplicates its effect."""

from __future__ import annotations

from agent_loop_builder import (
    PullRequestSpec,
    SubIssuesSpec,
    file_sub_issues,
    open_pull_request,
    post_feedback,
    sub_issue_body,
)
from agent_loop_common.staging import PlannedIssue
from agent_loop_testing import GitHubEmulator, emulator_client

BRANCH = "agent-loop/issue-1-colour"


def _spec(emulator: GitHubEmulator, content: str) -> PullRequestSpec:
    base = emulator.ref_sha("heads/main")
    assert base is not None
    return PullRequestSpec(
        issue=1,
        branch=BRANCH,
        base_branch="main",
        base_sha=base,
        title="Colour",
        body="Fixes #1",
        commit_message="Colour\n",
        files={"README.md": None, "src/colour.py": content},
    )


async def test_open_pull_request_reuses_a_leftover_branch_and_is_idempotent(
    emulator: GitHubEmulator,
) -> None:
    emulator.add_issue("Colour", "")
    # What a failed run leaves: the agents' own commit (its run trailer) on the branch.
    left = "x\n\nAgent-Loop-Run: 20260101T000000Z-0123abcd\n"
    emulator.push(BRANCH, {"junk.txt": "left by a failed run\n"}, author=emulator.bot, message=left)
    github = emulator_client(emulator)

    opened = await open_pull_request(github, _spec(emulator, "RED = 1\n"))
    again = await open_pull_request(github, _spec(emulator, "BLUE = 2\n"))

    assert again == opened
    pull = emulator.pull(opened.number)
    assert pull.head_ref == BRANCH
    assert pull.head_sha == opened.head_sha
    assert emulator.file_at(BRANCH, "src/colour.py") == b"RED = 1\n"
    assert emulator.file_at(BRANCH, "junk.txt") is None
    assert emulator.file_at(BRANCH, "README.md") is None
    assert emulator.log(BRANCH)[1].sha == emulator.ref_sha("heads/main")


async def test_file_sub_issues_resumes_without_duplicates(emulator: GitHubEmulator) -> None:
    spec_issue = emulator.add_issue("Spec", "all of it")
    github = emulator_client(emulator)
    a = PlannedIssue(key="a", title="A", body="do a")
    b = PlannedIssue(key="b", title="B", body="do b", depends_on=("a",))
    spec = SubIssuesSpec(
        spec_issue=spec_issue,
        items=(a, b),
        summary="a then b",
        run_id="run-1",
        deployment="d",
        agent_login=emulator.bot,
    )
    # An earlier try of the action filed "a", then died.
    body = sub_issue_body(a, spec=spec_issue, depends_on=[], run_id="run-1", deployment="d")
    earlier = emulator.add_issue("A", body, author=emulator.bot)

    filed = await file_sub_issues(github, spec)

    assert filed.numbers == (earlier, earlier + 1)
    assert emulator.issue(earlier + 1).title == "B"
    assert f"depends on #{earlier}" in (emulator.issue(earlier + 1).body or "")
    assert emulator.issue(spec_issue).state == "closed"
    assert f"#{earlier + 1} B (depends on #{earlier})" in emulator.comments(spec_issue)[-1].body
    posted = await post_feedback(github, spec_issue, "thanks")
    assert posted.url.endswith(str(emulator.comments(spec_issue)[-1].id))


async def test_a_persons_commits_on_an_agent_branch_are_never_rewritten(
    emulator: GitHubEmulator,
) -> None:
    """Attack: re-running an issue force-moved its agent branch over a person's commits."""
    emulator.add_issue("Colour", "")
    mine = emulator.push(BRANCH, {"fix.py": "by hand\n"}, author=emulator.owner, message="WIP")
    github = emulator_client(emulator)

    opened = await open_pull_request(github, _spec(emulator, "RED = 1\n"))

    assert emulator.ref_sha(f"heads/{BRANCH}") == mine  # the person's work is where it was
    assert emulator.file_at(BRANCH, "fix.py") == b"by hand\n"
    pull = emulator.pull(opened.number)
    assert pull.head_ref == f"{BRANCH}-2"  # the change went to a fresh branch
    assert emulator.file_at(pull.head_ref, "src/colour.py") == b"RED = 1\n"


async def test_a_pull_request_created_behind_a_502_is_found_not_duplicated(
    emulator: GitHubEmulator,
) -> None:
    """Attack (ambiguous failure): GitHub opened the PR, then answered 502; the cleanup
    deleted the head branch (closing that PR) and a later run opened a duplicate."""
    emulator.add_issue("Colour", "")
    emulator.inject_fault("POST", r"/pulls$", status=502, times=1, after=True)
    github = emulator_client(emulator)

    opened = await open_pull_request(github, _spec(emulator, "RED = 1\n"))
    again = await open_pull_request(github, _spec(emulator, "RED = 1\n"))

    assert again == opened
    pull = emulator.pull(opened.number)
    assert pull.state == "open"
    assert emulator.ref_sha(f"heads/{BRANCH}") == pull.head_sha  # the branch was kept
    agent_pulls = [p for p in emulator.pulls() if p.head_ref.startswith(BRANCH)]
    assert len(agent_pulls) == 1


async def test_a_strangers_sub_issue_look_alike_is_not_taken_for_ours(
    emulator: GitHubEmulator,
) -> None:
    """Attack: a stranger files an issue carrying the (public) sub-issue marker, so the
    real sub-issue is never filed and its dependents wait on an issue they control."""
    emulator.add_user("mallory", permission="read")
    spec_issue = emulator.add_issue("Spec", "all of it")
    a = PlannedIssue(key="a", title="A", body="do a")
    forged = sub_issue_body(a, spec=spec_issue, depends_on=[], run_id="run-1", deployment="d")
    fake = emulator.add_issue("A", forged, author="mallory")
    spec = SubIssuesSpec(
        spec_issue=spec_issue,
        items=(a,),
        summary="a",
        run_id="run-1",
        deployment="d",
        agent_login=emulator.bot,
    )

    filed = await file_sub_issues(emulator_client(emulator), spec)

    assert filed.numbers == (fake + 1,)  # a real one, by the agents
    assert emulator.issue(fake + 1).author == emulator.bot
