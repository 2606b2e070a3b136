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
from agent_loop_common.testing import GitHubEmulator, emulator_client

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
    emulator.push(BRANCH, {"junk.txt": "left by a failed run\n"}, author=emulator.bot, message="x")
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
        spec_issue=spec_issue, items=(a, b), summary="a then b", run_id="run-1", deployment="d"
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
