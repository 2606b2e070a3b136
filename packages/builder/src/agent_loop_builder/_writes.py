"""The builder's writes to GitHub, each declared once in `WRITES`.

A write is a plain function over a facade: `env.py` turns the book into durable Flyte
actions (`WRITES.durable(env, ...)`), and tests and scripts call the same functions in
process (`DirectWriter`). Each takes frozen pydantic inputs (task inputs that survive
serialization) and is safe to run again after a failure part-way, because a durable
action may be retried: an open PR on the branch is returned instead of opening a second
one, and sub-issues already filed by this run (found by their marker) are not filed
twice.
"""

from __future__ import annotations

import structlog
from pydantic import BaseModel, ConfigDict

from agent_loop_builder._texts import (
    decomposition_comment,
    parse_sub_issue_marker,
    sub_issue_body,
)
from agent_loop_common.github import GitHub, GitHubUnavailable, GitTree, PullRequest, RefExists
from agent_loop_common.runtime import Posted, Receipt, WriteBook
from agent_loop_common.staging import PlannedIssue
from agent_loop_common.texts import public_text

__all__ = [
    "WRITES",
    "FiledIssues",
    "OpenedPull",
    "PullRequestSpec",
    "SubIssuesSpec",
    "file_sub_issues",
    "open_pull_request",
    "post_feedback",
]

_log = structlog.get_logger(__name__)
_FROZEN = ConfigDict(frozen=True)

WRITES = WriteBook()
"""The builder's durable writes: `open_pull_request`, `file_sub_issues`, `post_feedback`."""


class PullRequestSpec(BaseModel):
    """Everything needed to commit a verified change and open its pull request."""

    model_config = _FROZEN

    issue: int
    branch: str
    """The pipeline's pinned branch, `<prefix>issue-<N>-<slug>`."""
    base_branch: str
    base_sha: str
    """The commit the change was built and verified against: the commit's parent."""
    repository_id: str = ""
    """The repository's GraphQL node id: with it the branch and its commit are created in
    one request (`GitHub.create_branch_with_commit`); "" takes two."""
    base_tree: GitTree | None = None
    """`base_sha`'s tree as the run read it (the entries around `files`), so the commit
    is built without reading it again; `None` reads it."""
    title: str
    body: str
    commit_message: str
    files: dict[str, str | None]
    """Path -> full new content, `None` to delete (already policy-checked)."""
    agent_login: str = ""
    """The agents' identity: only its pull requests count as already opened."""
    draft: bool = False
    """Open the pull request as a draft: the tests gave no verdict on the change (none
    ran, or they prove nothing), and the body says why."""


class OpenedPull(Receipt):
    """The pull request that now carries the change."""

    number: int
    url: str
    head_sha: str


class SubIssuesSpec(BaseModel):
    """A verified decomposition to file, items in dependency order."""

    model_config = _FROZEN

    spec_issue: int
    items: tuple[PlannedIssue, ...]
    summary: str
    run_id: str
    deployment: str
    agent_login: str
    """The agents' identity: only issues it wrote count as already filed."""
    depth: int = 1
    """The sub-issues' decomposition depth (the spec issue's depth + 1)."""


class FiledIssues(Receipt):
    """The sub-issues filed, in filing order."""

    numbers: tuple[int, ...]
    urls: tuple[str, ...]


