"""Pull requests: list, create, get (JSON or diff), update, merge, files, reviews, comments.

The `head` filter of the list takes `owner:branch` as on GitHub; a bare branch name is
ignored there (all PRs come back), and the emulator does the same so that mistake shows
up in tests rather than in production.
"""

from __future__ import annotations

from typing import cast

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_gitdiff import unified_diff
from agent_loop_testing._emulator_http import Ctx, Reply, Route, page_reply, string
from agent_loop_testing._emulator_ops_issues import edit_issue_text, set_state
from agent_loop_testing._emulator_ops_pulls import (
    add_review,
    add_review_comment,
    associated_pulls,
    edit_review_comment,
    get_pull,
    get_review_comment,
    head_sha,
    merge_base_tree,
    merge_pull,
    open_pull,
    pull_files,
)
from agent_loop_testing._emulator_render import Json
from agent_loop_testing._emulator_render_pulls import (
    diff_entry_json,
    pull_json,
    pull_simple_json,
    review_comment_json,
    review_json,
)
from agent_loop_testing._emulator_routes_issues import parse_since
from agent_loop_testing._emulator_state import IssueRec, State

__all__ = ["ROUTES"]

_DOCS = "https://docs.github.com/rest/pulls"
_EVENTS = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED", "COMMENT": "COMMENTED"}


def list_pulls(st: State, ctx: Ctx) -> Reply:
    state = ctx.query.get("state", "open")
    head = ctx.query.get("head")
    base = ctx.query.get("base")
    found: list[IssueRec] = []
    for issue in st.issues.values():
        pull = issue.pull
        if pull is None or (state != "all" and issue.state != state):
            continue
        if head and ":" in head:
            owner, branch = head.split(":", 1)
            if owner.lower() != st.owner.lower() or pull.head_ref != branch:
                continue
        if base and pull.base_ref != base:
            continue
        found.append(issue)
    if ctx.query.get("sort") in ("updated", "popularity", "long-running"):
        found.sort(key=lambda i: (i.updated_at, i.number))
    else:
        found.sort(key=lambda i: i.number)
    if ctx.query.get("direction", "desc") != "asc":
        found.reverse()
    return page_reply(ctx, [pull_simple_json(st, i, ctx.urls) for i in found])


def create(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("write")
    body = ctx.json()
    issue = open_pull(
        st,
        title=string(body, "title") or "",
        body=string(body, "body", required=False),
        head=string(body, "head") or "",
        base=string(body, "base") or "",
        author=user.login,
        draft=body.get("draft") is True,
    )
    return Reply(
        201,
        pull_json(st, issue, ctx.urls),
        headers={"Location": f"{ctx.urls.repo}/pulls/{issue.number}"},
    )


def get_one(st: State, ctx: Ctx) -> Reply:
    issue, pull = get_pull(st, ctx.int_param("number"))
    if ctx.accepts("application/vnd.github.diff") or ctx.accepts("application/vnd.github.v3.diff"):
        text = unified_diff(
            st.git, merge_base_tree(st, pull), st.git.commit_tree(head_sha(st, pull))
        )
        return Reply(
            200, raw=text.encode(), content_type="application/vnd.github.diff; charset=utf-8"
        )
    return Reply(200, pull_json(st, issue, ctx.urls))


def update(st: State, ctx: Ctx) -> Reply:
    """Authors edit their own PRs; triage closes and reopens any; a new title, body or
    base for someone else's PR needs write."""
    issue, pull = get_pull(st, ctx.int_param("number"))
    user = ctx.caller()
    if user.login != issue.author:
        ctx.require("triage")
    body = ctx.json()
    title = string(body, "title", required=False)
    text = string(body, "body", required=False)
    base = string(body, "base", required=False)
    if user.login != issue.author and (title, text, base) != (None, None, None):
        ctx.require("write")
    edit_issue_text(st, issue, user.login, title=title, body=text)
    if base is not None:
        if f"refs/heads/{base}" not in st.git.refs:
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "PullRequest", "field": "base", "code": "invalid"}],
            )
        pull.base_ref = base
    state = string(body, "state", required=False)
    if state is not None:
        set_state(st, issue, state, user.login)
    return Reply(200, pull_json(st, issue, ctx.urls))


