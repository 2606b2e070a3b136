"""Issue, comment and label operations, shared by the REST routes and the seeding helpers.

Every write moves the clock one second and bumps the issue's `updated_at`, and label,
title and state changes leave the events GitHub records (`labeled`, `unlabeled`,
`renamed`, `closed`, `reopened`), because the agents decide trust from who applied a
label. A body edit is recorded with its editor and time, as GitHub's GraphQL API shows
them (`lastEditedAt`, `editor`): who last rewrote an issue matters as much as who wrote it.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent_loop_testing import _emulator_hooks as hooks
from agent_loop_testing._emulator_errors import ApiError
from agent_loop_testing._emulator_state import (
    CommentRec,
    EventRec,
    IssueRec,
    State,
    record_body_edit,
)

__all__ = [
    "add_labels",
    "assign",
    "create_comment",
    "create_issue",
    "edit_comment",
    "edit_issue_text",
    "get_comment",
    "get_issue",
    "record_event",
    "remove_label",
    "set_labels",
    "set_state",
    "update_issue",
]


def get_issue(st: State, number: int) -> IssueRec:
    if number not in st.issues:
        raise ApiError(404, "Not Found")
    return st.issues[number]


def get_comment(st: State, comment_id: int) -> CommentRec:
    if comment_id not in st.comments:
        raise ApiError(404, "Not Found")
    return st.comments[comment_id]


def record_event(
    st: State,
    issue: IssueRec,
    event: str,
    actor: str,
    *,
    label: str | None = None,
    commit_id: str | None = None,
    rename: tuple[str, str] | None = None,
) -> EventRec:
    rec = EventRec(st.new_id(), issue.number, event, actor, st.now, label, commit_id, rename)
    st.events.append(rec)
    return rec


def create_issue(
    st: State, title: str, body: str | None, author: str, labels: Iterable[str] = ()
) -> IssueRec:
    if not title.strip():
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Issue", "field": "title", "code": "missing_field"}],
        )
    st.user(author)
    now = st.tick()
    issue = IssueRec(st.next_number, st.new_id(), title, body, author, now, now)
    st.next_number += 1
    st.issues[issue.number] = issue
    added: list[str] = []
    for name in labels:
        if name not in issue.labels:
            issue.labels.append(st.label(name).name)
            added.append(st.label(name).name)
            record_event(st, issue, "labeled", author, label=name)
    hooks.issues(st, issue, "opened", author)
    for name in added:
        hooks.issues(st, issue, "labeled", author, label=name)
    return issue


def create_comment(st: State, number: int, body: str, author: str) -> CommentRec:
    issue = get_issue(st, number)
    if not body:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "IssueComment", "field": "body", "code": "missing_field"}],
        )
    st.user(author)
    now = st.tick()
    comment = CommentRec(st.new_id(), number, body, author, now, now)
    st.comments[comment.id] = comment
    issue.updated_at = now
    hooks.issue_comment(st, comment, "created", author)
    return comment


def edit_comment(st: State, comment_id: int, body: str, editor: str) -> CommentRec:
    """Replace a comment's body as `editor`; an actual change is recorded as an edit."""
    comment = get_comment(st, comment_id)
    st.user(editor)
    old = comment.body
    comment.updated_at = st.tick()
    if body != comment.body:
        record_body_edit(comment, editor, comment.updated_at, body)
    comment.body = body
    st.issues[comment.issue].updated_at = comment.updated_at
    hooks.issue_comment(st, comment, "edited", editor, old_body=old)
    return comment


def edit_issue_text(
    st: State, issue: IssueRec, actor: str, *, title: str | None, body: str | None
) -> None:
    """Change an issue's or PR's title and body as `actor`, as GitHub records it.

    A new title leaves a `renamed` event; a new body is an edit with its editor and
    time. Nothing given, nothing changed.
    """
    if title is None and body is None:
        return
    st.user(actor)
    now = st.tick()
    issue.updated_at = now
    if title is not None and title != issue.title:
        if not title.strip():
            raise ApiError(
                422,
                "Validation Failed",
                errors=[{"resource": "Issue", "field": "title", "code": "missing_field"}],
            )
        record_event(st, issue, "renamed", actor, rename=(issue.title, title))
        issue.title = title
    if body is not None and body != (issue.body or ""):
        record_body_edit(issue, actor, now, body)
    if body is not None:
        issue.body = body