@WRITES.write
async def open_pull_request(github: GitHub, spec: PullRequestSpec) -> OpenedPull:
    """The pinned branch at the base, one commit with every staged file, the pull request.

    The branch and its commit are one request of two writes when the branch is new (the
    usual case): `createRef` at `base_sha`, then `createCommitOnBranch` on it, a
    compare-and-swap on the base (`GitHub.create_branch_with_commit`). Safe to run
    again, and safe when GitHub's answer is lost:

    - when the branch exists already (a run before this one, or an earlier attempt of
      this write), an open agent pull request for it (or one of its fresh variants) is
      returned instead of opening a second one; a new branch has none, so nothing is
      listed first;
    - a branch is only ever moved when it holds nothing but the agents' own commits on
      top of the default branch's history (a leftover of a failed run); a branch with
      anyone else's commits is left alone and a fresh name is used (a branch standing
      at the base itself holds nobody's commits: the commit goes on it);
    - when `POST /pulls` fails in a way that may have created the pull request (a 5xx, a
      timeout), it is read back before anything is cleaned up, and a branch with an open
      pull request is never deleted (deleting it would close that pull request).
    """
    made = await _branch_and_commit(github, spec)
    if isinstance(made, OpenedPull):
        return made
    branch, sha, created = made
    try:
        pull = await github.create_pull(
            title=spec.title,
            body=spec.body,
            head=branch,
            base=spec.base_branch,
            draft=spec.draft,
        )
    except BaseException as exc:
        landed = await _read_back(github, spec, branch, exc)
        if landed is not None:
            return landed
        if created:
            await _delete_branch(github, branch)
        raise
    return OpenedPull(number=pull.number, url=pull.html_url, head_sha=sha)


async def _branch_and_commit(
    github: GitHub, spec: PullRequestSpec
) -> tuple[str, str, bool] | OpenedPull:
    """`(branch, commit, created)`: the change committed on the pinned branch made new
    at the base (one request), or on a branch placed by `_place_branch` when the pinned
    one exists; or the agent pull request that already carries the change."""
    try:
        made = await github.create_branch_with_commit(
            branch=spec.branch,
            base_sha=spec.base_sha,
            repository_id=spec.repository_id,
            message=spec.commit_message,
            files=spec.files,
            parent_tree=spec.base_tree,
        )
    except RefExists:
        made = None
    if made is not None and made.created:
        return spec.branch, made.sha, True
    existing = await _open_agent_pull(github, spec)
    if existing is not None:
        _log.info("builder.pull_exists", pr=existing.number, branch=existing.head_ref)
        return OpenedPull(number=existing.number, url=existing.html_url, head_sha=existing.head_sha)
    if made is not None:  # the pinned branch stood at the base: the commit went on it
        _log.info("builder.branch_reused", branch=spec.branch)
        return spec.branch, made.sha, False
    branch, created = await _place_branch(github, spec)
    try:
        sha = await github.commit_on_branch(
            branch=branch,
            expected_head=spec.base_sha,
            message=spec.commit_message,
            files=spec.files,
            parent_tree=spec.base_tree,
        )
    except BaseException:
        if created:
            await _delete_branch(github, branch)
        raise
    return branch, sha, created


async def _delete_branch(github: GitHub, branch: str) -> None:
    """Remove a branch this write created, after a failure (which matters more)."""
    try:
        await github.delete_ref(f"heads/{branch}")
    except Exception as nested:
        _log.warning("builder.branch_cleanup_failed", branch=branch, error=repr(nested))


def _ours(spec: PullRequestSpec, head_ref: str) -> bool:
    """The pinned branch, or one of its fresh variants (`<branch>-2`, `<branch>-3`, ...)."""
    if head_ref == spec.branch:
        return True
    stem, _, suffix = head_ref.rpartition("-")
    return stem == spec.branch and suffix.isdigit()


async def _open_agent_pull(github: GitHub, spec: PullRequestSpec) -> PullRequest | None:
    for pull in await github.list_pulls(state="open"):
        if _ours(spec, pull.head_ref) and (
            not spec.agent_login or pull.user.login.casefold() == spec.agent_login.casefold()
        ):
            return pull
    return None


async def _read_back(
    github: GitHub, spec: PullRequestSpec, branch: str, exc: BaseException
) -> OpenedPull | None:
    """After a failed `POST /pulls`: the pull request GitHub may have opened anyway."""
    if not isinstance(exc, GitHubUnavailable):
        return None  # a clear refusal (422 ...) opened nothing
    try:
        for pull in await github.list_pulls(state="open", head=branch):
            if pull.head_ref == branch:
                _log.warning("builder.pull_created_despite_error", pr=pull.number, error=repr(exc))
                return OpenedPull(number=pull.number, url=pull.html_url, head_sha=pull.head_sha)
    except Exception as nested:  # cannot tell: keep the branch, it may carry a PR
        _log.warning("builder.read_back_failed", branch=branch, error=repr(nested))
        raise exc from nested
    return None


