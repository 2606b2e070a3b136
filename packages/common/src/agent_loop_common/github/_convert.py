"""githubkit schema objects -> the facade's frozen models (the only place both meet)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, TypeVar, cast

from githubkit.utils import Unset

# githubkit_schemas is a namespace package (no __init__.py), which pyright strict reports
# as missing stubs although every type resolves.
from githubkit_schemas.v2026_03_10 import models as gh  # pyright: ignore[reportMissingTypeStubs]
from pydantic import BaseModel, ConfigDict, Field

from agent_loop_common.github._models import (
    CheckRun,
    Comment,
    CommitProvenance,
    CommitStatus,
    GitCommit,
    Issue,
    IssueEvent,
    MergedPull,
    PathCommit,
    PullFile,
    PullRequest,
    Reaction,
    Repository,
    Review,
    ReviewComment,
    TreeEntry,
    User,
)

T = TypeVar("T")

GHOST = User(login="ghost", id=10137, type="User")
"""GitHub's stand-in for deleted accounts (`user: null` in API answers)."""


def present(value: T | Unset | None) -> T | None:
    """githubkit's "missing" (UNSET) and JSON null both become None."""
    return None if isinstance(value, Unset) else value


def user(u: gh.SimpleUser | gh.PrivateUser | gh.PublicUser | gh.Collaborator | None) -> User:
    """A user, with deleted accounts mapped to `GHOST` as GitHub's web UI does."""
    if u is None:
        return GHOST
    return User(login=u.login, id=u.id, type=u.type)


def repository(r: gh.FullRepository) -> Repository:
    return Repository(
        full_name=r.full_name,
        default_branch=r.default_branch,
        private=r.private,
        html_url=r.html_url,
    )


def _open_closed(state: str) -> Literal["open", "closed"]:
    return "closed" if state == "closed" else "open"


def issue(i: gh.Issue | gh.ReposOwnerRepoIssuesIssueNumberPatchResponse200) -> Issue:
    labels = tuple(
        name
        for name in (label if isinstance(label, str) else present(label.name) for label in i.labels)
        if name
    )
    return Issue(
        number=i.number,
        title=i.title,
        body=present(i.body) or "",
        state=_open_closed(i.state),
        user=user(i.user),
        labels=labels,
        created_at=i.created_at,
        updated_at=i.updated_at,
        closed_at=i.closed_at,
        is_pull_request=present(i.pull_request) is not None,
        html_url=i.html_url,
        author_association=present(i.author_association) or "NONE",
    )


def comment(c: gh.IssueComment) -> Comment:
    return Comment(
        id=c.id,
        body=present(c.body) or "",
        user=user(c.user),
        created_at=c.created_at,
        updated_at=c.updated_at,
        html_url=c.html_url,
        node_id=c.node_id,
    )


