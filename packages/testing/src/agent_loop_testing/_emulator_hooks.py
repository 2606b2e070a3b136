"""GitHub's webhook payloads for the emulator's state changes, emitted where they happen.

The state operations (`_emulator_ops_issues`, `_emulator_ops_pulls`) call these at the
moment of the change, under the state lock, so the payload shows the state right after
it, as GitHub's does, whether the change came through the REST API or a seeding helper.
With no webhook registered nothing is rendered. Shapes follow GitHub's webhook schema
(checked against githubkit's webhook models in the tests): the REST object plus the
`repository` and the `sender` (who acted).
"""

from __future__ import annotations

from typing import Any

from agent_loop_testing._emulator_render import (
    Json,
    Urls,
    comment_json,
    full_label_json,
    issue_json,
    label_json,
    repository_json,
    simple_user_json,
)
from agent_loop_testing._emulator_state import (
    CheckRunRec,
    CommentRec,
    IssueRec,
    ReviewCommentRec,
    ReviewRec,
    State,
    StatusRec,
)

__all__ = [
    "check_run",
    "issue_comment",
    "issues",
    "pull_request",
    "review",
    "review_comment",
    "status",
]

_REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def _emit(st: State, event: str, build: Any) -> None:
    sink = st.hook_sink
    if sink is None or not sink.wants(event):
        return
    sink.emit(event, Urls(sink.base_url, sink.web_url, st.owner, st.name), build)


def _envelope(st: State, urls: Urls, actor: str, action: str | None, **fields: Any) -> Json:
    out: Json = {} if action is None else {"action": action}
    out.update(fields)
    out["repository"] = repository_json(st, urls)
    out["sender"] = simple_user_json(st.user(actor), urls)
    return out


def _rollup(st: State, url: str, comment_id: int | None = None) -> Json:
    counts: dict[str, int] = dict.fromkeys(_REACTIONS, 0)
    if comment_id is not None:
        for reaction in st.reactions.values():
            if reaction.comment == comment_id:
                counts[reaction.content] += 1
    return {"url": f"{url}/reactions", "total_count": sum(counts.values()), **counts}


def _issue(st: State, issue: IssueRec, urls: Urls, *, archived_labels: bool = False) -> Json:
    """The REST issue as webhooks carry it: reactions and `assignee`, no `closed_by`.

    GitHub's schema gives labels the `archived_*` fields in `issues.labeled` only.
    """
    body = issue_json(st, issue, urls)
    del body["closed_by"]
    if archived_labels:
        body["labels"] = [full_label_json(st.label(name), urls) for name in issue.labels]
    assignees: list[Json] = body["assignees"]
    body["assignee"] = assignees[0] if assignees else None
    body["reactions"] = _rollup(st, body["url"])
    return body


def _pull_short(st: State, issue: IssueRec, urls: Urls) -> Json:
    """The pull request as review events carry it (the listing shape plus `assignee`)."""
    from agent_loop_testing._emulator_render_pulls import pull_simple_json

    body = pull_simple_json(st, issue, urls)
    body["labels"] = [label_json(st.label(name), urls) for name in issue.labels]
    assignees: list[Json] = body["assignees"]
    body["assignee"] = assignees[0] if assignees else None
    return body


def issues(st: State, issue: IssueRec, action: str, actor: str, **extra: Any) -> None:
    """`issues` (`opened`, `labeled`, `assigned`, `closed`, ...); `label=`/`assignee=` login."""

    def build(urls: Urls) -> Json:
        fields: Json = {"issue": _issue(st, issue, urls, archived_labels=action == "labeled")}
        if "label" in extra:
            fields["label"] = full_label_json(st.label(extra["label"]), urls)
        if "assignee" in extra:
            fields["assignee"] = simple_user_json(st.user(extra["assignee"]), urls)
        return _envelope(st, urls, actor, action, **fields)

    _emit(st, "issues", build)


def issue_comment(
    st: State, comment: CommentRec, action: str, actor: str, *, old_body: str | None = None
) -> None:
    """`issue_comment` on an issue or a pull request's conversation."""

    def build(urls: Urls) -> Json:
        body = comment_json(st, comment, urls)
        body["reactions"] = _rollup(st, body["url"], comment.id)
        fields: Json = {"issue": _issue(st, st.issues[comment.issue], urls), "comment": body}
        if old_body is not None:
            fields["changes"] = {"body": {"from": old_body}}
        return _envelope(st, urls, actor, action, **fields)

    _emit(st, "issue_comment", build)


