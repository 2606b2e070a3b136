"""JSON bodies for pull requests, their files, reviews, review comments, checks, statuses.

Like `_emulator_render`, each shape carries exactly the keys of GitHub's schema. Derived
numbers (commits, additions, changed files, head and base SHAs) are computed from the
git store on every render, so they follow pushes to the head branch.
"""

from __future__ import annotations

from agent_loop_testing._emulator_gitdiff import FileChange
from agent_loop_testing._emulator_ops_pulls import base_sha, head_sha, pull_files
from agent_loop_testing._emulator_render import (
    Json,
    Urls,
    author_association,
    label_json,
    node_id,
    repository_json,
    simple_user_json,
    ts,
)
from agent_loop_testing._emulator_state import (
    CheckRunRec,
    IssueRec,
    ReviewCommentRec,
    ReviewRec,
    State,
    StatusRec,
)

__all__ = [
    "check_run_json",
    "diff_entry_json",
    "pull_json",
    "pull_simple_json",
    "review_comment_json",
    "review_json",
    "status_json",
]


def _links(urls: Urls, number: int) -> Json:
    pull = f"{urls.repo}/pulls/{number}"
    return {
        "self": {"href": pull},
        "html": {"href": f"{urls.repo_web}/pull/{number}"},
        "issue": {"href": f"{urls.repo}/issues/{number}"},
        "comments": {"href": f"{urls.repo}/issues/{number}/comments"},
        "review_comments": {"href": f"{pull}/comments"},
        "review_comment": {"href": f"{urls.repo}/pulls/comments{{/number}}"},
        "commits": {"href": f"{pull}/commits"},
        "statuses": {"href": f"{urls.repo}/statuses/{{sha}}"},
    }


def pull_simple_json(st: State, issue: IssueRec, urls: Urls) -> Json:
    """A pull request as `GET /pulls` lists it (`PullRequestSimple`)."""
    pull = issue.pull
    assert pull is not None
    owner = simple_user_json(st.user(st.owner), urls)
    repo = repository_json(st, urls)
    url = f"{urls.repo}/pulls/{issue.number}"
    web = f"{urls.repo_web}/pull/{issue.number}"
    head, base = head_sha(st, pull), base_sha(st, pull)
    return {
        "url": url,
        "id": issue.id,
        "node_id": node_id("PR", issue.id),
        "html_url": web,
        "diff_url": f"{web}.diff",
        "patch_url": f"{web}.patch",
        "issue_url": f"{urls.repo}/issues/{issue.number}",
        "commits_url": f"{url}/commits",
        "review_comments_url": f"{url}/comments",
        "review_comment_url": f"{urls.repo}/pulls/comments{{/number}}",
        "comments_url": f"{urls.repo}/issues/{issue.number}/comments",
        "statuses_url": f"{urls.repo}/statuses/{head}",
        "number": issue.number,
        "state": issue.state,
        "locked": False,
        "title": issue.title,
        "user": simple_user_json(st.user(issue.author), urls),
        "body": issue.body,
        "labels": [{**label_json(st.label(n), urls), "archived_by": None} for n in issue.labels],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": ts(issue.created_at),
        "updated_at": ts(issue.updated_at),
        "closed_at": ts(issue.closed_at),
        "merged_at": ts(pull.merged_at),
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": {
            "label": f"{st.owner}:{pull.head_ref}",
            "ref": pull.head_ref,
            "sha": head,
            "user": owner,
            "repo": repo,
        },
        "base": {
            "label": f"{st.owner}:{pull.base_ref}",
            "ref": pull.base_ref,
            "sha": base,
            "user": owner,
            "repo": repo,
        },
        "_links": _links(urls, issue.number),
        "author_association": author_association(st, issue.author),
        "auto_merge": None,
        "draft": pull.draft,
    }


def pull_json(st: State, issue: IssueRec, urls: Urls) -> Json:
    """A full pull request (`GET /pulls/{n}`, create, update)."""
    pull = issue.pull
    assert pull is not None
    files = pull_files(st, pull)
    head = head_sha(st, pull)
    merged = pull.merged_at is not None
    return {
        **pull_simple_json(st, issue, urls),
        "merged": merged,
        "mergeable": None if merged or issue.state == "closed" else True,
        "rebaseable": None if merged or issue.state == "closed" else True,
        "mergeable_state": "unknown" if merged or issue.state == "closed" else "clean",
        "merged_by": simple_user_json(st.user(pull.merged_by), urls) if pull.merged_by else None,
        "comments": sum(1 for c in st.comments.values() if c.issue == issue.number),
        "review_comments": sum(1 for c in st.review_comments.values() if c.pull == issue.number),
        "maintainer_can_modify": False,
        "commits": st.git.commits_between(base_sha(st, pull), head) if not merged else 0,
        "additions": sum(f.additions for f in files),
        "deletions": sum(f.deletions for f in files),
        "changed_files": len(files),
    }