def add_labels(st: State, number: int, labels: Iterable[str], actor: str) -> IssueRec:
    issue = get_issue(st, number)
    now = st.tick()
    for name in labels:
        label = st.label(name)
        if label.name not in issue.labels:
            issue.labels.append(label.name)
            record_event(st, issue, "labeled", actor, label=label.name)
            issue.updated_at = now
            if issue.pull is None:
                hooks.issues(st, issue, "labeled", actor, label=label.name)
            else:
                hooks.pull_request(st, issue, "labeled", actor, label=label.name)
    return issue


def assign(st: State, number: int, login: str, actor: str) -> IssueRec:
    """Assign `login` to the issue and record the `assigned` event (by `actor`)."""
    issue = get_issue(st, number)
    st.user(login)
    if login not in issue.assignees:
        issue.assignees.append(login)
        issue.updated_at = st.tick()
        record_event(st, issue, "assigned", actor)
        if issue.pull is None:
            hooks.issues(st, issue, "assigned", actor, assignee=login)
    return issue


def remove_label(st: State, number: int, name: str, actor: str) -> IssueRec:
    issue = get_issue(st, number)
    match = next((n for n in issue.labels if n.lower() == name.lower()), None)
    if match is None:
        raise ApiError(404, "Label does not exist")
    issue.labels.remove(match)
    issue.updated_at = st.tick()
    record_event(st, issue, "unlabeled", actor, label=match)
    return issue


def set_labels(st: State, number: int, labels: Iterable[str], actor: str) -> IssueRec:
    issue = get_issue(st, number)
    wanted = [st.label(name).name for name in labels]
    for name in [n for n in issue.labels if n not in wanted]:
        remove_label(st, number, name, actor)
    return add_labels(st, number, [n for n in wanted if n not in issue.labels], actor)


def set_state(
    st: State, issue: IssueRec, state: str, actor: str, reason: str | None = None
) -> None:
    if state not in ("open", "closed"):
        raise ApiError(
            422,
            "Validation Failed",
            errors=[{"resource": "Issue", "field": "state", "code": "invalid", "value": state}],
        )
    if state == issue.state:
        return
    if state == "open" and issue.pull is not None and issue.pull.merged_at is not None:
        raise ApiError(
            422,
            "Validation Failed",
            errors=[
                {
                    "resource": "PullRequest",
                    "code": "custom",
                    "message": "state cannot be changed. The pull request has been merged.",
                }
            ],
        )
    now = st.tick()
    issue.state = state
    issue.updated_at = now
    if state == "closed":
        issue.closed_at, issue.closed_by = now, actor
        issue.state_reason = reason or ("completed" if issue.pull is None else None)
        record_event(st, issue, "closed", actor)
    else:
        issue.closed_at, issue.closed_by = None, None
        issue.state_reason = "reopened" if issue.pull is None else None
        record_event(st, issue, "reopened", actor)
    action = "closed" if state == "closed" else "reopened"
    if issue.pull is None:
        hooks.issues(st, issue, action, actor)
    else:
        hooks.pull_request(st, issue, action, actor)


def update_issue(
    st: State,
    number: int,
    actor: str,
    *,
    title: str | None = None,
    body: str | None = None,
    state: str | None = None,
    state_reason: str | None = None,
    labels: list[str] | None = None,
) -> IssueRec:
    issue = get_issue(st, number)
    edit_issue_text(st, issue, actor, title=title, body=body)
    if labels is not None:
        set_labels(st, number, labels, actor)
    if state is not None:
        set_state(st, issue, state, actor, state_reason)
    return issue