def pull_request(st: State, issue: IssueRec, action: str, actor: str, **extra: Any) -> None:
    """`pull_request` (`opened`, `closed` with `merged`, `labeled`, ...)."""
    from agent_loop_testing._emulator_render_pulls import pull_json

    def build(urls: Urls) -> Json:
        body = pull_json(st, issue, urls)
        fields: Json = {"number": issue.number, "pull_request": body}
        if "label" in extra:
            # GitHub's schema for `labeled` wants the full label and `assignee` here.
            fields["label"] = full_label_json(st.label(extra["label"]), urls)
            body["labels"] = [full_label_json(st.label(name), urls) for name in issue.labels]
            assignees: list[Json] = body["assignees"]
            body["assignee"] = assignees[0] if assignees else None
        return _envelope(st, urls, actor, action, **fields)

    _emit(st, "pull_request", build)


def review(st: State, rec: ReviewRec, actor: str) -> None:
    """`pull_request_review.submitted`."""
    from agent_loop_testing._emulator_render_pulls import review_json

    def build(urls: Urls) -> Json:
        return _envelope(
            st,
            urls,
            actor,
            "submitted",
            review=review_json(st, rec, urls),
            pull_request=_pull_short(st, st.issues[rec.pull], urls),
        )

    _emit(st, "pull_request_review", build)


def review_comment(st: State, rec: ReviewCommentRec, actor: str) -> None:
    """`pull_request_review_comment.created`."""
    from agent_loop_testing._emulator_render_pulls import review_comment_json

    def build(urls: Urls) -> Json:
        body = review_comment_json(st, rec, urls)
        body["reactions"] = _rollup(st, body["url"])
        body["position"] = body["original_position"] = rec.line
        return _envelope(
            st,
            urls,
            actor,
            "created",
            comment=body,
            pull_request=_pull_short(st, st.issues[rec.pull], urls),
        )

    _emit(st, "pull_request_review_comment", build)


def _pulls_at(st: State, sha: str, urls: Urls) -> list[Json]:
    """The open pull requests whose head is `sha`, in the short form check runs carry."""
    from agent_loop_testing._emulator_ops_pulls import base_sha, head_sha

    found: list[Json] = []
    repo = {"id": st.repo_id, "url": urls.repo, "name": st.name}
    for issue in sorted(st.issues.values(), key=lambda i: i.number):
        pull = issue.pull
        if pull is None or issue.state != "open" or head_sha(st, pull) != sha:
            continue
        found.append(
            {
                "url": f"{urls.repo}/pulls/{issue.number}",
                "id": issue.id,
                "number": issue.number,
                "head": {"ref": pull.head_ref, "sha": sha, "repo": repo},
                "base": {"ref": pull.base_ref, "sha": base_sha(st, pull), "repo": repo},
            }
        )
    return found


def check_run(st: State, run: CheckRunRec, action: str, actor: str) -> None:
    """`check_run` (`created`, `completed`), with the open PRs at its head."""
    from agent_loop_testing._emulator_render_pulls import check_run_json

    def build(urls: Urls) -> Json:
        body = check_run_json(st, run, urls)
        body["pull_requests"] = _pulls_at(st, run.head_sha, urls)
        return _envelope(st, urls, actor, action, check_run=body)

    _emit(st, "check_run", build)


def status(st: State, rec: StatusRec) -> None:
    """`status`: a commit status was set (no `action`), with the branches at that commit."""
    from agent_loop_testing._emulator_routes_git import commit_json

    def build(urls: Urls) -> Json:
        git = commit_json(st, rec.sha, urls)
        commit = {
            "sha": rec.sha,
            "node_id": git["node_id"],
            "commit": {
                "author": git["author"],
                "committer": git["committer"],
                "message": git["message"],
                "tree": git["tree"],
                "url": git["url"],
                "comment_count": 0,
                "verification": git["verification"],
            },
            "url": f"{urls.repo}/commits/{rec.sha}",
            "html_url": git["html_url"],
            "comments_url": f"{urls.repo}/commits/{rec.sha}/comments",
            "author": None,
            "committer": None,
            "parents": git["parents"],
        }
        branches = [
            {
                "name": ref.removeprefix("refs/heads/"),
                "commit": {"sha": sha, "url": f"{urls.repo}/commits/{sha}"},
                "protected": False,
            }
            for ref, sha in sorted(st.git.refs.items())
            if ref.startswith("refs/heads/") and sha == rec.sha
        ]
        return _envelope(
            st,
            urls,
            rec.creator,
            None,
            id=rec.id,
            sha=rec.sha,
            name=st.full_name,
            target_url=rec.target_url,
            context=rec.context,
            description=rec.description,
            state=rec.state,
            commit=commit,
            branches=branches,
            created_at=rec.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            updated_at=rec.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        )

    _emit(st, "status", build)