def merge(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("write")
    body = ctx.json()
    sha = merge_pull(
        st,
        ctx.int_param("number"),
        user.login,
        method=string(body, "merge_method", required=False) or "merge",
        expected_sha=string(body, "sha", required=False),
        title=string(body, "commit_title", required=False),
        message=string(body, "commit_message", required=False),
    )
    return Reply(200, {"sha": sha, "merged": True, "message": "Pull Request successfully merged"})


def files(st: State, ctx: Ctx) -> Reply:
    _, pull = get_pull(st, ctx.int_param("number"))
    head = head_sha(st, pull)
    return page_reply(ctx, [diff_entry_json(f, ctx.urls, head) for f in pull_files(st, pull)])


def list_reviews(st: State, ctx: Ctx) -> Reply:
    number = get_pull(st, ctx.int_param("number"))[0].number
    found = sorted((r for r in st.reviews.values() if r.pull == number), key=lambda r: r.id)
    return page_reply(ctx, [review_json(st, r, ctx.urls) for r in found])


def get_review(st: State, ctx: Ctx) -> Reply:
    number = get_pull(st, ctx.int_param("number"))[0].number
    review = st.reviews.get(ctx.int_param("review_id"))
    if review is None or review.pull != number:
        raise ApiError(404, "Not Found")
    return Reply(200, review_json(st, review, ctx.urls))


def post_review(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    body = ctx.json()
    event = string(body, "event", required=False)
    if event is not None and event not in _EVENTS:
        raise ApiError(
            422,
            "Unprocessable Entity",
            errors=[{"resource": "PullRequestReview", "field": "event", "code": "invalid"}],
        )
    comments: list[tuple[str, int, str]] = []
    raw = body.get("comments", [])
    for item in cast("list[object]", raw if isinstance(raw, list) else []):
        entry = cast("Json", item) if isinstance(item, dict) else {}
        line = entry.get("line")
        comments.append(
            (
                string(entry, "path") or "",
                line if isinstance(line, int) else 0,
                string(entry, "body") or "",
            )
        )
    review = add_review(
        st,
        ctx.int_param("number"),
        author=user.login,
        state=_EVENTS[event] if event else "PENDING",
        body=string(body, "body", required=False) or "",
        comments=comments,
        commit_id=string(body, "commit_id", required=False),
    )
    return Reply(200, review_json(st, review, ctx.urls))


def list_comments(st: State, ctx: Ctx) -> Reply:
    number = get_pull(st, ctx.int_param("number"))[0].number
    since = parse_since(ctx)
    found = sorted(
        (
            c
            for c in st.review_comments.values()
            if c.pull == number and (since is None or c.updated_at >= since)
        ),
        key=lambda c: c.id,
    )
    return page_reply(ctx, [review_comment_json(st, c, ctx.urls) for c in found])


def post_comment(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    body = ctx.json()
    reply_to = body.get("in_reply_to")
    line = body.get("line")
    comment = add_review_comment(
        st,
        ctx.int_param("number"),
        author=user.login,
        body=string(body, "body") or "",
        path=string(body, "path", required=reply_to is None),
        line=line if isinstance(line, int) else None,
        side=string(body, "side", required=False) or "RIGHT",
        commit_id=string(body, "commit_id", required=False),
        in_reply_to=reply_to if isinstance(reply_to, int) else None,
    )
    return Reply(201, review_comment_json(st, comment, ctx.urls))


def reply(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    comment = add_review_comment(
        st,
        ctx.int_param("number"),
        author=user.login,
        body=string(ctx.json(), "body") or "",
        in_reply_to=ctx.int_param("comment_id"),
    )
    return Reply(201, review_comment_json(st, comment, ctx.urls))


def get_one_comment(st: State, ctx: Ctx) -> Reply:
    comment = get_review_comment(st, ctx.int_param("comment_id"))
    return Reply(200, review_comment_json(st, comment, ctx.urls))


def patch_comment(st: State, ctx: Ctx) -> Reply:
    """Authors edit their own review comments; anyone else's needs write."""
    comment = get_review_comment(st, ctx.int_param("comment_id"))
    user = ctx.caller()
    if user.login != comment.author:
        ctx.require("write")
    edit_review_comment(st, comment.id, string(ctx.json(), "body") or "", user.login)
    return Reply(200, review_comment_json(st, comment, ctx.urls))


def commit_pulls(st: State, ctx: Ctx) -> Reply:
    """`GET /repos/{o}/{r}/commits/{sha}/pulls`: the merged pull request that brought a
    commit to the default branch, else the open ones carrying it."""
    sha = ctx.params["commit_sha"].lower()
    if st.git.commit(sha) is None:
        raise ApiError(422, f"No commit found for SHA: {ctx.params['commit_sha']}")
    found = associated_pulls(st, sha)
    return page_reply(ctx, [pull_simple_json(st, issue, ctx.urls) for issue in found])


_P = "/repos/{owner}/{repo}/pulls"
_N = f"{_P}/{{number}}"
ROUTES = [
    Route(
        "GET",
        "/repos/{owner}/{repo}/commits/{commit_sha}/pulls",
        commit_pulls,
        "https://docs.github.com/rest/commits/commits#list-pull-requests-associated-with-a-commit",
    ),
    Route(
        "GET",
        f"{_P}/comments/{{comment_id}}",
        get_one_comment,
        f"{_DOCS}/comments#get-a-review-comment-for-a-pull-request",
    ),
    Route(
        "PATCH",
        f"{_P}/comments/{{comment_id}}",
        patch_comment,
        f"{_DOCS}/comments#update-a-review-comment-for-a-pull-request",
    ),
    Route("GET", _P, list_pulls, f"{_DOCS}/pulls#list-pull-requests"),
    Route("POST", _P, create, f"{_DOCS}/pulls#create-a-pull-request"),
    Route("GET", _N, get_one, f"{_DOCS}/pulls#get-a-pull-request"),
    Route("PATCH", _N, update, f"{_DOCS}/pulls#update-a-pull-request"),
    Route("PUT", f"{_N}/merge", merge, f"{_DOCS}/pulls#merge-a-pull-request"),
    Route("GET", f"{_N}/files", files, f"{_DOCS}/pulls#list-pull-requests-files"),
    Route("GET", f"{_N}/reviews", list_reviews, f"{_DOCS}/reviews#list-reviews-for-a-pull-request"),
    Route(
        "POST", f"{_N}/reviews", post_review, f"{_DOCS}/reviews#create-a-review-for-a-pull-request"
    ),
    Route(
        "GET",
        f"{_N}/reviews/{{review_id}}",
        get_review,
        f"{_DOCS}/reviews#get-a-review-for-a-pull-request",
    ),
    Route(
        "GET",
        f"{_N}/comments",
        list_comments,
        f"{_DOCS}/comments#list-review-comments-on-a-pull-request",
    ),
    Route(
        "POST",
        f"{_N}/comments",
        post_comment,
        f"{_DOCS}/comments#create-a-review-comment-for-a-pull-request",
    ),
    Route(
        "POST",
        f"{_N}/comments/{{comment_id}}/replies",
        reply,
        f"{_DOCS}/comments#create-a-reply-for-a-review-comment",
    ),
]
