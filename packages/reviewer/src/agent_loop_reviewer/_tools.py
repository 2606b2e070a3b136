"""The reviewer's tools: the PR, its diff and feedback, and the repository at its head.

Everything is read at the head commit the pass reviews, never at the moving branch, so
the agent, the verifier and the final compare-and-swap agree on one commit. The
repository tools (`list_files`, `read_file`, `search_code`) and the staging tools come
from `common`, shared with the builder; `get_pull_request`, `get_diff` and
`list_feedback` are the reviewer's own, and with tests configured the agent gets
common's `run_tests`. Results are bounded and fenced as untrusted data: descriptions,
diffs and feedback were written by others and may contain text aimed at the model. The
verifier's `read_file` reads the head with the proposed fix over it.
"""

from __future__ import annotations

from collections.abc import Sequence

from agent_loop_common.agents import fence_untrusted
from agent_loop_common.checks import Checks, run_tests_tool
from agent_loop_common.github import GitHub, PullRequest
from agent_loop_common.repo import ReadLog, ReadTool, RepoSnapshot, StagedFiles, repo_tools
from agent_loop_common.staging import (
    ChangeStage,
    StagingPolicy,
    StagingTool,
    directory_lookup,
    fix_tools,
)
from agent_loop_reviewer._feedback import FeedbackItem
from agent_loop_reviewer._prompts import describe_item

__all__ = ["read_tools", "reviewer_tools"]

_DIFF_CHARS = 80_000


def read_tools(
    github: GitHub,
    pull: PullRequest,
    head: RepoSnapshot,
    feedback: Sequence[FeedbackItem],
    *,
    stage: StagedFiles | None = None,
    staged_by: str = "you",
    log: ReadLog | None = None,
) -> list[ReadTool]:
    """The read-only tools: PR, diff, files at the head, feedback.

    Args:
        stage: The reviewer's stage, so `read_file` shows its staged version of a file;
            for the verifier, the proposed fix.
        staged_by: Who staged `stage` (`you`, or `the proposal` for the verifier).
        log: Notes the staged lines `read_file` shows (the verifier's coverage).
    """
    diff_cache: list[str] = []

    async def get_pull_request() -> str:
        """Show the pull request: number, title, branches, head commit, description and changed files."""
        files = await github.list_pull_files(pull.number)
        listing = "\n".join(
            f"- {f.filename} ({f.status}, +{f.additions} -{f.deletions})" for f in files
        )
        return (
            f"Pull request #{pull.number}: {pull.title}\n"
            f"{pull.head_ref} -> {pull.base_ref}, head commit {pull.head_sha}\n"
            f"Changed files:\n{listing or '(none)'}\n\n" + fence_untrusted("description", pull.body)
        )

    async def get_diff() -> str:
        """The pull request's unified diff against its base branch."""
        if not diff_cache:
            diff_cache.append(await github.get_pull_diff(pull.number))
        return fence_untrusted(f"diff of PR #{pull.number}", diff_cache[0], _DIFF_CHARS)

    async def list_feedback() -> str:
        """Every feedback item on this pull request with its id: people's comments, reviews and inline comments, and failing checks."""
        if not feedback:
            return "No feedback from people and no failing checks."
        return "\n\n".join(
            f"{describe_item(item)}\n{fence_untrusted(f'item {item.id}', item.body, 6_000)}"
            for item in feedback
        )

    files = repo_tools(head, stage=stage, staged_by=staged_by, log=log)
    return [get_pull_request, get_diff, *files, list_feedback]


def reviewer_tools(
    github: GitHub,
    pull: PullRequest,
    head: RepoSnapshot,
    feedback: Sequence[FeedbackItem],
    stage: ChangeStage,
    policy: StagingPolicy,
    known_comment_ids: set[int],
    checks: Checks | None = None,
) -> list[ReadTool | StagingTool]:
    """Every tool of the reviewer agent: the read tools, then staging, running the tests
    (when `checks` can run them) and submitting a fix."""
    tests = [run_tests_tool(checks, stage)] if checks is not None and checks.enabled else []
    return [
        *read_tools(github, pull, head, feedback, stage=stage),
        *fix_tools(
            stage,
            policy,
            exists_at_base=head.exists,
            is_dir_at_base=directory_lookup(head.paths),
            text_at_base=head.text,
            known_comment_ids=known_comment_ids,
        ),
        *tests,
    ]
