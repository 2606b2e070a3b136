"""Issues, issue comments, labels, issue events and the timeline.

As on GitHub, the issues list includes pull requests (each with a `pull_request` key),
filters by `state`, `labels` (all must match), `since` (updated at or after) and
`creator`, and sorts by creation time, newest first, unless asked otherwise.
"""

from __future__ import annotations

import json
from datetime import datetime

from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_http import (
    Ctx,
    Reply,
    Route,
    page_reply,
    string,
    strings,
)
from agent_loop_testing._emulator_ops_issues import (
    add_labels,
    create_comment,
    create_issue,
    edit_comment,
    get_comment,
    get_issue,
    remove_label,
    set_labels,
    update_issue,
)
from agent_loop_testing._emulator_render import (
    Json,
    comment_json,
    event_json,
    full_label_json,
    issue_json,
    timeline_comment_json,
)
from agent_loop_testing._emulator_state import IssueRec, State

__all__ = ["ROUTES", "parse_since"]

_DOCS = "https://docs.github.com/rest/issues"


def parse_since(ctx: Ctx) -> datetime | None:
    raw = ctx.query.get("since")
    if not raw:
        return None
    try:
        value = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Issue", "field": "since", "code": "invalid", "value": raw}],
        ) from None
    if value.tzinfo is None:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Issue", "field": "since", "code": "invalid", "value": raw}],
        )
    return value


def _may_rewrite(ctx: Ctx, author: str) -> str:
    """Authors edit their own text; rewriting someone else's needs write (triage is not
    enough: it labels, closes and reopens, it does not put words in other mouths)."""
    login = ctx.caller().login
    if login != author:
        ctx.require("write")
    return login


def list_issues(st: State, ctx: Ctx) -> Reply:
    state = ctx.query.get("state", "open")
    wanted = [n.strip().lower() for n in ctx.query.get("labels", "").split(",") if n.strip()]
    since = parse_since(ctx)
    creator = ctx.query.get("creator")
    issues: list[IssueRec] = []
    for issue in st.issues.values():
        if state != "all" and issue.state != state:
            continue
        have = {n.lower() for n in issue.labels}
        if any(n not in have for n in wanted):
            continue
        if since is not None and issue.updated_at < since:
            continue
        if creator is not None and issue.author.lower() != creator.lower():
            continue
        issues.append(issue)
    sort = ctx.query.get("sort", "created")
    if sort == "updated":
        issues.sort(key=lambda i: (i.updated_at, i.number))
    elif sort == "comments":
        counts = {
            i.number: sum(1 for c in st.comments.values() if c.issue == i.number) for i in issues
        }
        issues.sort(key=lambda i: (counts[i.number], i.number))
    else:
        issues.sort(key=lambda i: i.number)
    if ctx.query.get("direction", "desc") != "asc":
        issues.reverse()
    return page_reply(ctx, [issue_json(st, i, ctx.urls) for i in issues])