class _RawLabel(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str


class _RawRename(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    from_: str = Field(alias="from")


class _RawEvent(BaseModel):
    """Issue events parsed leniently: githubkit's union rejects `closed`, `referenced`..."""

    model_config = ConfigDict(extra="ignore")
    id: int
    event: str
    actor: gh.SimpleUser | None = None
    label: _RawLabel | None = None
    created_at: datetime
    commit_id: str | None = None
    rename: _RawRename | None = None


def issue_event(raw: Any) -> IssueEvent:
    e = _RawEvent.model_validate(raw)
    return IssueEvent(
        id=e.id,
        event=e.event,
        actor=None if e.actor is None else user(e.actor),
        label=None if e.label is None else e.label.name,
        created_at=e.created_at,
        commit_id=e.commit_id or None,
        rename_from=e.rename.from_ if e.rename is not None else None,
    )


def pull(p: gh.PullRequest | gh.PullRequestSimple) -> PullRequest:
    merged = p.merged if isinstance(p, gh.PullRequest) else p.merged_at is not None
    return PullRequest(
        number=p.number,
        title=p.title,
        body=p.body or "",
        state=_open_closed(p.state),
        user=user(p.user),
        head_ref=p.head.ref,
        head_sha=p.head.sha,
        base_ref=p.base.ref,
        base_sha=p.base.sha,
        merged=merged,
        merged_at=p.merged_at,
        closed_at=p.closed_at,
        draft=bool(present(p.draft)),
        html_url=p.html_url,
        created_at=p.created_at,
        updated_at=p.updated_at,
    )


class _RawPullFile(BaseModel):
    """A pull request's file parsed leniently: only what the facade keeps is required
    (a GitHub-like server may leave out `sha`, `blob_url`, `raw_url`, `contents_url`...)."""

    model_config = ConfigDict(extra="ignore")
    filename: str
    status: str = "modified"
    additions: int = 0
    deletions: int = 0
    patch: str | None = None
    previous_filename: str | None = None


def pull_file(raw: Any) -> PullFile:
    f = _RawPullFile.model_validate(raw)
    return PullFile(
        filename=f.filename,
        status=f.status,
        additions=f.additions,
        deletions=f.deletions,
        patch=f.patch,
        previous_filename=f.previous_filename,
    )


def review(r: gh.PullRequestReview) -> Review:
    return Review(
        id=r.id,
        user=user(r.user),
        state=r.state,
        body=r.body,
        submitted_at=present(r.submitted_at),
        commit_id=r.commit_id,
    )


def review_comment(c: gh.PullRequestReviewComment) -> ReviewComment:
    return ReviewComment(
        id=c.id,
        user=user(c.user),
        body=c.body,
        path=c.path,
        line=present(c.line),
        in_reply_to_id=present(c.in_reply_to_id),
        commit_id=c.commit_id,
        created_at=c.created_at,
        updated_at=c.updated_at,
        html_url=c.html_url,
        node_id=c.node_id,
    )


def check_run(c: gh.CheckRun) -> CheckRun:
    return CheckRun(
        id=c.id,
        name=c.name,
        head_sha=c.head_sha,
        status=c.status,
        conclusion=c.conclusion,
        output_title=c.output.title or "",
        output_summary=c.output.summary or "",
        output_text=c.output.text or "",
        started_at=c.started_at,
        completed_at=c.completed_at,
    )


def commit_status(s: gh.SimpleCommitStatus) -> CommitStatus:
    return CommitStatus(
        context=s.context,
        state=s.state,
        description=s.description or "",
        target_url=s.target_url or "",
        updated_at=s.updated_at,
    )


_TREE_TYPES: dict[str, Literal["blob", "tree", "commit"]] = {
    "blob": "blob",
    "tree": "tree",
    "commit": "commit",
}


def tree_entry(e: gh.GitTreePropTreeItems, prefix: str = "") -> TreeEntry:
    return TreeEntry(
        path=f"{prefix}{e.path}",
        type=_TREE_TYPES.get(e.type, "blob"),
        sha=e.sha,
        size=present(e.size),
        mode=e.mode,
    )


def path_commit(c: gh.Commit) -> PathCommit:
    author = c.author if isinstance(c.author, gh.SimpleUser) else None
    committer = c.committer if isinstance(c.committer, gh.SimpleUser) else None
    verification = present(c.commit.verification)
    return PathCommit(
        sha=c.sha,
        parents=tuple(p.sha for p in c.parents),
        author_login=author.login if author is not None else "",
        message=c.commit.message,
        committed_at=present(c.commit.committer.date) if c.commit.committer else None,
        committer_login=committer.login if committer is not None else "",
        verified=verification is not None and verification.verified,
    )


def commit_provenance(sha: str, node: dict[str, Any]) -> CommitProvenance:
    """A GraphQL `Commit` (see `GitOps.commit_provenance`) as the facade's model."""
    pulls = cast("dict[str, Any]", node.get("associatedPullRequests") or {})
    merged = tuple(
        MergedPull(
            number=int(p["number"]),
            base_ref=str(p.get("baseRefName") or ""),
            merged_by=str(cast("dict[str, Any]", p.get("mergedBy") or {}).get("login") or ""),
            merged_by_type=str(
                cast("dict[str, Any]", p.get("mergedBy") or {}).get("__typename") or ""
            ),
        )
        for p in cast("list[dict[str, Any]]", pulls.get("nodes") or [])
        if p.get("merged") is True
    )
    signature = cast("dict[str, Any] | None", node.get("signature"))
    if signature is None:
        return CommitProvenance(sha=sha, merged=merged)
    valid = signature.get("isValid") is True and signature.get("state") == "VALID"
    by_github = signature.get("wasSignedByGitHub") is True
    signer = str(cast("dict[str, Any]", signature.get("signer") or {}).get("login") or "")
    return CommitProvenance(
        sha=sha,
        merged=merged,
        signature_state=str(signature.get("state") or "UNSIGNED"),
        signer=signer if valid and not by_github else "",
        signed_by_github=by_github,
    )


def git_commit(c: gh.GitCommit) -> GitCommit:
    return GitCommit(
        sha=c.sha,
        tree_sha=c.tree.sha,
        parents=tuple(p.sha for p in c.parents),
        message=c.message,
        author_email=c.author.email,
        authored_at=c.author.date,
    )


def reaction(r: gh.Reaction) -> Reaction:
    return Reaction(id=r.id, content=r.content, user=user(r.user), created_at=r.created_at)
