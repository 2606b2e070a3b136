"""The commit a merged pull request was merged onto: an instance's base.

GitHub names one commit per merged pull request (`merge_commit_sha`, GraphQL
`mergeCommit`), and what it is depends on how the pull request was merged:

- **merge**: a merge commit; its first parent is the base branch as it was;
- **squash**: one new commit; its only parent is the base branch as it was;
- **rebase**: the pull request's commits replayed one by one on the base branch; the
  commit named is the *last* replayed one, so its parent is the previous replayed
  commit, not the base. The base is the parent of the first replayed commit: walking
  back from the named commit beside the pull request's own commits (from its head),
  each replayed commit has its original's message, author and author date (a rebase
  keeps them; a squash commit is written by GitHub at merge time and has neither);
- **fast-forward** (a GitHub-like server that moves the branch to the head without new
  commits): the named commit is the head itself; the base is the commit the pull
  request was opened against (its REST `base.sha`), found on the head's first-parent line.

Reading the commits costs one request each, at most `MAX_COMMITS` per side (GitHub lists
at most 250 commits of a pull request).
"""

from __future__ import annotations

from agent_loop_common.github import GitCommit, GitHub, NotFound

__all__ = ["MAX_COMMITS", "merged_onto"]

MAX_COMMITS = 250
"""Most commits walked back from the merge commit (GitHub's cap on a PR's commits)."""


def _replayed(landed: GitCommit, own: GitCommit) -> bool:
    """Whether `landed` is `own` replayed by a rebase: same message and author, and the
    same author date when both commits record one."""
    if landed.message != own.message or landed.author_email != own.author_email:
        return False
    if landed.authored_at is None or own.authored_at is None:
        return True
    return landed.authored_at == own.authored_at


async def merged_onto(github: GitHub, merge: GitCommit, *, head_sha: str, base_sha: str) -> str:
    """The commit the pull request was merged onto (see the module docstring).

    Args:
        github: The repository's facade (reads commits only).
        merge: The commit GitHub names for the merge, with at least one parent.
        head_sha: The pull request's head commit (REST `head.sha`).
        base_sha: The base commit GitHub recorded for it (REST `base.sha`); used only
            when the merge fast-forwarded the branch to the head.
    """
    onto = merge.parents[0]
    if len(merge.parents) > 1 or not head_sha:
        return onto
    if merge.sha == head_sha:
        sha = merge.sha
        for _ in range(MAX_COMMITS):
            commit = await github.get_commit(sha)
            if not commit.parents or commit.parents[0] == base_sha:
                return commit.parents[0] if commit.parents else onto
            sha = commit.parents[0]
        return onto
    try:
        landed, own = merge, await github.get_commit(head_sha)
        for _ in range(MAX_COMMITS):
            if len(landed.parents) != 1 or len(own.parents) != 1 or not _replayed(landed, own):
                break
            onto = landed.parents[0]
            if onto == own.parents[0]:  # rebased onto the commit it started from
                break
            landed, own = await github.get_commit(onto), await github.get_commit(own.parents[0])
    except NotFound:  # the head's commits are gone from the server: take the parent seen
        return onto
    return onto