def diff_entry_json(change: FileChange, urls: Urls, head: str) -> Json:
    out: Json = {
        "sha": change.sha,
        "filename": change.filename,
        "status": change.status,
        "additions": change.additions,
        "deletions": change.deletions,
        "changes": change.additions + change.deletions,
        "blob_url": f"{urls.repo_web}/blob/{head}/{change.filename}",
        "raw_url": f"{urls.repo_web}/raw/{head}/{change.filename}",
        "contents_url": f"{urls.repo}/contents/{change.filename}?ref={head}",
    }
    if change.patch is not None:
        out["patch"] = change.patch
    return out


def review_json(st: State, review: ReviewRec, urls: Urls) -> Json:
    web = f"{urls.repo_web}/pull/{review.pull}"
    return {
        "id": review.id,
        "node_id": node_id("PRR", review.id),
        "user": simple_user_json(st.user(review.author), urls),
        "body": review.body,
        "state": review.state,
        "html_url": f"{web}#pullrequestreview-{review.id}",
        "pull_request_url": f"{urls.repo}/pulls/{review.pull}",
        "_links": {
            "html": {"href": f"{web}#pullrequestreview-{review.id}"},
            "pull_request": {"href": f"{urls.repo}/pulls/{review.pull}"},
        },
        "submitted_at": ts(review.submitted_at),
        "commit_id": review.commit_id,
        "author_association": author_association(st, review.author),
    }


def review_comment_json(st: State, comment: ReviewCommentRec, urls: Urls) -> Json:
    url = f"{urls.repo}/pulls/comments/{comment.id}"
    html = f"{urls.repo_web}/pull/{comment.pull}#discussion_r{comment.id}"
    pull_url = f"{urls.repo}/pulls/{comment.pull}"
    out: Json = {
        "url": url,
        "pull_request_review_id": comment.review_id,
        "id": comment.id,
        "node_id": node_id("PRRC", comment.id),
        "diff_hunk": comment.diff_hunk,
        "path": comment.path,
        "commit_id": comment.commit_id,
        "original_commit_id": comment.commit_id,
        "user": simple_user_json(st.user(comment.author), urls),
        "body": comment.body,
        "created_at": ts(comment.created_at),
        "updated_at": ts(comment.updated_at),
        "html_url": html,
        "pull_request_url": pull_url,
        "author_association": author_association(st, comment.author),
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "pull_request": {"href": pull_url},
        },
        "start_line": None,
        "original_start_line": None,
        "start_side": None,
        "line": comment.line,
        "original_line": comment.line,
        "side": comment.side,
        "subject_type": "line" if comment.line is not None else "file",
    }
    if comment.in_reply_to is not None:
        out["in_reply_to_id"] = comment.in_reply_to
    return out


def check_run_json(st: State, run: CheckRunRec, urls: Urls) -> Json:
    url = f"{urls.repo}/check-runs/{run.id}"
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("CR", run.id),
        "head_sha": run.head_sha,
        "external_id": run.external_id or "",
        "url": url,
        "html_url": f"{urls.repo_web}/runs/{run.id}",
        "details_url": run.details_url or f"{urls.repo_web}/runs/{run.id}",
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": ts(run.started_at),
        "completed_at": ts(run.completed_at),
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": run.text,
            "annotations_count": 0,
            "annotations_url": f"{url}/annotations",
        },
        "check_suite": {"id": run.id},
        "app": None,
        "pull_requests": [],
    }


def status_json(st: State, status: StatusRec, urls: Urls, *, simple: bool = False) -> Json:
    """A commit status; `simple` drops `creator` for the combined-status list."""
    out: Json = {
        "url": f"{urls.repo}/statuses/{status.sha}",
        "avatar_url": None,
        "id": status.id,
        "node_id": node_id("SC", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": ts(status.created_at),
        "updated_at": ts(status.created_at),
    }
    if not simple:
        out["creator"] = simple_user_json(st.user(status.creator), urls)
    return out