def post_issue(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    body = ctx.json()
    title = string(body, "title") or ""
    labels = strings(body, "labels") or []
    if labels and not user.can("triage"):
        labels = []
    issue = create_issue(st, title, string(body, "body", required=False), user.login, labels)
    return Reply(
        201,
        issue_json(st, issue, ctx.urls),
        headers={"Location": f"{ctx.urls.repo}/issues/{issue.number}"},
    )


def get_one(st: State, ctx: Ctx) -> Reply:
    return Reply(200, issue_json(st, get_issue(st, ctx.int_param("number")), ctx.urls))


def patch_issue(st: State, ctx: Ctx) -> Reply:
    """Authors edit and close their own issues; triage closes, reopens and labels any;
    a new title or body for someone else's issue needs write. Labels from a caller
    without triage are dropped silently, as GitHub does."""
    issue = get_issue(st, ctx.int_param("number"))
    user = ctx.caller()
    if user.login != issue.author:
        ctx.require("triage")
    body = ctx.json()
    title = string(body, "title", required=False)
    text = string(body, "body", required=False)
    if title is not None or text is not None:
        _may_rewrite(ctx, issue.author)
    labels = strings(body, "labels")
    update_issue(
        st,
        issue.number,
        user.login,
        title=title,
        body=text,
        state=string(body, "state", required=False),
        state_reason=string(body, "state_reason", required=False),
        labels=labels if user.can("triage") else None,
    )
    return Reply(200, issue_json(st, issue, ctx.urls))


def list_comments(st: State, ctx: Ctx) -> Reply:
    number = get_issue(st, ctx.int_param("number")).number
    since = parse_since(ctx)
    found = [
        c
        for c in st.comments.values()
        if c.issue == number and (since is None or c.updated_at >= since)
    ]
    return page_reply(
        ctx, [comment_json(st, c, ctx.urls) for c in sorted(found, key=lambda c: c.id)]
    )


def post_comment(st: State, ctx: Ctx) -> Reply:
    user = ctx.caller()
    text = string(ctx.json(), "body") or ""
    comment = create_comment(st, ctx.int_param("number"), text, user.login)
    return Reply(
        201,
        comment_json(st, comment, ctx.urls),
        headers={"Location": f"{ctx.urls.repo}/issues/comments/{comment.id}"},
    )


def get_one_comment(st: State, ctx: Ctx) -> Reply:
    return Reply(200, comment_json(st, get_comment(st, ctx.int_param("comment_id")), ctx.urls))


def patch_comment(st: State, ctx: Ctx) -> Reply:
    comment = get_comment(st, ctx.int_param("comment_id"))
    editor = _may_rewrite(ctx, comment.author)
    edit_comment(st, comment.id, string(ctx.json(), "body") or "", editor)
    return Reply(200, comment_json(st, comment, ctx.urls))


def delete_comment(st: State, ctx: Ctx) -> Reply:
    comment = get_comment(st, ctx.int_param("comment_id"))
    _may_rewrite(ctx, comment.author)
    st.tick()
    del st.comments[comment.id]
    return Reply(204)


def _labels_of(st: State, ctx: Ctx, number: int) -> list[Json]:
    return [full_label_json(st.label(n), ctx.urls) for n in get_issue(st, number).labels]


def _label_body(ctx: Ctx) -> list[str]:
    """Labels to add: GitHub takes `{"labels": [...]}` or a bare JSON array."""
    try:
        raw: object = json.loads(ctx.body or b"{}")
    except ValueError:
        raise ApiError(400, "Problems parsing JSON") from None
    if isinstance(raw, list):
        return strings({"labels": raw}, "labels") or []
    return strings(ctx.json(), "labels") or []


def list_labels(st: State, ctx: Ctx) -> Reply:
    return page_reply(ctx, _labels_of(st, ctx, ctx.int_param("number")))


def post_labels(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("triage")
    number = ctx.int_param("number")
    add_labels(st, number, _label_body(ctx), user.login)
    return Reply(200, _labels_of(st, ctx, number))


def put_labels(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("triage")
    number = ctx.int_param("number")
    set_labels(st, number, _label_body(ctx), user.login)
    return Reply(200, _labels_of(st, ctx, number))


def delete_label(st: State, ctx: Ctx) -> Reply:
    user = ctx.require("triage")
    number = ctx.int_param("number")
    remove_label(st, number, ctx.params["name"], user.login)
    return Reply(200, _labels_of(st, ctx, number))


def list_events(st: State, ctx: Ctx) -> Reply:
    number = get_issue(st, ctx.int_param("number")).number
    found = [e for e in st.events if e.issue == number]
    return page_reply(ctx, [event_json(st, e, ctx.urls) for e in found])


def timeline(st: State, ctx: Ctx) -> Reply:
    """Events and comments of an issue in the order they happened."""
    number = get_issue(st, ctx.int_param("number")).number
    items: list[tuple[int, Json]] = [
        (e.id, event_json(st, e, ctx.urls)) for e in st.events if e.issue == number
    ]
    items += [
        (c.id, timeline_comment_json(st, c, ctx.urls))
        for c in st.comments.values()
        if c.issue == number
    ]
    return page_reply(ctx, [body for _, body in sorted(items, key=lambda pair: pair[0])])


def repo_labels(st: State, ctx: Ctx) -> Reply:
    found = sorted(st.labels.values(), key=lambda label: label.name.lower())
    return page_reply(ctx, [full_label_json(label, ctx.urls) for label in found])


def post_repo_label(st: State, ctx: Ctx) -> Reply:
    ctx.require("write")
    body = ctx.json()
    name = string(body, "name") or ""
    if any(existing.lower() == name.lower() for existing in st.labels):
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Label", "code": "already_exists", "field": "name"}],
        )
    st.tick()
    label = st.label(name)
    label.color = (string(body, "color", required=False) or label.color).lstrip("#")
    label.description = string(body, "description", required=False)
    return Reply(201, full_label_json(label, ctx.urls))


_R = "/repos/{owner}/{repo}"
_I = f"{_R}/issues/{{number}}"
ROUTES = [
    Route("GET", f"{_R}/issues", list_issues, f"{_DOCS}/issues#list-repository-issues"),
    Route("POST", f"{_R}/issues", post_issue, f"{_DOCS}/issues#create-an-issue"),
    Route(
        "GET",
        f"{_R}/issues/comments/{{comment_id}}",
        get_one_comment,
        f"{_DOCS}/comments#get-an-issue-comment",
    ),
    Route(
        "PATCH",
        f"{_R}/issues/comments/{{comment_id}}",
        patch_comment,
        f"{_DOCS}/comments#update-an-issue-comment",
    ),
    Route(
        "DELETE",
        f"{_R}/issues/comments/{{comment_id}}",
        delete_comment,
        f"{_DOCS}/comments#delete-an-issue-comment",
    ),
    Route("GET", _I, get_one, f"{_DOCS}/issues#get-an-issue"),
    Route("PATCH", _I, patch_issue, f"{_DOCS}/issues#update-an-issue"),
    Route("GET", f"{_I}/comments", list_comments, f"{_DOCS}/comments#list-issue-comments"),
    Route("POST", f"{_I}/comments", post_comment, f"{_DOCS}/comments#create-an-issue-comment"),
    Route("GET", f"{_I}/labels", list_labels, f"{_DOCS}/labels#list-labels-for-an-issue"),
    Route("POST", f"{_I}/labels", post_labels, f"{_DOCS}/labels#add-labels-to-an-issue"),
    Route("PUT", f"{_I}/labels", put_labels, f"{_DOCS}/labels#set-labels-for-an-issue"),
    Route(
        "DELETE",
        f"{_I}/labels/{{name}}",
        delete_label,
        f"{_DOCS}/labels#remove-a-label-from-an-issue",
    ),
    Route("GET", f"{_I}/events", list_events, f"{_DOCS}/events#list-issue-events"),
    Route("GET", f"{_I}/timeline", timeline, f"{_DOCS}/timeline#list-timeline-events-for-an-issue"),
    Route("GET", f"{_R}/labels", repo_labels, f"{_DOCS}/labels#list-labels-for-a-repository"),
    Route("POST", f"{_R}/labels", post_repo_label, f"{_DOCS}/labels#create-a-label"),
]