async def _place_branch(github: GitHub, spec: PullRequestSpec) -> tuple[str, bool]:
    """Point a branch at the base, the pinned one being taken and no agent pull request
    carrying the change: `(branch, created)`. Never rewrites anyone's commits."""
    for attempt in range(1, _FRESH_NAMES + 1):
        branch = spec.branch if attempt == 1 else f"{spec.branch}-{attempt}"
        if attempt > 1:
            try:
                await github.create_ref(f"refs/heads/{branch}", spec.base_sha)
                return branch, True
            except RefExists:
                pass
        head = await github.get_ref(f"heads/{branch}")
        if head is not None and await _only_agent_commits(github, head, spec.base_sha):
            _log.info("builder.branch_reused", branch=branch)
            if head != spec.base_sha:
                await github.update_ref(f"heads/{branch}", spec.base_sha, force=True)
            return branch, False
        _log.warning("builder.branch_has_foreign_commits", branch=branch)
    raise RefExists(
        f"branches {spec.branch} to {spec.branch}-{_FRESH_NAMES} all hold others' commits",
        method="POST",
        url="/git/refs",
    )


_FRESH_NAMES = 5
_TRAILER = "Agent-Loop-Run:"
_WALK = 30


async def _only_agent_commits(github: GitHub, head: str, base_sha: str) -> bool:
    """Whether the branch at `head` holds only the agents' commits above the default
    branch's history (so moving it loses nobody's work).

    The agents' commits carry the `Agent-Loop-Run:` trailer. Walking down from `head`,
    the first commit without it must be part of the base's recent first-parent history
    (where the branch started); anything else is someone's work.
    """
    current: str | None = head
    for _ in range(_WALK):
        if current is None or current == base_sha:
            return True
        commit = await github.get_commit(current)
        if _TRAILER not in commit.message:
            return await _in_history(github, current, base_sha)
        current = commit.parents[0] if commit.parents else None
    return False


async def _in_history(github: GitHub, sha: str, base_sha: str) -> bool:
    current: str | None = base_sha
    for _ in range(_WALK):
        if current is None:
            return False
        if current == sha:
            return True
        commit = await github.get_commit(current)
        current = commit.parents[0] if commit.parents else None
    return False


@WRITES.write
async def file_sub_issues(github: GitHub, spec: SubIssuesSpec) -> FiledIssues:
    """Create the sub-issues upstreams first, list them on the spec issue, close it."""
    already: dict[str, tuple[int, str]] = {}
    for issue in await github.list_issues(state="open"):
        if issue.user.login.casefold() != spec.agent_login.casefold():
            continue  # a stranger can copy a marker (the run id is public); it is not ours
        marker = parse_sub_issue_marker(issue.body)
        if marker is not None and marker.spec == spec.spec_issue and marker.run == spec.run_id:
            already[marker.key] = (issue.number, issue.html_url)
    numbers: dict[str, int] = {}
    filed: list[tuple[PlannedIssue, int]] = []
    urls: list[str] = []
    for item in spec.items:
        if item.key in already:
            number, url = already[item.key]
        else:
            body = sub_issue_body(
                item,
                spec=spec.spec_issue,
                depends_on=[numbers[k] for k in item.depends_on],
                run_id=spec.run_id,
                deployment=spec.deployment,
                depth=spec.depth,
            )
            title = public_text(item.title, limit=200) or f"Part {item.key} of #{spec.spec_issue}"
            created = await github.create_issue(title, body)
            number, url = created.number, created.html_url
        numbers[item.key] = number
        filed.append((item, number))
        urls.append(url)
    comment = decomposition_comment(
        filed=filed, summary=spec.summary, run_id=spec.run_id, deployment=spec.deployment
    )
    await github.close_issue(spec.spec_issue, comment=comment)
    return FiledIssues(numbers=tuple(n for _, n in filed), urls=tuple(urls))


@WRITES.write
async def post_feedback(github: GitHub, issue: int, body: str) -> Posted:
    """Post a comment on an issue."""
    comment = await github.create_issue_comment(issue, body)
    return Posted(url=comment.html_url)
