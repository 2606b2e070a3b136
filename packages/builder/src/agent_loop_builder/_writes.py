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
from agent_loop_common.github import GitHub, RefExists
from agent_loop_common.runtime import Posted, Receipt, WriteBook
from agent_loop_common.staging import PlannedIssue

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
    title: str
    body: str
    commit_message: str
    files: dict[str, str | None]
    """Path -> full new content, `None` to delete (already policy-checked)."""
    draft: bool = False
    """Open the pull request as a draft: no tests ran on the change (sandbox off, no
    test command), and the body says so."""


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


class FiledIssues(Receipt):
    """The sub-issues filed, in filing order."""

    numbers: tuple[int, ...]
    urls: tuple[str, ...]


@WRITES.write
async def open_pull_request(github: GitHub, spec: PullRequestSpec) -> OpenedPull:
    """One commit with every staged file on the pinned branch, then the pull request.

    A branch left behind by an earlier failed run (no open PR on it) is moved to the
    new commit; a branch this call created is deleted again if the PR cannot be opened,
    so a failure leaves nothing behind.
    """
    for pull in await github.list_pulls(state="open", head=spec.branch):
        if pull.head_ref == spec.branch:
            _log.info("builder.pull_exists", pr=pull.number, branch=spec.branch)
            return OpenedPull(number=pull.number, url=pull.html_url, head_sha=pull.head_sha)
    sha = await github.commit_files(
        parent_sha=spec.base_sha, message=spec.commit_message, files=spec.files
    )
    created = False
    try:
        await github.create_ref(f"refs/heads/{spec.branch}", sha)
        created = True
    except RefExists:
        _log.info("builder.branch_reused", branch=spec.branch)
        await github.update_ref(f"heads/{spec.branch}", sha, force=True)
    try:
        pull = await github.create_pull(
            title=spec.title,
            body=spec.body,
            head=spec.branch,
            base=spec.base_branch,
            draft=spec.draft,
        )
    except BaseException:
        if created:
            try:
                await github.delete_ref(f"heads/{spec.branch}")
            except Exception as exc:  # the original failure matters more
                _log.warning("builder.branch_cleanup_failed", branch=spec.branch, error=repr(exc))
        raise
    return OpenedPull(number=pull.number, url=pull.html_url, head_sha=sha)


@WRITES.write
async def file_sub_issues(github: GitHub, spec: SubIssuesSpec) -> FiledIssues:
    """Create the sub-issues upstreams first, list them on the spec issue, close it."""
    already: dict[str, tuple[int, str]] = {}
    for issue in await github.list_issues(state="open"):
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
            )
            created = await github.create_issue(item.title, body)
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
