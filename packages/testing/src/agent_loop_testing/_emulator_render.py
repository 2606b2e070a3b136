"""JSON bodies for users, the repository, issues, comments, labels and issue events.

Each function returns exactly the keys GitHub's OpenAPI schema declares for that object
(checked by the tests against githubkit's models in strict mode), with URLs rooted at
the address the request came in on, so a client can follow them back to the emulator.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote

from agent_loop_testing._emulator_state import (
    CommentRec,
    EventRec,
    IssueRec,
    LabelRec,
    State,
    UserRec,
)

__all__ = [
    "Json",
    "Urls",
    "author_association",
    "comment_json",
    "event_json",
    "full_repository_json",
    "issue_json",
    "label_json",
    "node_id",
    "private_user_json",
    "public_user_json",
    "repository_json",
    "simple_user_json",
    "ts",
]

Json = dict[str, Any]


def ts(value: datetime | None) -> str | None:
    """GitHub's timestamp form: UTC, seconds, `Z` suffix."""
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else None


def node_id(kind: str, ident: int | str) -> str:
    """A stable opaque GraphQL-style node id."""
    return f"{kind}_" + base64.b64encode(f"{kind}:{ident}".encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Urls:
    """Where the client reached us: API root (with `/api/v3` on GHES paths) and web root."""

    api: str
    web: str
    owner: str
    name: str

    @property
    def repo(self) -> str:
        return f"{self.api}/repos/{self.owner}/{self.name}"

    @property
    def repo_web(self) -> str:
        return f"{self.web}/{self.owner}/{self.name}"


def author_association(st: State, login: str) -> str:
    if login == st.owner:
        return "OWNER"
    user = st.users.get(login)
    return "COLLABORATOR" if user is not None and user.permission != "none" else "NONE"


def simple_user_json(user: UserRec, urls: Urls) -> Json:
    base = f"{urls.api}/users/{quote(user.login)}"
    slug = user.login.removesuffix("[bot]")
    return {
        "login": user.login,
        "id": user.id,
        "node_id": node_id("U" if user.type == "User" else "BOT", user.id),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{user.id}?v=4",
        "gravatar_id": "",
        "url": base,
        "html_url": f"{urls.web}/apps/{slug}" if user.type == "Bot" else f"{urls.web}/{user.login}",
        "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}",
        "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs",
        "repos_url": f"{base}/repos",
        "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events",
        "type": user.type,
        "user_view_type": "public",
        "site_admin": False,
    }


def public_user_json(user: UserRec, urls: Urls) -> Json:
    return {
        **simple_user_json(user, urls),
        "name": user.name,
        "company": None,
        "blog": "",
        "location": None,
        "email": None,
        "hireable": None,
        "bio": None,
        "twitter_username": None,
        "public_repos": 0,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": ts(user.created_at),
        "updated_at": ts(user.created_at),
    }


def private_user_json(user: UserRec, urls: Urls) -> Json:
    return {
        **public_user_json(user, urls),
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": True,
    }


def _repo_urls(urls: Urls) -> Json:
    r = urls.repo
    host = urls.web.split("://", 1)[-1]
    templated = {
        "archive_url": "/{archive_format}{/ref}",
        "assignees_url": "/assignees{/user}",
        "blobs_url": "/git/blobs{/sha}",
        "branches_url": "/branches{/branch}",
        "collaborators_url": "/collaborators{/collaborator}",
        "comments_url": "/comments{/number}",
        "commits_url": "/commits{/sha}",
        "compare_url": "/compare/{base}...{head}",
        "contents_url": "/contents/{+path}",
        "contributors_url": "/contributors",
        "deployments_url": "/deployments",
        "downloads_url": "/downloads",
        "events_url": "/events",
        "forks_url": "/forks",
        "git_commits_url": "/git/commits{/sha}",
        "git_refs_url": "/git/refs{/sha}",
        "git_tags_url": "/git/tags{/sha}",
        "hooks_url": "/hooks",
        "issue_comment_url": "/issues/comments{/number}",
        "issue_events_url": "/issues/events{/number}",
        "issues_url": "/issues{/number}",
        "keys_url": "/keys{/key_id}",
        "labels_url": "/labels{/name}",
        "languages_url": "/languages",
        "merges_url": "/merges",
        "milestones_url": "/milestones{/number}",
        "notifications_url": "/notifications{?since,all,participating}",
        "pulls_url": "/pulls{/number}",
        "releases_url": "/releases{/id}",
        "stargazers_url": "/stargazers",
        "statuses_url": "/statuses/{sha}",
        "subscribers_url": "/subscribers",
        "subscription_url": "/subscription",
        "tags_url": "/tags",
        "teams_url": "/teams",
        "trees_url": "/git/trees{/sha}",
    }
    out: Json = {key: r + suffix for key, suffix in templated.items()}
    out.update(
        git_url=f"git://{host}/{urls.owner}/{urls.name}.git",
        ssh_url=f"git@{host}:{urls.owner}/{urls.name}.git",
        clone_url=f"{urls.repo_web}.git",
        svn_url=urls.repo_web,
    )
    return out


def repository_json(st: State, urls: Urls) -> Json:
    """The `Repository` object embedded in pull requests (head/base)."""
    open_issues = sum(1 for i in st.issues.values() if i.state == "open")
    return {
        "id": st.repo_id,
        "node_id": node_id("R", st.repo_id),
        "name": st.name,
        "full_name": st.full_name,
        "private": st.private,
        "owner": simple_user_json(st.user(st.owner), urls),
        "html_url": urls.repo_web,
        "description": None,
        "fork": False,
        "url": urls.repo,
        **_repo_urls(urls),
        "mirror_url": None,
        "homepage": None,
        "language": None,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "size": 0,
        "default_branch": st.default_branch,
        "open_issues_count": open_issues,
        "is_template": False,
        "topics": [],
        "has_issues": True,
        "has_projects": False,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "archived": False,
        "disabled": False,
        "visibility": "private" if st.private else "public",
        "pushed_at": ts(st.now),
        "created_at": ts(st.created_at),
        "updated_at": ts(st.now),
        "allow_forking": True,
        "web_commit_signoff_required": False,
        "license": None,
        "forks": 0,
        "open_issues": open_issues,
        "watchers": 0,
    }


def full_repository_json(st: State, urls: Urls, viewer: UserRec | None) -> Json:
    """`GET /repos/{o}/{r}`, with `permissions` for the caller like GitHub sends."""
    out = repository_json(st, urls)
    if viewer is not None:
        out["permissions"] = {
            "admin": viewer.can("admin"),
            "maintain": viewer.can("maintain"),
            "push": viewer.can("write"),
            "triage": viewer.can("triage"),
            "pull": viewer.can("read"),
        }
    out.update(
        allow_squash_merge=True,
        allow_merge_commit=True,
        allow_rebase_merge=True,
        allow_auto_merge=False,
        delete_branch_on_merge=False,
        allow_update_branch=False,
        subscribers_count=0,
        network_count=0,
    )
    return out


def label_json(label: LabelRec, urls: Urls) -> Json:
    return {
        "id": label.id,
        "node_id": node_id("LA", label.id),
        "url": f"{urls.repo}/labels/{quote(label.name)}",
        "name": label.name,
        "description": label.description,
        "color": label.color,
        "default": False,
    }


def full_label_json(label: LabelRec, urls: Urls) -> Json:
    """The standalone `Label` schema (label endpoints) also declares archive fields."""
    return {**label_json(label, urls), "archived_at": None, "archived_by": None}


def issue_json(st: State, issue: IssueRec, urls: Urls) -> Json:
    url = f"{urls.repo}/issues/{issue.number}"
    kind = "pull" if issue.pull else "issues"
    out: Json = {
        "url": url,
        "repository_url": urls.repo,
        "labels_url": f"{url}/labels{{/name}}",
        "comments_url": f"{url}/comments",
        "events_url": f"{url}/events",
        "html_url": f"{urls.repo_web}/{kind}/{issue.number}",
        "id": issue.id,
        "node_id": node_id("PR" if issue.pull else "I", issue.id),
        "number": issue.number,
        "title": issue.title,
        "user": simple_user_json(st.user(issue.author), urls),
        "labels": [label_json(st.label(name), urls) for name in issue.labels],
        "state": issue.state,
        "locked": False,
        "assignees": [simple_user_json(st.user(login), urls) for login in issue.assignees],
        "milestone": None,
        "comments": sum(1 for c in st.comments.values() if c.issue == issue.number),
        "created_at": ts(issue.created_at),
        "updated_at": ts(issue.updated_at),
        "closed_at": ts(issue.closed_at),
        "author_association": author_association(st, issue.author),
        "active_lock_reason": None,
        "body": issue.body,
        "closed_by": simple_user_json(st.user(issue.closed_by), urls) if issue.closed_by else None,
        "timeline_url": f"{url}/timeline",
        "performed_via_github_app": None,
        "state_reason": issue.state_reason,
    }
    if issue.pull is not None:
        pull_url = f"{urls.repo}/pulls/{issue.number}"
        web = f"{urls.repo_web}/pull/{issue.number}"
        out["draft"] = issue.pull.draft
        out["pull_request"] = {
            "url": pull_url,
            "html_url": web,
            "diff_url": f"{web}.diff",
            "patch_url": f"{web}.patch",
            "merged_at": ts(issue.pull.merged_at),
        }
    return out


def comment_json(st: State, comment: CommentRec, urls: Urls) -> Json:
    kind = "pull" if st.issues[comment.issue].pull else "issues"
    return {
        "url": f"{urls.repo}/issues/comments/{comment.id}",
        "html_url": f"{urls.repo_web}/{kind}/{comment.issue}#issuecomment-{comment.id}",
        "issue_url": f"{urls.repo}/issues/{comment.issue}",
        "id": comment.id,
        "node_id": node_id("IC", comment.id),
        "user": simple_user_json(st.user(comment.author), urls),
        "created_at": ts(comment.created_at),
        "updated_at": ts(comment.updated_at),
        "author_association": author_association(st, comment.author),
        "body": comment.body,
        "performed_via_github_app": None,
    }


def event_json(st: State, event: EventRec, urls: Urls) -> Json:
    """An issue event as `GET /issues/{n}/events` and the timeline list it."""
    out: Json = {
        "id": event.id,
        "node_id": node_id("E", event.id),
        "url": f"{urls.repo}/issues/events/{event.id}",
        "actor": simple_user_json(st.user(event.actor), urls),
        "event": event.event,
        "commit_id": event.commit_id,
        "commit_url": f"{urls.repo}/commits/{event.commit_id}" if event.commit_id else None,
        "created_at": ts(event.created_at),
        "performed_via_github_app": None,
    }
    if event.label is not None:
        out["label"] = {"name": event.label, "color": st.label(event.label).color}
    if event.rename is not None:
        out["rename"] = {"from": event.rename[0], "to": event.rename[1]}
    return out


def timeline_comment_json(st: State, comment: CommentRec, urls: Urls) -> Json:
    """A comment as the timeline shows it (`event: commented`, actor = author)."""
    body = comment_json(st, comment, urls)
    return {"event": "commented", "actor": body["user"], **body}
